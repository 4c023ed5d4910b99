// The rule of docs/reliability.md, "Keys without effect", held for every key of
// the field tables (runtime/scenario/fields.h) in every layout: a key given in a
// scenario is either used by the layout it is given in — a short training's
// outputs (losses, simulated times, bytes, evaluations) differ from the same
// training without it — or refused with one line that names it.
//
// Each key is given its table example (a valid value other than the default),
// twice: with what its table says it needs (example_sets, the method it applies
// to) and alone. A key whose outputs do not change and that is not refused fails
// the test, but for the few listed in kUsedElsewhere, whose effect a short
// training's outputs cannot show, each with the test that shows it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "kernels/device.h"
#include "runtime/scenario/equal.h"
#include "runtime/scenario/fields.h"
#include "runtime/scenario/load.h"
#include "runtime/train/run.h"
#include "tests/slurp.h"
#include "tests/temp_dir.h"

namespace lowband::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Keys used where a short training's outputs do not show it, and where that is shown.
const std::map<std::string, std::string> kUsedElsewhere = {
    {"name", "names the run directory and every summary (RunDir tests)"},
    {"description", "documentation only: recorded in scenario.json"},
    {"network.source", "documentation only: recorded in scenario.json (ScenarioNetworkFile.*)"},
    {"training.checkpoint_every", "when checkpoints are taken: RunResume.* resume from them"},
    // A permission, not a setting: it lets a fit within the learning-rate warm-up
    // through, which is refused without it (CodecScenario.MosFitsU0NoEarlier...); elsewhere it allows nothing.
    {"compression.fit_during_lr_warmup", "allows what is otherwise refused"},
};

// Values whose effect a tiny model cannot show: the sets under which it shows.
const std::map<std::string, std::vector<std::string>> kProbeSets = {
    // Compute-bound steps (a tiny model's are latency- and memory-bound) on a fast network.
    {"devices.dtype", {"devices.profile=L4", "model.d_model=512", "model.ffn_hidden=1024", "model.seq_len=512",
                       "training.steps=2", "network.bandwidth=100Gbps"}},
    {"devices.custom_profiles", {"model.d_model=512", "model.ffn_hidden=1024", "model.seq_len=512", "training.steps=2",
                                 "network.bandwidth=100Gbps"}},
    // The override (an L4) slower than the other nodes.
    {"devices.overrides", {"devices.profile=H100-SXM"}},
    // More pairs than the default (as many as fit) in the first rank's block.
    {"training.recall_pairs", {"model.seq_len=256"}},
};

// Keys used, whose example changes nothing in some layouts for a reason of the
// layout's traffic, not of the key.
const std::map<std::string, std::string> kNoEffectHere = {
    // A local method's outer sync puts one message at a time on each link.
    {"network.message_order/data_diloco", "one message at a time on a link: both orders time the same"},
    {"network.message_order/data_sparseloco", "one message at a time on a link: both orders time the same"},
    // A context rank's or stage's share of a model small enough to train here is
    // memory-bound: the dtype's peak FLOP/s does not set its time (the data layouts show it).
    {"devices.dtype/context", "memory-bound kernels at a test's size"},
    {"devices.dtype/pipeline", "memory-bound kernels at a test's size"},
    // Recorded in every resolved scenario.json with every method (docs/reliability.md).
    {"compression.warmup_steps/*", "with method none it does nothing; kept for recorded run directories"},
};

struct Layout {
  std::string name;
  std::vector<std::string> sets;
};

// A few steps of a tiny model, timed from the device profile (deterministic):
// 12 steps, so that the examples of warm-ups and evaluation periods take effect.
const std::vector<std::string> kTiny = {
    "model.layers=2",      "model.d_model=32",          "model.heads=4",      "model.kv_heads=2",
    "model.ffn_hidden=64", "model.seq_len=64",          "training.batch_size=2", "training.lr=0.01",
    "training.steps=12",   "training.lr_warmup_steps=0", "devices.timing=profile"};

// Four ranks in the layout's dimension (two peers would make ring and direct, or
// ring and all-gather, the same exchange) and a node no rank runs on (a relay's).
const std::vector<Layout>& layouts() {
  static const std::vector<Layout> all = {
      {"context", {"parallel.context=4", "network.nodes=5"}},
      {"pipeline",
       {"parallel.context=1", "parallel.pipeline=2", "parallel.microbatches=4", "training.batch_size=4", "network.nodes=3"}},
      {"data_all_reduce", {"parallel.context=1", "parallel.data=4", "network.nodes=5", "training.batch_size=4"}},
      {"data_diloco",
       {"parallel.context=1", "parallel.data=4", "network.nodes=5", "training.batch_size=4", "parallel.data_sync.method=diloco"}},
      {"data_sparseloco",
       {"parallel.context=1", "parallel.data=4", "network.nodes=5", "training.batch_size=4",
        "parallel.data_sync.method=sparseloco"}},
  };
  return all;
}

// An outer step within the short training wherever a local method is set.
void with_outer_steps(std::vector<std::string>& sets) {
  for (const std::string& s : sets)
    if (s == "parallel.data_sync.method=diloco" || s == "parallel.data_sync.method=sparseloco") {
      sets.push_back("parallel.data_sync.inner_steps=4");
      return;
    }
}

