#pragma once
// Whether a scenario's training can fit in this machine's memory, checked before
// anything is allocated: an absurd model (a typo'd d_model, a million layers) is
// an InputError naming the model keys, not a std::bad_alloc mid-way.
#include <cstdint>

#include "runtime/scenario/scenario.h"

namespace lowband::train {

// A lower bound on the bytes `lowband run` needs: every in-process rank's weights,
// gradients and AdamW moments (fp32), and the activations a step keeps for backward.
double training_bytes_lower_bound(const Scenario& scenario);

// InputError("model.*") when training_bytes_lower_bound exceeds `memory_bytes`
// (0: this machine's physical memory).
void check_training_fits(const Scenario& scenario, double memory_bytes = 0);

}  // namespace lowband::train
