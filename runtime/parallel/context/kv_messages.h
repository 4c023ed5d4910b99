#pragma once
// One rank's K/V blocks of one layer as ONE message on the wire (and the dK/dV
// gradients back as one): a float64 with the blocks' total modelled wire bytes,
// then per block (sequence-major, then chunk, K before V) a uint64 length and the
// block's packed bytes (compress/codec_message.h).
#include <cstdint>
#include <vector>

#include "runtime/compress/codec_message.h"

namespace lowband::parallel {

void begin_kv_message(std::vector<uint8_t>& message);
void append_block(std::vector<uint8_t>& message, const compress::CodecMessage& block);
double kv_message_wire_bytes(const std::vector<uint8_t>& message);
// The blocks in order; std::logic_error when the framing is damaged.
std::vector<compress::CodecMessage> kv_message_blocks(const std::vector<uint8_t>& message);

void pack_gradients(const std::vector<compress::CodecGradient>& blocks, std::vector<uint8_t>& message);
void unpack_gradients(const std::vector<uint8_t>& message, std::vector<compress::CodecGradient>& blocks);
// acc[i] += more[i] for every block, in that order.
void add_gradients(std::vector<compress::CodecGradient>& acc, const std::vector<compress::CodecGradient>& more);
double gradient_wire_bytes(const std::vector<compress::CodecGradient>& blocks);

}  // namespace lowband::parallel
