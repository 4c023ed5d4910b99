#pragma once
// Little helpers for binary state files (runtime/train/checkpoint.h): fixed-width
// integers and doubles as their raw bytes (bit-exact, native byte order: a
// checkpoint is read back by the same build on the same kind of machine), strings
// and arrays with a 64-bit length in front. Readers throw BinaryFormatError on a
// short read or an implausible length; the caller names the file.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <istream>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace lowband::binary {

struct BinaryFormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <typename T>
void write_pod(std::ostream& out, const T& value) {
  out.write(reinterpret_cast<const char*>(&value), sizeof(T));
}

template <typename T>
T read_pod(std::istream& in, const char* what) {
  T value{};
  in.read(reinterpret_cast<char*>(&value), sizeof(T));
  if (in.gcount() != std::streamsize(sizeof(T))) throw BinaryFormatError(std::string("ends inside ") + what);
  return value;
}

inline void write_u64(std::ostream& out, uint64_t x) { write_pod(out, x); }
inline void write_i64(std::ostream& out, int64_t x) { write_pod(out, x); }
inline void write_f64(std::ostream& out, double x) { write_pod(out, x); }
inline void write_bool(std::ostream& out, bool x) { write_pod(out, uint8_t(x ? 1 : 0)); }
inline uint64_t read_u64(std::istream& in, const char* what) { return read_pod<uint64_t>(in, what); }
inline int64_t read_i64(std::istream& in, const char* what) { return read_pod<int64_t>(in, what); }
inline double read_f64(std::istream& in, const char* what) { return read_pod<double>(in, what); }
inline bool read_bool(std::istream& in, const char* what) {
  const uint8_t b = read_pod<uint8_t>(in, what);
  if (b > 1) throw BinaryFormatError(std::string("bad flag in ") + what);
  return b == 1;
}

// Lengths above this many elements are taken as damage, not data (a few GiB).
constexpr uint64_t kMaxElements = uint64_t(1) << 32;

inline uint64_t read_length(std::istream& in, const char* what) {
  const uint64_t n = read_u64(in, what);
  if (n > kMaxElements) throw BinaryFormatError(std::string("implausible length in ") + what);
  return n;
}

template <typename T>
void write_array(std::ostream& out, const T* data, uint64_t count) {
  write_u64(out, count);
  out.write(reinterpret_cast<const char*>(data), std::streamsize(count * sizeof(T)));
}

template <typename T>
void write_vector(std::ostream& out, const std::vector<T>& v) {
  write_array(out, v.data(), v.size());
}

template <typename T>
std::vector<T> read_vector(std::istream& in, const char* what) {
  const uint64_t n = read_length(in, what);
  std::vector<T> v;
  // Grow as the bytes arrive, so a damaged length cannot allocate far past the file.
  constexpr uint64_t kChunk = uint64_t(1) << 20;
  for (uint64_t done = 0; done < n;) {
    const uint64_t take = std::min(kChunk, n - done);
    v.resize(size_t(done + take));
    in.read(reinterpret_cast<char*>(v.data() + done), std::streamsize(take * sizeof(T)));
    if (in.gcount() != std::streamsize(take * sizeof(T))) throw BinaryFormatError(std::string("ends inside ") + what);
    done += take;
  }
  return v;
}

// Reads exactly `count` elements into `data`: a different stored length is an error.
template <typename T>
void read_array_into(std::istream& in, T* data, uint64_t count, const char* what) {
  const uint64_t n = read_u64(in, what);
  if (n != count)
    throw BinaryFormatError(std::string(what) + ": holds " + std::to_string(n) + " values, expected " +
                            std::to_string(count));
  in.read(reinterpret_cast<char*>(data), std::streamsize(count * sizeof(T)));
  if (in.gcount() != std::streamsize(count * sizeof(T))) throw BinaryFormatError(std::string("ends inside ") + what);
}

inline void write_string(std::ostream& out, const std::string& s) { write_array(out, s.data(), s.size()); }
inline std::string read_string(std::istream& in, const char* what) {
  const std::vector<char> v = read_vector<char>(in, what);
  return std::string(v.begin(), v.end());
}

// 64-bit FNV-1a over 8-byte words (and the tail bytes): catches damage, not attacks.
inline uint64_t checksum64(const char* data, size_t size) {
  uint64_t h = 0xcbf29ce484222325ULL;
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t w;
    std::memcpy(&w, data + i, 8);
    h = (h ^ w) * 0x100000001b3ULL;
    h ^= h >> 29;
  }
  for (; i < size; ++i) h = (h ^ uint8_t(data[i])) * 0x100000001b3ULL;
  return h ^ size;
}

}  // namespace lowband::binary
