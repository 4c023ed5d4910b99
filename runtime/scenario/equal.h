#pragma once
// Comparison of two scenarios over their resolved form (what to_json writes into
// a run directory, Scenario::source aside), so that what is compared and what is
// recorded cannot drift apart; the first difference is named by the scenario's
// own keys and spelled as the scenario spells its values.
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/scenario/scenario.h"

namespace lowband {

// to_json(s) with what resolves alike written alike: the even stage split
// explicit as parallel.stage_layers (also in a projected scenario).
nlohmann::json canonical_json(const Scenario& s);

// Empty when equal; otherwise the first differing key, e.g.
// "network.latency: 1ms vs 2ms", "parallel.data_sync.method: diloco vs sparseloco".
std::string scenario_difference(const Scenario& a, const Scenario& b);

// As scenario_difference, over what decides the training only: name, description,
// network and projection time a run (train::RetimeTarget) and are left out — but
// the network, under partial participation (parallel.data_sync.deadline_seconds,
// quorum), decides who makes each round, and stays in.
std::string training_difference(const Scenario& a, const Scenario& b);

// One string per training: equal for two scenarios exactly when
// training_difference is empty (what lowband sweep groups its points by).
std::string training_key(const Scenario& s);

}  // namespace lowband
