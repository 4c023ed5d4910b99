#include "runtime/sync/pack.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "runtime/sync/bins.h"

namespace lowband::sync {
namespace {

int64_t stream_bytes(int64_t count, int bits) { return (count * bits + 7) / 8; }

// `bits` low bits of each value, least significant first, from bit 0 of out[0].
template <class T>
void write_bits(const std::vector<T>& values, int bits, uint8_t* out) {
  uint64_t pos = 0;
  for (T v : values)
    for (int b = 0; b < bits; ++b, ++pos)
      if ((uint64_t(v) >> b) & 1) out[pos / 8] |= uint8_t(1u << (pos % 8));
}

template <class T>
void read_bits(const uint8_t* in, int bits, std::vector<T>& values) {
  uint64_t pos = 0;
  for (T& v : values) {
    uint64_t x = 0;
    for (int b = 0; b < bits; ++b, ++pos) x |= uint64_t((in[pos / 8] >> (pos % 8)) & 1) << b;
    v = T(x);
  }
}

// K entries and one quantisation table per tensor (none for raw float32 values).
int64_t message_bytes(int64_t K, int tensors, int value_bits) {
  if (value_bits == 32) return stream_bytes(K, kIndexBits) + 4 * K;
  return 4 * int64_t(tensors) * (int64_t(1) << value_bits) + stream_bytes(K, kIndexBits) + stream_bytes(K, value_bits);
}

}  // namespace

int64_t packed_bytes(const ChunkPlan& plan, const SparseCodec& codec) {
  return message_bytes(plan.kept(codec.topk), plan.tensors, codec.value_bits);
}

int64_t packed_bytes(const std::vector<model::TensorInfo>& tensors, int64_t chunk, const SparseCodec& codec) {
  return message_bytes(kept_entries(tensors, chunk, codec.topk), int(tensors.size()), codec.value_bits);
}

std::vector<uint8_t> pack(const ChunkPlan& plan, const SparseCodec& codec, const SparseMessage& m) {
  const int64_t K = plan.kept(codec.topk);
  const bool raw = codec.value_bits == 32;
  const size_t table_floats = raw ? 0 : size_t(plan.tensors) << codec.value_bits;
  if (int64_t(m.index.size()) != K || int64_t(raw ? m.value.size() : m.code.size()) != K ||
      m.table.size() != table_floats)
    throw std::invalid_argument("a SparseLoCo message of " + std::to_string(m.index.size()) +
                                " entries does not match its plan (" + std::to_string(K) + ")");
  std::vector<uint8_t> out(size_t(packed_bytes(plan, codec)), 0);
  uint8_t* at = out.data();
  if (table_floats) std::memcpy(at, m.table.data(), table_floats * sizeof(float));  // data() may be null
  at += table_floats * sizeof(float);
  write_bits(m.index, kIndexBits, at);
  at += stream_bytes(K, kIndexBits);
  if (raw && !m.value.empty()) std::memcpy(at, m.value.data(), m.value.size() * sizeof(float));
  else write_bits(m.code, codec.value_bits, at);
  return out;
}

SparseMessage unpack(const ChunkPlan& plan, const SparseCodec& codec, const uint8_t* data, int64_t bytes) {
  if (bytes != packed_bytes(plan, codec))
    throw std::invalid_argument("a SparseLoCo message of " + std::to_string(bytes) + " bytes, expected " +
                                std::to_string(packed_bytes(plan, codec)));
  const int64_t K = plan.kept(codec.topk);
  const bool raw = codec.value_bits == 32;
  SparseMessage m;
  m.table.resize(raw ? 0 : size_t(plan.tensors) << codec.value_bits);
  if (!m.table.empty()) std::memcpy(m.table.data(), data, m.table.size() * sizeof(float));
  data += m.table.size() * sizeof(float);
  m.index.resize(size_t(K));
  read_bits(data, kIndexBits, m.index);
  data += stream_bytes(K, kIndexBits);
  if (raw) {
    m.value.resize(size_t(K));
    if (!m.value.empty()) std::memcpy(m.value.data(), data, m.value.size() * sizeof(float));
  } else {
    m.code.resize(size_t(K));
    read_bits(data, codec.value_bits, m.code);
  }
  size_t at = 0;  // a corrupt index would write outside its chunk
  for (const Chunk& c : plan.chunks)
    for (int64_t j = 0; j < std::min<int64_t>(codec.topk, c.size()); ++j, ++at)
      if (m.index[at] >= c.size())
        throw std::invalid_argument("a SparseLoCo message's index " + std::to_string(m.index[at]) +
                                    " outside its chunk of " + std::to_string(c.size()));
  return m;
}

namespace {

int64_t elements_of(const std::vector<model::TensorInfo>& tensors) {
  int64_t n = 0;
  for (const model::TensorInfo& t : tensors) n += t.count();
  return n;
}

}  // namespace

int64_t dense_packed_bytes(const std::vector<model::TensorInfo>& tensors, int bits) {
  return 4 * int64_t(tensors.size()) * (int64_t(1) << bits) + stream_bytes(elements_of(tensors), bits);
}

std::vector<uint8_t> pack_dense(const std::vector<model::TensorInfo>& tensors, int bits, const float* values) {
  const size_t bins = size_t(1) << bits;
  std::vector<uint8_t> out(size_t(dense_packed_bytes(tensors, bits)), 0);
  std::vector<uint8_t> codes(size_t(elements_of(tensors)));
  std::vector<float> table(tensors.size() * bins);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const model::TensorInfo& t = tensors[i];
    quantize_bins(values + t.offset, t.count(), bits, codes.data() + t.offset, table.data() + i * bins);
  }
  std::memcpy(out.data(), table.data(), table.size() * sizeof(float));
  write_bits(codes, bits, out.data() + table.size() * sizeof(float));
  return out;
}

void unpack_dense(const std::vector<model::TensorInfo>& tensors, int bits, const uint8_t* data, int64_t bytes,
                  float* out) {
  if (bytes != dense_packed_bytes(tensors, bits))
    throw std::invalid_argument("a quantised DiLoCo message of " + std::to_string(bytes) + " bytes, expected " +
                                std::to_string(dense_packed_bytes(tensors, bits)));
  const size_t bins = size_t(1) << bits;
  std::vector<float> table(tensors.size() * bins);
  std::memcpy(table.data(), data, table.size() * sizeof(float));
  std::vector<uint8_t> codes(size_t(elements_of(tensors)));
  read_bits(data + table.size() * sizeof(float), bits, codes);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const model::TensorInfo& t = tensors[i];
    for (int64_t j = t.offset; j < t.offset + t.count(); ++j) out[j] = table[i * bins + codes[size_t(j)]];
  }
}

}  // namespace lowband::sync
