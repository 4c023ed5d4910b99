#pragma once
// What one rank's codec hands another (K/V blocks, pipeline stage boundaries):
// the sender's message (CodecMessage), and a receiver's gradient message back
// (CodecGradient).
//
// wire_bytes is the MODELLED size of the message on the link: values at the
// model's wire precision (ModelConfig::bytes_per_element), int32 indices, packed
// codes, float32 θ/scales: the numbers KvCodec::message_bytes and
// gradient_message_bytes give, which `estimate` uses. In memory, and in the packed
// buffer the transport sends, values are float32 whatever bytes_per_element is,
// so the payload's real size differs from wire_bytes by the element width.
//
// Sizes: a receiver knows the codec, the step (so the codec's phase) and n, so
// KvCodec::message_layout / gradient_floats give the counts it must receive and
// packed_bytes the buffer to recv into: one message, no size message first
// (Communicator::recv_message, which learns the size, works as well). The packed
// header repeats the counts so unpack checks the buffer holds exactly them.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace lowband::compress {

// Element counts of a message's three arrays.
struct MessageLayout {
  int64_t values = 0;   // float32
  int64_t indices = 0;  // int32
  int64_t codes = 0;    // bytes
  bool operator==(const MessageLayout& o) const { return values == o.values && indices == o.indices && codes == o.codes; }
};

struct CodecMessage {
  std::vector<float> values;     // identity: z; top-k: kept values; quantize: scales; MoS: C per head, then θ
  std::vector<int32_t> indices;  // top-k: flat indices of the kept values
  std::vector<uint8_t> codes;    // quantize: packed codes
  double wire_bytes = 0;
  MessageLayout layout() const { return {int64_t(values.size()), int64_t(indices.size()), int64_t(codes.size())}; }
};

// Linear in the receiver's dẐ, so the gradients of several receivers sum
// elementwise into the one message the owner decodes (a ring passes one
// accumulator around, each rank adding its own).
struct CodecGradient {
  std::vector<float> values;  // identity/quantize: dẐ; top-k: dẐ at the kept indices; MoS: dC per head, then dθ
  double wire_bytes = 0;      // of ONE receiver's message (summing does not grow it)
  // values += other.values, elementwise, as this + other (so a ring summing
  // receivers r1, r2, r3 in that order gets (g1 + g2) + g3). An empty accumulator
  // (no values, wire_bytes 0) takes other's; otherwise the sizes must match
  // (std::logic_error).
  void add(const CodecGradient& other);
};

// The packed buffer: a 32-byte header (int64 values, indices, codes counts and
// the float64 wire_bytes, host byte order) then values, indices, codes.
size_t packed_bytes(const MessageLayout& layout);
std::vector<uint8_t> pack(const CodecMessage& message);
// Throws std::logic_error when `bytes` does not match the header's counts.
void unpack(const void* data, size_t bytes, CodecMessage& out);
// A gradient packs as a message with values only.
size_t packed_gradient_bytes(int64_t values);
std::vector<uint8_t> pack(const CodecGradient& gradient);
void unpack(const void* data, size_t bytes, CodecGradient& out);

// Checks the codecs' halves share: a message or gradient of the size the
// codec expects for n rows (std::logic_error naming `where` otherwise).
void check_layout(const MessageLayout& got, const MessageLayout& want, const char* where);
void check_gradient(const CodecGradient& got, int64_t want, const char* where);

}  // namespace lowband::compress
