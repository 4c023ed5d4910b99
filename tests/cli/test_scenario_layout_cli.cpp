// Layouts that `run` and `estimate` refuse are refused as well by `validate`
// and `sweep --dry-run` (and by a sweep before it writes its directory): exit
// status 2, one line naming the JSON path, nothing written.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "runtime/scenario/load.h"
#include "tests/cli/cli_support.h"

namespace {

using lowband::test_support::Cli;
using lowband::test_support::slurp;

const std::string kHetero = std::string(LOWBAND_SOURCE_DIR) + "/scenarios/hetero-selective.json";

struct BadLayout {
  std::string name;
  bool hetero;
  std::vector<std::string> sets;
  std::string path;
};

const std::vector<BadLayout> kBad = {
    {"batch", false, {"parallel.context=1", "parallel.data=3", "network.nodes=3", "training.batch_size=4"},
     "training.batch_size"},
    {"shapes", true, {R"(parallel.data_sync={"method": "all_reduce"})"}, "parallel.replicas.2"},
    {"stages", true, {"model.layers=2"}, "parallel.replicas.2.pipeline"},
    {"context", true, {R"(parallel.replicas.1={"context": 2, "nodes": [1, 2]})"}, "parallel.replicas.1.context"},
    {"topk", false, {"parallel.context=1", "parallel.data=2", "network.nodes=2", "training.batch_size=2",
                     "compression.weight_sync=topk_grad"}, "compression.weight_sync"},
};

class ScenarioLayoutCli : public Cli {
 protected:
  // The bad scenario as a file of its own (the overrides applied to its text).
  fs::path bad_file(const BadLayout& c) {
    nlohmann::json doc = nlohmann::json::parse(c.hetero ? slurp(kHetero) : lowband::builtin_scenario_text("default"));
    lowband::apply_overrides(doc, c.sets);
    return write(c.name + ".json", doc.dump(2));
  }
  std::set<std::string> entries() {
    std::set<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir_))
      if (e.path().filename() != "stdout" && e.path().filename() != "stderr") out.insert(e.path().string());
    return out;
  }
  void expect_refused(const std::string& args, const BadLayout& c) {
    SCOPED_TRACE(args);
    const std::set<std::string> before = entries();
    const auto r = run(args);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(c.path + ": "), std::string::npos) << r.err;
    EXPECT_EQ(entries(), before) << "nothing written";
  }
};

TEST_F(ScenarioLayoutCli, ValidateRefusesWhatRunRefuses) {
  for (const BadLayout& c : kBad) expect_refused("validate " + bad_file(c).string(), c);
}

TEST_F(ScenarioLayoutCli, SweepRefusesBeforeWritingAnything) {
  for (const BadLayout& c : kBad) {
    const std::string file = bad_file(c).string();
    expect_refused("sweep " + file + " --dry-run --set training.seed=1,2", c);
    expect_refused("sweep " + file + " --set training.seed=1,2 --steps 1 --out " + (dir_ / "sweep").string(), c);
  }
}

TEST_F(ScenarioLayoutCli, EstimateRefusesAlike) {
  for (const BadLayout& c : kBad) expect_refused("estimate " + bad_file(c).string(), c);
}

}  // namespace
