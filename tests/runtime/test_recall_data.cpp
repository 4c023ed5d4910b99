// Keyed recall (runtime/data/recall.h): the records, their answer mask, and
// that only the pair's first copy, on another rank, predicts a remote answer.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/data/recall.h"
#include "runtime/scenario/load.h"

namespace lowband::data {
namespace {

Scenario recall_scenario(int context, const std::string& split, const std::string& form = "fused",
                         int key_tokens = 1, int value_tokens = 1, int pairs = 0) {
  nlohmann::json j = {
      {"name", "recall"},
      {"model", {{"layers", 1}, {"d_model", 16}, {"heads", 2}, {"ffn_hidden", 32}, {"vocab", 256}, {"seq_len", 1024}}},
      {"parallel", {{"context", context}, {"split", split}}},
      {"network", {{"model", "ideal"}, {"topology", "star"}, {"nodes", context}, {"bandwidth", "1Gbps"}, {"latency", "1ms"}}},
      {"training",
       {{"data_source", "recall"},
        {"recall_form", form},
        {"recall_pairs", pairs},
        {"recall_key_tokens", key_tokens},
        {"recall_value_tokens", value_tokens}}}};
  return parse_scenario(j, "test");
}

TEST(RecallData, OwnersFollowTheContextSplit) {
  const std::vector<int> zigzag = context_owners(recall_scenario(4, "zigzag"));
  const std::vector<int> contiguous = context_owners(recall_scenario(4, "contiguous"));
  for (int64_t t = 0; t < 1024; ++t) {
    const int chunk = int(t / 128);
    EXPECT_EQ(zigzag[size_t(t)], chunk < 4 ? chunk : 7 - chunk) << t;
    EXPECT_EQ(contiguous[size_t(t)], int(t / 256)) << t;
  }
}

TEST(RecallData, SameSeedSameRecordsOtherSeedOrStreamOthers) {
  const RecallShape shape = recall_shape(recall_scenario(4, "zigzag"));
  const RecallBatch a = recall_batch(shape, 7, RecallStream::train, 10, 3);
  const RecallBatch b = recall_batch(shape, 7, RecallStream::train, 10, 3);
  EXPECT_EQ(a.batch.inputs, b.batch.inputs);
  EXPECT_EQ(a.answer, b.answer);
  // Record 11 is the same whichever batch it falls in.
  const RecallBatch one = recall_batch(shape, 7, RecallStream::train, 11, 1);
  EXPECT_TRUE(std::equal(one.batch.inputs.begin(), one.batch.inputs.end(), a.batch.inputs.begin() + 1024));
  EXPECT_NE(recall_batch(shape, 8, RecallStream::train, 10, 3).batch.inputs, a.batch.inputs);
  EXPECT_NE(recall_batch(shape, 7, RecallStream::validation, 10, 3).batch.inputs, a.batch.inputs);
}

// Every answer target is the value of the key just queried, taken from the
// pairs (on rank owner[0]); a remote answer's predicting rank holds no whole
// earlier copy of that key and value (the pair or a query; recomputed here from
// the tokens alone), a local one does.
void check_records(const Scenario& s, int expected_pairs) {
  const RecallShape shape = recall_shape(s);
  EXPECT_EQ(shape.pairs, expected_pairs);
  const int64_t T = shape.seq_len, kt = shape.key_tokens, vt = shape.value_tokens, q = kt + vt;
  const int64_t pq = shape.fused ? 1 : q;
  int64_t remote = 0, local = 0;
  for (uint64_t index = 0; index < 20; ++index) {
    std::vector<int32_t> tokens;
    std::vector<AnswerKind> answer;
    recall_record(shape, 3, RecallStream::validation, index, tokens, answer);
    ASSERT_EQ(tokens.size(), size_t(T + 1));
    std::map<std::string, std::pair<std::string, int64_t>> pair_of;  // key -> its value and pair position
    for (int64_t i = 0; i < shape.pairs; ++i) {
      std::string key, value;
      if (shape.fused) {
        ASSERT_GE(tokens[size_t(i)], 128);
        key = std::string(1, char('a' + (tokens[size_t(i)] - 128) / 10));
        value = std::string(1, char('0' + (tokens[size_t(i)] - 128) % 10));
      } else {
        key.assign(tokens.begin() + i * q, tokens.begin() + i * q + kt);
        value.assign(tokens.begin() + i * q + kt, tokens.begin() + i * q + q);
      }
      EXPECT_TRUE(pair_of.emplace(key, std::pair{value, i * pq}).second) << "keys are distinct";
      for (int64_t j = 0; j < pq; ++j) EXPECT_EQ(shape.owner[size_t(i * pq + j)], shape.owner[0]);
    }
    int64_t answers_here = 0;
    for (int64_t t = 0; t < T; ++t) {
      if (answer[size_t(t)] == AnswerKind::none) continue;
      ++answers_here;
      // Target t is value token j of the query starting at t + 1 - kt - j.
      int64_t j = 0;
      while (tokens[size_t(t - j)] >= '0' && tokens[size_t(t - j)] <= '9') ++j;
      const int64_t at = t + 1 - kt - j;
      ASSERT_GE(at, shape.pairs * pq);
      const std::string key(tokens.begin() + at, tokens.begin() + at + kt);
      ASSERT_TRUE(pair_of.count(key)) << key;
      const auto& [value, pair_at] = pair_of[key];
      EXPECT_EQ(tokens[size_t(t + 1)], value[size_t(j)]) << "the answer is the pair's value";
      // Earlier whole copies on the predicting rank: the pair, or a query of the key.
      const int r = shape.owner[size_t(t)];
      bool holds_copy = true;
      for (int64_t v = pair_at; v < pair_at + pq; ++v) holds_copy = holds_copy && shape.owner[size_t(v)] == r;
      const std::string copy(tokens.begin() + at, tokens.begin() + at + q);
      for (int64_t u = shape.pairs * pq; u + q <= at; ++u) {
        if (std::string(tokens.begin() + u, tokens.begin() + u + q) != copy) continue;
        bool here = true;
        for (int64_t v = u; v < u + q; ++v) here = here && shape.owner[size_t(v)] == r;
        holds_copy = holds_copy || here;
      }
      EXPECT_EQ(answer[size_t(t)], holds_copy ? AnswerKind::local : AnswerKind::remote) << t;
      (holds_copy ? local : remote) += 1;
    }
    // Queries fill the rest but for filler where one would straddle two ranks'
    // chunks (at most q - 1 positions before each of the 2P - 1 chunk starts) and the tail.
    const int64_t rest = T + 1 - shape.pairs * pq, filler = rest - answers_here / vt * q;
    EXPECT_GE(filler, 0);
    EXPECT_LE(filler, (2 * s.parallel.context - 1) * (q - 1) + q - 1) << "queries fill the rest";
    // Every query lies on one rank: a lone value at a chunk's start would give
    // the rank its next answer without the pair (remote answers learned with no
    // K/V crossing at all: seen with one pair before this rule).
    for (int64_t t = 0; t < T; ++t) {
      if (answer[size_t(t)] == AnswerKind::none) continue;
      int64_t j = 0;
      while (tokens[size_t(t - j)] >= '0' && tokens[size_t(t - j)] <= '9') ++j;
      for (int64_t u = t + 1 - kt - j; u < std::min(T, t + 1 - kt - j + q); ++u)
        EXPECT_EQ(shape.owner[size_t(u)], shape.owner[size_t(t + 1 - kt - j)]) << "query at " << t + 1 - kt - j;
    }
  }
  if (s.parallel.context > 1) {
    EXPECT_GE(remote, 20 * 20) << "at least 20 remote answers per sequence";
  } else {
    EXPECT_EQ(remote, 0);
  }
}

TEST(RecallData, AnswersComeOnlyFromThePairsFirstCopy) {
  check_records(recall_scenario(4, "zigzag"), 12);                   // fused: keys a..l
  check_records(recall_scenario(4, "contiguous"), 12);
  check_records(recall_scenario(4, "zigzag", "text"), 52);           // 128-token first chunk: all 52 letters
  check_records(recall_scenario(4, "contiguous", "text"), 52);
  check_records(recall_scenario(4, "zigzag", "text", 2, 3), 25);     // 128 / 5 pairs
  check_records(recall_scenario(2, "zigzag", "text", 1, 2, 10), 10);
  check_records(recall_scenario(1, "zigzag", "text", 2, 1), 170);    // one rank, all local: 1024 / (2 · 3)
}

// validation_fraction does nothing for the recall task: not written, and a run
// recorded with it (before it was refused) reads back without it.
TEST(RecallData, RecordsCarryNoValidationFraction) {
  nlohmann::json recorded = to_json(recall_scenario(4, "zigzag"));
  EXPECT_FALSE(recorded["training"].contains("validation_fraction"));
  EXPECT_TRUE(to_json(builtin_scenario("default"))["training"].contains("validation_fraction"));
  recorded["training"]["validation_fraction"] = 0.1;  // as runs recorded it
  EXPECT_THROW(parse_scenario(recorded, "old run"), InputError);
  upgrade_recorded_scenario(recorded);
  EXPECT_EQ(parse_scenario(recorded, "old run").training.data_source, "recall");
}

TEST(RecallData, BadScenariosNameTheirKey) {
  try {
    recall_scenario(4, "zigzag", "fused", 1, 1, 13);
    FAIL() << "13 fused keys";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("training.recall_pairs"), std::string::npos) << e.what();
  }
  try {
    recall_scenario(4, "zigzag", "text", 2, 2, 33);
    FAIL() << "33 pairs of 4 tokens in 128";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("training.recall_pairs"), std::string::npos) << e.what();
  }
  nlohmann::json j = {{"name", "recall"},
                      {"model", {{"layers", 1}, {"d_model", 16}, {"heads", 2}, {"ffn_hidden", 32}, {"vocab", 256},
                                 {"seq_len", 64}}},
                      {"network", {{"model", "ideal"}, {"topology", "star"}, {"nodes", 1}, {"bandwidth", "1Gbps"}, {"latency", "1ms"}}},
                      {"training", {{"data_source", "recall"}, {"data", "x.txt"}}}};
  try {
    parse_scenario(j, "test");
    FAIL() << "a file with recall";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("training.data:"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lowband::data
