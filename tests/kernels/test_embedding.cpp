// Embedding lookup and its scatter-add backward against float64 references.
#include <gtest/gtest.h>

#include "common/error.h"
#include "kernels/embedding.h"
#include "tests/kernels/reference.h"

namespace lowband::kernels {
namespace {

using namespace test;

struct EmbShape {
  int64_t n, vocab, d;
};

std::vector<double> ref_embedding(const std::vector<int32_t>& ids, const std::vector<double>& table,
                                  int64_t d) {
  std::vector<double> out;
  for (int32_t id : ids)
    out.insert(out.end(), table.begin() + id * d, table.begin() + (id + 1) * d);
  return out;
}

TEST(Embedding, ForwardAndBackwardMatchFloat64Reference) {
  // The last shape is large enough for the threaded path; small vocabularies
  // make repeated ids (which must add up in backward) certain.
  for (EmbShape s : {EmbShape{1, 1, 1}, EmbShape{5, 3, 17}, EmbShape{64, 37, 100},
                     EmbShape{300, 50, 301}}) {
    const uint64_t seed = fresh_seed();
    SCOPED_TRACE(seed_note(seed) + " n=" + std::to_string(s.n) + " d=" + std::to_string(s.d));
    Rng rng(seed);
    const auto ids = random_ints(rng, size_t(s.n), 0, int32_t(s.vocab - 1));
    const auto table = random_floats(rng, size_t(s.vocab * s.d));
    std::vector<float> out(size_t(s.n * s.d));
    poison(out);
    cpu::embedding_forward(ids.data(), s.n, table.data(), s.vocab, s.d, out.data());
    // A copy: exact.
    EXPECT_EQ(rel_error(out, ref_embedding(ids, to_double(table), s.d)), 0.0);

    // Backward accumulates into an existing dtable: dtable_ref = dtable0 + scatter(dout).
    const auto dout = random_floats(rng, size_t(s.n * s.d));
    auto dtable = random_floats(rng, size_t(s.vocab * s.d));
    auto want = to_double(dtable);
    for (int64_t i = 0; i < s.n; ++i)
      for (int64_t j = 0; j < s.d; ++j) want[size_t(ids[i] * s.d + j)] += dout[size_t(i * s.d + j)];
    cpu::embedding_backward(ids.data(), s.n, dout.data(), s.vocab, s.d, dtable.data());
    EXPECT_LT(rel_error(dtable, want), 1e-6);
  }
}

// dL/dtable for L = sum(G ∘ embedding(table)) by central differences in float64
// equals the backward's scatter of G.
TEST(Embedding, BackwardMatchesFiniteDifferences) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  Rng rng(seed);
  const int64_t n = 9, vocab = 4, d = 5;
  const auto ids = random_ints(rng, size_t(n), 0, int32_t(vocab - 1));
  const auto table = random_floats(rng, size_t(vocab * d));
  const auto G = random_floats(rng, size_t(n * d));
  const auto numeric = numeric_gradient(
      [&](const std::vector<double>& t) { return dot(to_double(G), ref_embedding(ids, t, d)); },
      to_double(table));
  std::vector<float> dtable(size_t(vocab * d), 0.0f);
  cpu::embedding_backward(ids.data(), n, G.data(), vocab, d, dtable.data());
  EXPECT_LT(rel_error(dtable, numeric), 1e-6);
}

TEST(Embedding, IdOutOfRangeIsInputErrorNamingTheIndex) {
  const std::vector<int32_t> ids = {0, 2, 7};
  const std::vector<float> table(3 * 2, 1.0f);
  std::vector<float> out(3 * 2);
  try {
    cpu::embedding_forward(ids.data(), 3, table.data(), 3, 2, out.data());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "embedding ids[2]");
  }
  const std::vector<int32_t> negative = {-1};
  std::vector<float> dtable(3 * 2, 0.0f);
  EXPECT_THROW(cpu::embedding_backward(negative.data(), 1, out.data(), 3, 2, dtable.data()),
               InputError);
}

}  // namespace
}  // namespace lowband::kernels