std::string path_of(const fields::Section& s, const fields::Field& f) {
  return s.path.empty() ? f.key : s.path + "." + f.key;
}

// What a run's outputs say that its settings decide: everything but wall-clock
// figures, paths and the scenario's echo.
std::string fingerprint(const fs::path& dir) {
  std::ostringstream out;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) out << f << " ";
  const auto scrub = [](json& j) {
    for (auto it = j.begin(); it != j.end();) {
      const std::string k = it.key();
      if (k.find("wall") != std::string::npos || k.find("process_") == 0 || k == "harness_overhead_fraction" ||
          k == "run_dir" || k == "scenario_source")
        it = j.erase(it);
      else
        ++it;
    }
  };
  std::ifstream steps(dir / "steps.jsonl");
  for (std::string line; std::getline(steps, line);) {
    json j = json::parse(line);
    scrub(j);
    out << j.dump() << "\n";
  }
  json summary = json::parse(test_support::slurp((dir / "summary.json").string()));
  scrub(summary);
  out << summary.dump();
  return out.str();
}

class KeyUse : public ::testing::TestWithParam<Layout> {
 protected:
  // From the source tree, where the built-in's corpus path (data/...) is.
  void SetUp() override {
    dir_ = test_support::unique_test_temp_dir("key_use");
    cwd_ = fs::current_path();
    fs::current_path(LOWBAND_SOURCE_DIR);
  }
  void TearDown() override {
    fs::current_path(cwd_);
    fs::remove_all(dir_);
  }

  // The outputs of a training of `s`, cached by its resolved scenario.
  const std::string& outputs(const Scenario& s) {
    const std::string key = to_json(s).dump();
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    train::RunOptions options;
    options.out_dir = (dir_ / ("r" + std::to_string(cache_.size()))).string();
    options.threads = 1;
    train::run_training(s, options);
    return cache_[key] = fingerprint(options.out_dir);
  }

  // Gives `path`=`example` on top of `sets`; records what became of it.
  void probe(const std::string& path, const std::string& example, std::vector<std::string> sets) {
    with_outer_steps(sets);
    Scenario base, changed;
    try {
      base = builtin_scenario("default", sets);
    } catch (const InputError&) {
      ++not_possible_;  // what the key needs cannot be given in this layout
      return;
    }
    sets.push_back(path + "=" + example);
    try {
      changed = builtin_scenario("default", sets);
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path), std::string::npos) << path << "=" << example << " is refused without naming it: " << what;
      ++refused_;
      return;
    }
    if (scenario_difference(base, changed).empty()) return;  // the layout already has that value
    if (kUsedElsewhere.count(path) || kNoEffectHere.count(path + "/" + GetParam().name) ||
        kNoEffectHere.count(path + "/*"))
      return;
    if (changed.training.backend != base.training.backend && !kernels::cuda_available()) {
      ++no_device_;  // training.backend=cuda trains only where a GPU is (tests/kernels/gpu compare it to the CPU)
      return;
    }
    if (outputs(base) == outputs(changed)) {
      ADD_FAILURE() << path << "=" << example << " is accepted in the " << GetParam().name
                    << " layout and changes nothing a training writes (sets: "
                    << testing::PrintToString(sets) << ")";
    } else {
      ++used_;
    }
  }

  fs::path dir_, cwd_;
  std::map<std::string, std::string> cache_;
  int used_ = 0, refused_ = 0, not_possible_ = 0, no_device_ = 0;
};

TEST_P(KeyUse, EveryKeyIsUsedByItsLayoutOrRefusedNamingIt) {
  const Layout& layout = GetParam();
  std::vector<std::string> base = kTiny;
  base.insert(base.end(), layout.sets.begin(), layout.sets.end());
  int keys = 0;
  for (const fields::Section& section : fields::sections())
    for (const fields::Field& f : section.fields) {
      if (f.example.empty()) continue;  // a section of its own, or never written (compression.ratio)
      const std::string path = path_of(section, f);
      ++keys;
      // With what the table says the key needs...
      std::vector<std::string> sets = base;
      if (kProbeSets.count(path)) sets.insert(sets.end(), kProbeSets.at(path).begin(), kProbeSets.at(path).end());
      sets.insert(sets.end(), f.example_sets.begin(), f.example_sets.end());
      if (!f.applies.key.empty())
        sets.push_back((section.path.empty() ? "" : section.path + ".") + f.applies.key + "=" + f.applies.values[0]);
      if (!f.example_from.empty()) sets.push_back(path + "=" + f.example_from);
      probe(path, f.example, sets);
      // ... and alone, in the layout as it is.
      if (!f.applies.key.empty() || !f.example_sets.empty()) probe(path, f.example, base);
    }
  std::cout << layout.name << ": " << keys << " keys; " << used_ << " probes used, " << refused_ << " refused, "
            << not_possible_ << " whose needs this layout refuses, " << no_device_ << " that need a GPU\n";
  EXPECT_GE(keys, 80);
  EXPECT_GT(used_, 20);
  EXPECT_GT(refused_, 0);
}

INSTANTIATE_TEST_SUITE_P(Layouts, KeyUse, ::testing::ValuesIn(layouts()),
                         [](const testing::TestParamInfo<Layout>& info) { return info.param.name; });

}  // namespace
}  // namespace lowband::test
