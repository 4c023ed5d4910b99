// Tokenizer speed: GPT-2 BPE and the byte tokenizer on tinyshakespeare.txt
// (1.1 MB), and the pre-tokeniser alone. Reads the repository's data/.
//   build-*/bench_tokenizer --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "runtime/data/gpt2_tokenizer.h"
#include "runtime/data/pretokenize.h"
#include "runtime/data/tokenizer.h"

namespace {

using namespace lowband::data;

const std::string kDataDir = std::string(LOWBAND_SOURCE_DIR) + "/data";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool have_data(benchmark::State& state) {
  if (std::filesystem::exists(kDataDir + "/tinyshakespeare.txt") && std::filesystem::exists(kDataDir + "/gpt2_vocab.bpe"))
    return true;
  state.SkipWithError(("no data in " + kDataDir).c_str());
  return false;
}

void report(benchmark::State& state, size_t bytes, size_t tokens) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["tokens_per_s"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Gpt2Encode(benchmark::State& state) {
  if (!have_data(state)) return;
  const Gpt2Tokenizer t({kDataDir + "/gpt2_encoder.json", kDataDir + "/gpt2_vocab.bpe"});
  const std::string text = read_file(kDataDir + "/tinyshakespeare.txt");
  size_t tokens = 0;
  for (auto _ : state) {
    const auto ids = t.encode(text);
    tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  report(state, text.size(), tokens);
}
BENCHMARK(BM_Gpt2Encode)->Unit(benchmark::kMillisecond);

// One 100,000-letter piece with no spaces (as in a FASTA or minified file): the
// case where merging in rounds is quadratic.
void BM_Gpt2EncodeLongPiece(benchmark::State& state) {
  if (!have_data(state)) return;
  const Gpt2Tokenizer t({kDataDir + "/gpt2_encoder.json", kDataDir + "/gpt2_vocab.bpe"});
  std::string text;
  uint64_t x = 1;
  for (int i = 0; i < 100000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    text.push_back(static_cast<char>('a' + (x >> 33) % 26));
  }
  size_t tokens = 0;
  for (auto _ : state) {
    const auto ids = t.encode(text);
    tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  report(state, text.size(), tokens);
}
BENCHMARK(BM_Gpt2EncodeLongPiece)->Unit(benchmark::kMillisecond);

void BM_Gpt2Load(benchmark::State& state) {
  if (!have_data(state)) return;
  for (auto _ : state) {
    const Gpt2Tokenizer t({kDataDir + "/gpt2_encoder.json", kDataDir + "/gpt2_vocab.bpe"});
    benchmark::DoNotOptimize(t.vocab_size());
  }
}
BENCHMARK(BM_Gpt2Load)->Unit(benchmark::kMillisecond);

void BM_Gpt2Pretokenize(benchmark::State& state) {
  if (!have_data(state)) return;
  const std::string text = read_file(kDataDir + "/tinyshakespeare.txt");
  size_t pieces = 0;
  for (auto _ : state) {
    const auto p = gpt2_pretokenize(text);
    pieces = p.size();
    benchmark::DoNotOptimize(p.data());
  }
  report(state, text.size(), pieces);
}
BENCHMARK(BM_Gpt2Pretokenize)->Unit(benchmark::kMillisecond);

void BM_ByteEncode(benchmark::State& state) {
  if (!have_data(state)) return;
  const ByteTokenizer t;
  const std::string text = read_file(kDataDir + "/tinyshakespeare.txt");
  for (auto _ : state) {
    const auto ids = t.encode(text);
    benchmark::DoNotOptimize(ids.data());
  }
  report(state, text.size(), text.size());
}
BENCHMARK(BM_ByteEncode)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
