#pragma once
// Finding GPT-2's encoder.json and vocab.bpe (committed in the repository's
// data/, MIT-licensed: data/README.md). In each directory searched, the names
// "encoder.json"/"vocab.bpe" and "gpt2_encoder.json"/"gpt2_vocab.bpe" are accepted.
// Search order:
//   1. an explicit directory (--gpt2-dir), when given: only there;
//   2. the directory of the data file being tokenized;
//   3. the repository's data/ (its path fixed at build time);
//   4. the directory in the environment variable LOWBAND_GPT2_DIR.
#include <string>
#include <vector>

#include "runtime/data/tokenizer.h"

namespace lowband::data {

// The repository's data/ folder: committed corpora, the GPT-2 files, SHA256SUMS.
std::string repository_data_dir();

// The directories searched, in order (explicit_dir alone when it is non-empty).
std::vector<std::string> gpt2_search_dirs(const std::string& data_path, const std::string& explicit_dir = "");

// The first directory holding both files. When none does: an InputError at
// `place` (e.g. "training.tokenizer", "--gpt2-dir") listing where it looked.
Gpt2Files find_gpt2_files(const std::string& data_path, const std::string& explicit_dir,
                          const std::string& place);

}  // namespace lowband::data
