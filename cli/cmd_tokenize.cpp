// `lowband tokenize FILE --tokenizer gpt2|byte --out FILE.u16`: tokenizes a text
// file once, so runs read the ids directly instead of tokenizing at every start.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "common/error.h"
#include "runtime/data/gpt2_files.h"
#include "runtime/data/token_file.h"
#include "runtime/data/tokenizer.h"

namespace lowband::cli {

namespace {
struct TokenizeArgs {
  std::string input;
  std::string tokenizer = "gpt2";
  std::string out;
  std::string gpt2_dir;
};
}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto args = std::make_shared<TokenizeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize", "tokenize a UTF-8 text file once and write the ids as a .u16 file (raw little-endian uint16)");
  cmd->add_option("FILE", args->input, "the text file")->required();
  cmd->add_option("--tokenizer", args->tokenizer, "gpt2 or byte (default gpt2)");
  cmd->add_option("--out", args->out, "the .u16 file to write (atomically)")->required();
  cmd->add_option("--gpt2-dir", args->gpt2_dir,
                  "directory holding encoder.json and vocab.bpe (default: next to FILE, then "
                  "data/ of the source tree, then $LOWBAND_GPT2_DIR)");
  cmd->callback([args] {
    if (args->tokenizer != "gpt2" && args->tokenizer != "byte")
      throw InputError("--tokenizer", "expected gpt2 or byte, got \"" + args->tokenizer + "\"");
    if (!data::is_token_file(args->out)) throw InputError("--out", "the output file must end in .u16");
    std::error_code ec;
    if (!std::filesystem::is_regular_file(args->input, ec))
      throw InputError(args->input, std::filesystem::exists(args->input, ec) ? "not a regular file" : "no such file");
    std::ifstream in(args->input, std::ios::binary);
    if (!in) throw InputError(args->input, "cannot open text file");
    data::Gpt2Files files;
    if (args->tokenizer == "gpt2")
      files = data::find_gpt2_files(args->input, args->gpt2_dir, args->gpt2_dir.empty() ? "--tokenizer" : "--gpt2-dir");
    const auto tokenizer = data::make_tokenizer(args->tokenizer, files, "--tokenizer");
    if (flags_only()) return;  // checked: the text is not read, nothing written
    std::ostringstream text;
    text << in.rdbuf();

    // Timed: the encoding alone, not reading the file or loading the vocabulary.
    const auto start = std::chrono::steady_clock::now();
    const std::vector<data::TokenId> ids = tokenizer->encode(text.str());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    data::write_tokens(args->out, ids);
    std::printf("wrote %zu %s tokens (%zu bytes of text) to %s; encoding took %.3f s, %.0f tokens/s\n", ids.size(),
                tokenizer->name().c_str(), text.str().size(), args->out.c_str(), seconds,
                seconds > 0 ? static_cast<double>(ids.size()) / seconds : 0.0);
  });
}

}  // namespace lowband::cli
