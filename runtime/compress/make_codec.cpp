#include "runtime/compress/make_codec.h"

#include "common/error.h"
#include "runtime/compress/baseline_codecs.h"
#include "runtime/compress/drop_codec.h"
#include "runtime/compress/identity_codec.h"
#include "runtime/compress/mos_codec.h"
#include "runtime/compress/uncompressed_parts.h"

namespace lowband::compress {

namespace {

std::unique_ptr<KvCodec> make_compressing_codec(const Scenario& scenario) {
  const ModelConfig& m = scenario.model;
  const CompressionConfig& c = scenario.compression;
  switch (c.method) {
    case CompressionMethod::none:
      return std::make_unique<IdentityCodec>(m.kv_heads, m.head_dim(), m.bytes_per_element);
    case CompressionMethod::mos:
      return std::make_unique<MosCodec>(mos_options_from(scenario));
    case CompressionMethod::topk:
      return std::make_unique<TopkCodec>(m.kv_heads, m.head_dim(), m.bytes_per_element, c.topk_fraction, m.layers);
    case CompressionMethod::quantize:
      return std::make_unique<QuantizeCodec>(m.kv_heads, m.head_dim(), m.bytes_per_element, c.quantize_bits,
                                             c.quantize_block, m.layers);
    case CompressionMethod::drop:
      return std::make_unique<DropCodec>(m.kv_heads, m.head_dim());
  }
  throw InputError("compression.method", "unknown method");
}

}  // namespace

std::unique_ptr<KvCodec> make_kv_codec(const Scenario& scenario) {
  const CompressionConfig& c = scenario.compression;
  std::unique_ptr<KvCodec> codec = make_compressing_codec(scenario);
  // MoS keeps its own warm-up (it fits U0 at its end) and final layer; the baselines get them here.
  const bool own = c.method == CompressionMethod::mos || c.method == CompressionMethod::none;
  if (own || (c.warmup_steps == 0 && c.compress_final_layer)) return codec;
  const ModelConfig& m = scenario.model;
  return std::make_unique<UncompressedPartsCodec>(std::move(codec),
                                                  IdentityCodec(m.kv_heads, m.head_dim(), m.bytes_per_element),
                                                  c.warmup_steps, m.layers, c.compress_final_layer);
}

}  // namespace lowband::compress
