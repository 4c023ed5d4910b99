// OuterSync checkpoints: everything the next outer step reads, bit-exact.
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "common/binary_io.h"
#include "runtime/sync/outer_sync.h"

namespace lowband::sync {
namespace {

constexpr uint64_t kOuterStateTag = 0x6f757465722d7331ULL;  // "outer-s1"
// The same followed by a message staged or an exchange in flight (delay_steps > 0).
constexpr uint64_t kOuterStateWithExchangeTag = 0x6f757465722d7332ULL;  // "outer-s2"

std::vector<float> read_buffer(std::istream& in, size_t expected, const char* what) {
  std::vector<float> v = binary::read_vector<float>(in, what);
  if (v.size() != expected)
    throw binary::BinaryFormatError(std::string(what) + " of " + std::to_string(v.size()) + " values, expected " +
                                    std::to_string(expected));
  return v;
}

}  // namespace

void OuterSync::save_state(std::ostream& out) const {
  const bool exchange = staged_.ready || in_flight_.started;
  binary::write_u64(out, exchange ? kOuterStateWithExchangeTag : kOuterStateTag);
  binary::write_u64(out, uint64_t(config_.method));
  binary::write_i64(out, elements_);
  binary::write_i64(out, outer_steps_);
  binary::write_vector(out, theta_start_);
  binary::write_vector(out, momentum_);
  binary::write_vector(out, error_);
  if (!exchange) return;
  binary::write_u64(out, (staged_.ready ? 1 : 0) | (in_flight_.started ? 2 : 0));
  binary::write_i64(out, staged_.sent);
  binary::write_vector(out, staged_.delta);
  binary::write_vector(out, staged_.packed);
  binary::write_i64(out, in_flight_.replicas);
  binary::write_i64(out, in_flight_.sent);
  binary::write_vector(out, in_flight_.delta);
  binary::write_vector(out, in_flight_.own);
  binary::write_vector(out, in_flight_.packed);
  binary::write_vector(out, in_flight_.gathered);
}

void OuterSync::load_state(std::istream& in) {
  const uint64_t tag = binary::read_u64(in, "the outer sync's tag");
  if (tag != kOuterStateTag && tag != kOuterStateWithExchangeTag)
    throw binary::BinaryFormatError("not an outer sync state");
  const uint64_t method = binary::read_u64(in, "the outer sync's method");
  const int64_t elements = binary::read_i64(in, "the outer sync's parameter count");
  if (method != uint64_t(config_.method) || elements != elements_)
    throw binary::BinaryFormatError("an outer sync state of method " + std::to_string(method) + " over " +
                                    std::to_string(elements) + " parameters, expected method " +
                                    std::to_string(int(config_.method)) + " over " + std::to_string(elements_));
  // Read whole before anything changes: a truncated state leaves this one as it was.
  const int64_t steps = binary::read_i64(in, "the outer step count");
  std::vector<float> theta_start = read_buffer(in, theta_start_.size(), "theta_start");
  std::vector<float> momentum = read_buffer(in, momentum_.size(), "the outer momentum");
  std::vector<float> error = read_buffer(in, error_.size(), "the error buffer");
  Staged staged;
  InFlight in_flight;
  if (tag == kOuterStateWithExchangeTag) {
    const uint64_t which = binary::read_u64(in, "the exchange's state");
    staged.ready = (which & 1) != 0;
    staged.sent = binary::read_i64(in, "the staged message's entries");
    staged.delta = binary::read_vector<float>(in, "the staged pseudo-gradient");
    staged.packed = binary::read_vector<uint8_t>(in, "the staged message");
    in_flight.started = (which & 2) != 0;
    in_flight.replicas = int(binary::read_i64(in, "the exchange's replicas"));
    in_flight.sent = binary::read_i64(in, "the exchange's entries");
    in_flight.delta = binary::read_vector<float>(in, "the exchange's sum");
    in_flight.own = binary::read_vector<float>(in, "the exchange's own pseudo-gradient");
    in_flight.packed = binary::read_vector<uint8_t>(in, "the exchange's message");
    in_flight.gathered = binary::read_vector<uint8_t>(in, "the exchange's messages");
    const auto fits = [&](size_t got, size_t want, const char* what) {
      if (got != 0 && got != want)
        throw binary::BinaryFormatError(std::string(what) + " of " + std::to_string(got) + " values, expected " +
                                        std::to_string(want));
    };
    fits(staged.delta.size(), size_t(elements_), "the staged pseudo-gradient");
    fits(in_flight.delta.size(), size_t(elements_), "the exchange's sum");
    fits(in_flight.own.size(), size_t(elements_), "the exchange's own pseudo-gradient");
    if (in_flight.started && in_flight.replicas < 1) throw binary::BinaryFormatError("an exchange of no replicas");
  }
  staged_ = std::move(staged);
  in_flight_ = std::move(in_flight);
  theta_start_ = std::move(theta_start);
  momentum_ = std::move(momentum);
  error_ = std::move(error);
  outer_steps_ = steps;
}

}  // namespace lowband::sync
