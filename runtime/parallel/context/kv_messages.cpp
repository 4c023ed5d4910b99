#include "runtime/parallel/context/kv_messages.h"

#include <cstring>
#include <stdexcept>

namespace lowband::parallel {
namespace {

template <class T> void put(std::vector<uint8_t>& out, const T& x) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &x, sizeof(T));
}

template <class T> T get(const std::vector<uint8_t>& in, size_t& at) {
  if (at + sizeof(T) > in.size()) throw std::logic_error("K/V message: truncated framing");
  T x;
  std::memcpy(&x, in.data() + at, sizeof(T));
  at += sizeof(T);
  return x;
}

void append_bytes(std::vector<uint8_t>& message, const std::vector<uint8_t>& bytes) {
  put<uint64_t>(message, bytes.size());
  message.insert(message.end(), bytes.begin(), bytes.end());
}

// Calls f(data, size) for each framed block after the wire-bytes header.
template <class F> void for_each_block(const std::vector<uint8_t>& message, F f) {
  size_t at = sizeof(double);
  while (at < message.size()) {
    const uint64_t n = get<uint64_t>(message, at);
    if (at + n > message.size()) throw std::logic_error("K/V message: a block runs past the end");
    f(message.data() + at, size_t(n));
    at += n;
  }
}

void add_wire_bytes(std::vector<uint8_t>& message, double bytes) {
  double total;
  std::memcpy(&total, message.data(), sizeof total);
  total += bytes;
  std::memcpy(message.data(), &total, sizeof total);
}

}  // namespace

void begin_kv_message(std::vector<uint8_t>& message) {
  message.clear();
  put<double>(message, 0.0);
}

void append_block(std::vector<uint8_t>& message, const compress::CodecMessage& block) {
  append_bytes(message, compress::pack(block));
  add_wire_bytes(message, block.wire_bytes);
}

double kv_message_wire_bytes(const std::vector<uint8_t>& message) {
  size_t at = 0;
  return get<double>(message, at);
}

std::vector<compress::CodecMessage> kv_message_blocks(const std::vector<uint8_t>& message) {
  std::vector<compress::CodecMessage> out;
  for_each_block(message, [&](const uint8_t* data, size_t n) {
    out.emplace_back();
    compress::unpack(data, n, out.back());
  });
  return out;
}

void pack_gradients(const std::vector<compress::CodecGradient>& blocks, std::vector<uint8_t>& message) {
  begin_kv_message(message);
  for (const auto& g : blocks) {
    append_bytes(message, compress::pack(g));
    add_wire_bytes(message, g.wire_bytes);
  }
}

void unpack_gradients(const std::vector<uint8_t>& message, std::vector<compress::CodecGradient>& blocks) {
  blocks.clear();
  for_each_block(message, [&](const uint8_t* data, size_t n) {
    blocks.emplace_back();
    compress::unpack(data, n, blocks.back());
  });
}

void add_gradients(std::vector<compress::CodecGradient>& acc, const std::vector<compress::CodecGradient>& more) {
  if (acc.size() != more.size()) throw std::logic_error("dK/dV messages of different block counts");
  for (size_t i = 0; i < acc.size(); ++i) acc[i].add(more[i]);
}

double gradient_wire_bytes(const std::vector<compress::CodecGradient>& blocks) {
  double total = 0;
  for (const auto& g : blocks) total += g.wire_bytes;
  return total;
}

}  // namespace lowband::parallel
