#include "runtime/train/memory_check.h"

#include <unistd.h>

#include <string>

#include "common/error.h"
#include "runtime/scenario/units.h"

namespace lowband::train {

double training_bytes_lower_bound(const Scenario& s) {
  const ModelConfig& m = s.model;
  const double ranks = s.parallel.context;
  const double state = ranks * m.parameters() * 4.0 * 4.0;  // weights, gradients, 2 moments
  // Per layer and token at least its input, Q, K, V, attention output and the MLP's hidden values.
  const double per_token = double(m.layers) * (4.0 * m.d_model + 3.0 * m.ffn_hidden) * 4.0;
  const double activations = double(s.training.batch_size) * double(m.seq_len) * per_token;
  return state + activations;
}

void check_training_fits(const Scenario& s, double memory_bytes) {
  if (memory_bytes <= 0) memory_bytes = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGE_SIZE));
  const double need = training_bytes_lower_bound(s);
  if (need > memory_bytes)
    throw InputError("model", "training needs at least " + units::format_bytes(need) + " (model.layers " +
                                  std::to_string(s.model.layers) + ", model.d_model " + std::to_string(s.model.d_model) +
                                  ", model.ffn_hidden " + std::to_string(s.model.ffn_hidden) + ", model.vocab " +
                                  std::to_string(s.model.vocab) + ", model.seq_len " + std::to_string(s.model.seq_len) +
                                  ", training.batch_size " + std::to_string(s.training.batch_size) +
                                  ", parallel.context " + std::to_string(s.parallel.context) + "); this machine has " +
                                  units::format_bytes(memory_bytes));
}

}  // namespace lowband::train
