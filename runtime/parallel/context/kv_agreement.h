#pragma once
// Whether the ranks of a context group attend to the same K/V: with
// compression.owner_kv reconstructed (mos's default, the paper's constraint) the
// owner of a block attends to the reconstruction its receivers decode, and that
// holds only while every rank's codec (its U₀, ψ, random bases) stays identical.
// The in-process trainer measures it after each compressed step (steps.jsonl's
// kv_owner_receiver_error) by comparing the ranks' memory directly.
#include <vector>

#include "kernels/backend.h"
#include "runtime/parallel/context/attention.h"

namespace lowband::parallel {

// Per layer, the largest ‖Ẑ_owner − Ẑ_receiver‖_F / ‖Ẑ_receiver‖_F over every
// owner's K (into k) or V (into v) block and every receiver, as attended in the
// current slot. `group[i]` is context rank i's attention, all on backend `b`.
// Left empty when an owner attends to its exact K/V (nothing reconstructed to
// compare) or the group has one rank.
void owner_receiver_errors(const std::vector<const ContextAttention*>& group, int layers, int64_t row_floats,
                           const kernels::Backend& b, std::vector<double>& k, std::vector<double>& v);

}  // namespace lowband::parallel
