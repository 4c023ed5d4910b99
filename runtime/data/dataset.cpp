#include "runtime/data/dataset.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "common/error.h"
#include "runtime/data/builtin_corpus.h"
#include "runtime/data/gpt2_files.h"
#include "runtime/data/gpt2_tokenizer.h"
#include "runtime/data/token_file.h"

namespace lowband::data {

namespace {

namespace fs = std::filesystem;

int vocab_of(const std::string& tokenizer, const std::string& place) {
  if (tokenizer == "byte") return 256;
  if (tokenizer == "gpt2") return Gpt2Tokenizer::kEndOfText + 1;
  throw InputError(place, "unknown tokenizer \"" + tokenizer + "\" (expected \"byte\" or \"gpt2\")");
}

std::string read_text(const std::string& path, const std::string& place) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    // A corpus that scripts/get-data.sh fetches (listed in data/SHA256SUMS): say how to get it.
    std::ifstream sums(fs::path(repository_data_dir()) / "SHA256SUMS");
    const std::string listed((std::istreambuf_iterator<char>(sums)), std::istreambuf_iterator<char>());
    const std::string name = fs::path(path).filename().string();
    const bool fetchable = !name.empty() && listed.find("  " + name + "\n") != std::string::npos;
    throw InputError(place, "no data file \"" + path + "\"" +
                                (fetchable ? " (scripts/get-data.sh " + name + " puts it in data/)" : ""));
  }
  if (!fs::is_regular_file(path, ec)) throw InputError(place, "\"" + path + "\" is not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(place, "cannot open data file \"" + path + "\"");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string Dataset::describe() const {
  return "data: " + source + (generated ? " (GENERATED text, not a real corpus)" : "") + ", " + tokenizer +
         " tokenizer, " + (tokens.empty() ? std::string("records generated per batch") : std::to_string(tokens.size()) + " tokens");
}

Dataset load_dataset(const std::string& path, const DatasetOptions& options) {
  Dataset d;
  d.tokenizer = options.tokenizer;
  d.vocab_size = vocab_of(options.tokenizer, options.tokenizer_place);
  d.source = path.empty() ? kBuiltinCorpusSource : path;
  d.generated = path.empty();
  if (!path.empty() && is_token_file(path)) {
    try {
      d.tokens = read_tokens(path);
    } catch (const InputError& e) {
      throw InputError(options.data_place, e.what());
    }
    for (size_t i = 0; i < d.tokens.size(); ++i)
      if (d.tokens[i] >= d.vocab_size)
        throw InputError(options.data_place,
                         path + ": token " + std::to_string(i) + " has id " + std::to_string(d.tokens[i]) +
                             ", outside the " + options.tokenizer + " vocabulary (" +
                             std::to_string(d.vocab_size) + "); is " + options.tokenizer_place + " right?");
  } else {
    const std::string text = path.empty() ? builtin_corpus() : read_text(path, options.data_place);
    Gpt2Files files;
    if (options.tokenizer == "gpt2") files = find_gpt2_files(path, options.gpt2_dir, options.tokenizer_place);
    d.tokens = make_tokenizer(options.tokenizer, files, options.tokenizer_place)->encode(text);
  }
  if (d.tokens.empty()) throw InputError(options.data_place, "\"" + d.source + "\" holds no tokens");
  return d;
}

Dataset load_training_dataset(const Scenario& scenario) {
  std::string path = scenario.training.data;
  if (!path.empty() && fs::path(path).is_relative() && !fs::exists(path)) {
    const fs::path beside_scenario = fs::path(scenario.source).parent_path() / path;
    std::error_code ec;
    if (scenario.source.rfind("builtin:", 0) != 0 && fs::exists(beside_scenario, ec)) path = beside_scenario.string();
  }
  DatasetOptions options;
  options.tokenizer = scenario.training.tokenizer;
  Dataset d = load_dataset(path, options);
  if (d.tokens.size() < size_t(scenario.model.seq_len) + 1)
    throw InputError(options.data_place, "\"" + d.source + "\" holds " + std::to_string(d.tokens.size()) +
                                             " tokens, fewer than one window of model.seq_len + 1 = " +
                                             std::to_string(scenario.model.seq_len + 1));
  return d;
}

}  // namespace lowband::data
