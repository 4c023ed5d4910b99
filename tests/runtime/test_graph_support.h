#pragma once
// The transfers of a step graph as a sorted multiset of (source, destination,
// bytes, kind), for comparing two graphs transfer for transfer.
#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "sim/step_graph.h"

namespace lowband::test_support {

using Transfer = std::tuple<int, int, double, std::string>;

inline std::vector<Transfer> transfers(const sim::StepGraph& g) {
  std::vector<Transfer> out;
  for (const auto& t : g.tasks())
    if (t.kind == sim::TaskKind::transfer) out.emplace_back(t.rank, t.peer, t.bytes, t.kind_tag);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace lowband::test_support
