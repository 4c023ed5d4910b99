#include "runtime/compress/codec_message.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace lowband::compress {
namespace {

constexpr size_t kHeaderBytes = 4 * 8;

std::vector<uint8_t> pack_parts(const MessageLayout& l, const float* values, const int32_t* indices,
                                const uint8_t* codes, double wire_bytes) {
  std::vector<uint8_t> out(packed_bytes(l));
  uint8_t* p = out.data();
  const int64_t header[3] = {l.values, l.indices, l.codes};
  std::memcpy(p, header, sizeof header), p += sizeof header;
  std::memcpy(p, &wire_bytes, 8), p += 8;
  if (l.values) std::memcpy(p, values, size_t(l.values) * 4), p += l.values * 4;
  if (l.indices) std::memcpy(p, indices, size_t(l.indices) * 4), p += l.indices * 4;
  if (l.codes) std::memcpy(p, codes, size_t(l.codes));
  return out;
}

// The header's layout and wire bytes, after checking the buffer holds exactly them.
MessageLayout read_header(const void* data, size_t bytes, double& wire_bytes, const char* where) {
  if (bytes < kHeaderBytes)
    throw std::logic_error(std::string(where) + ": " + std::to_string(bytes) + " bytes, shorter than the header");
  int64_t header[3];
  std::memcpy(header, data, sizeof header);
  std::memcpy(&wire_bytes, static_cast<const uint8_t*>(data) + sizeof header, 8);
  const MessageLayout l{header[0], header[1], header[2]};
  if (l.values < 0 || l.indices < 0 || l.codes < 0 || packed_bytes(l) != bytes)
    throw std::logic_error(std::string(where) + ": " + std::to_string(bytes) + " bytes do not hold the " +
                           std::to_string(l.values) + " values, " + std::to_string(l.indices) + " indices and " +
                           std::to_string(l.codes) + " code bytes the header names");
  return l;
}

}  // namespace

void CodecGradient::add(const CodecGradient& other) {
  if (values.empty() && wire_bytes == 0) {
    *this = other;
    return;
  }
  if (values.size() != other.values.size())
    throw std::logic_error("CodecGradient::add: " + std::to_string(other.values.size()) + " values onto " +
                           std::to_string(values.size()));
  for (size_t i = 0; i < values.size(); ++i) values[i] += other.values[i];
}

void check_layout(const MessageLayout& got, const MessageLayout& want, const char* where) {
  if (!(got == want))
    throw std::logic_error(std::string(where) + ": a message of " + std::to_string(got.values) + " values, " +
                           std::to_string(got.indices) + " indices, " + std::to_string(got.codes) +
                           " code bytes where the codec expects " + std::to_string(want.values) + ", " +
                           std::to_string(want.indices) + ", " + std::to_string(want.codes));
}

void check_gradient(const CodecGradient& got, int64_t want, const char* where) {
  if (int64_t(got.values.size()) != want)
    throw std::logic_error(std::string(where) + ": a gradient of " + std::to_string(got.values.size()) +
                           " values where the codec expects " + std::to_string(want));
}

size_t packed_bytes(const MessageLayout& l) {
  return kHeaderBytes + size_t(l.values) * 4 + size_t(l.indices) * 4 + size_t(l.codes);
}

std::vector<uint8_t> pack(const CodecMessage& m) {
  return pack_parts(m.layout(), m.values.data(), m.indices.data(), m.codes.data(), m.wire_bytes);
}

void unpack(const void* data, size_t bytes, CodecMessage& out) {
  const MessageLayout l = read_header(data, bytes, out.wire_bytes, "unpack(CodecMessage)");
  const uint8_t* p = static_cast<const uint8_t*>(data) + kHeaderBytes;
  out.values.resize(size_t(l.values));
  out.indices.resize(size_t(l.indices));
  out.codes.resize(size_t(l.codes));
  if (l.values) std::memcpy(out.values.data(), p, size_t(l.values) * 4), p += l.values * 4;
  if (l.indices) std::memcpy(out.indices.data(), p, size_t(l.indices) * 4), p += l.indices * 4;
  if (l.codes) std::memcpy(out.codes.data(), p, size_t(l.codes));
}

size_t packed_gradient_bytes(int64_t values) { return packed_bytes({values, 0, 0}); }

std::vector<uint8_t> pack(const CodecGradient& g) {
  const int32_t no_index = 0;  // none are copied; non-null for memcpy's contract
  const uint8_t no_code = 0;
  return pack_parts({int64_t(g.values.size()), 0, 0}, g.values.data(), &no_index, &no_code, g.wire_bytes);
}

void unpack(const void* data, size_t bytes, CodecGradient& out) {
  const MessageLayout l = read_header(data, bytes, out.wire_bytes, "unpack(CodecGradient)");
  if (l.indices || l.codes) throw std::logic_error("unpack(CodecGradient): a message with indices or codes");
  out.values.resize(size_t(l.values));
  if (l.values) std::memcpy(out.values.data(), static_cast<const uint8_t*>(data) + kHeaderBytes, size_t(l.values) * 4);
}

}  // namespace lowband::compress
