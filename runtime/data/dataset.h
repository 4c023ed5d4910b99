#pragma once
// A dataset is one token stream: a UTF-8 text file tokenized on load, a .u16
// token file read directly, or the built-in generated corpus (path "").
#include <string>
#include <vector>

#include "runtime/data/tokenizer.h"
#include "runtime/scenario/scenario.h"

namespace lowband::data {

struct Dataset {
  std::string source;      // the file it came from, or kBuiltinCorpusSource
  std::string tokenizer;   // "byte" or "gpt2"
  int vocab_size = 0;      // of that tokenizer: every id is below it
  bool generated = false;  // the built-in generated corpus, not real text
  std::vector<TokenId> tokens;  // empty for generated keyed recall (recall.h): no stream

  // One line for a run's output, e.g. "data: builtin:generated-stories (GENERATED
  // text, not a real corpus), byte tokenizer, 400123 tokens".
  std::string describe() const;
};

struct DatasetOptions {
  std::string tokenizer = "byte";                     // "byte" or "gpt2"
  std::string gpt2_dir;                               // "": search (gpt2_files.h)
  std::string data_place = "training.data";           // names the data setting in errors
  std::string tokenizer_place = "training.tokenizer"; // names the tokenizer setting in errors
};

// path "" gives the built-in corpus. A .u16 file is read as it is (each id must
// be below the tokenizer's vocabulary); any other file is read as UTF-8 text and
// tokenized (for "gpt2", the encoder files are looked up as gpt2_files.h says).
// Errors are InputErrors at options.data_place or options.tokenizer_place.
Dataset load_dataset(const std::string& path, const DatasetOptions& options = {});

// The dataset of a scenario's training section (training.data, training.tokenizer).
// A relative training.data is taken from the current directory, else from the
// directory of the scenario file.
Dataset load_training_dataset(const Scenario& scenario);

}  // namespace lowband::data
