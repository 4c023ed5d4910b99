#pragma once
// The lossy stage-boundary baselines top-k and quantize (boundary_codec.h says
// their messages); make_boundary_codec builds them. Both work token by token on
// the existing kernels (kernels/compress.h).
#include <memory>

#include "runtime/compress/boundary_codec.h"

namespace lowband::compress {

// InputError("compression.boundary.topk_fraction") unless 0 < fraction <= 1.
std::unique_ptr<BoundaryCodec> make_topk_boundary(int d, int bytes_per_element, double fraction);
// InputError("compression.boundary.quantize_bits") unless bits is 4 or 8;
// ("compression.boundary.quantize_block") unless block >= 1.
std::unique_ptr<BoundaryCodec> make_quantize_boundary(int d, int bytes_per_element, int bits, int block);

}  // namespace lowband::compress
