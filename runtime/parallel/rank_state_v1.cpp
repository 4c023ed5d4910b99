// The context trainer's first checkpoint format ("ctx-stat", rank_state.h), read
// into the blobs of today's: all parameters, then all optimisers (each may refer
// to rank 0's), then one codec state that every rank starts from.
#include <istream>
#include <sstream>
#include <string>
#include <vector>

#include "common/binary_io.h"
#include "runtime/optim/optimizer.h"
#include "runtime/parallel/rank_state.h"

namespace lowband::parallel {

std::vector<std::string> read_context_state_v1(std::istream& in, const Scenario& s, int64_t params) {
  const int P = s.parallel.context;
  std::vector<std::string> blobs(static_cast<size_t>(P));
  const uint64_t count = uint64_t(params);
  for (int r = 0; r < P; ++r) {
    if (binary::read_bool(in, "a replica's flag")) {
      if (r == 0) throw binary::BinaryFormatError("rank 0's parameters refer to themselves");
      blobs[size_t(r)] = blobs[0];
    } else {
      std::vector<float> host(count);
      binary::read_array_into(in, host.data(), count, "a replica's parameters");
      std::ostringstream o;
      binary::write_array(o, host.data(), count);
      blobs[size_t(r)] = o.str();
    }
  }
  std::vector<std::string> optimizers(static_cast<size_t>(P));
  for (int r = 0; r < P; ++r) {
    if (binary::read_bool(in, "an optimiser's flag")) {
      if (r == 0) throw binary::BinaryFormatError("rank 0's optimiser refers to itself");
      optimizers[size_t(r)] = optimizers[0];
    } else {
      optim::AdamW scratch(model::ParamLayout(s.model), optim::optimizer_config_from(s.training), kernels::Device::cpu);
      scratch.load_state(in);
      std::ostringstream o;
      scratch.save_state(o);
      optimizers[size_t(r)] = o.str();
    }
  }
  std::ostringstream rest;
  rest << in.rdbuf();
  for (int r = 0; r < P; ++r) blobs[size_t(r)] += optimizers[size_t(r)] + rest.str();
  return blobs;
}

}  // namespace lowband::parallel
