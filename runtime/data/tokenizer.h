#pragma once
// Tokenizers behind one interface. Ids are uint16_t: every vocabulary here fits
// (byte: 256, GPT-2: 50,257), and .u16 token files store them as they are.
// The model's kernels take int32 ids; batch.h widens them.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace lowband::data {

using TokenId = uint16_t;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::vector<TokenId> encode(std::string_view text) const = 0;
  // InputError naming the position of an id outside [0, vocab_size()).
  virtual std::string decode(const std::vector<TokenId>& ids) const = 0;
  virtual int vocab_size() const = 0;
  virtual std::string name() const = 0;  // "byte" or "gpt2", as in training.tokenizer
};

// Vocabulary 256: each byte is its own id; any byte string round-trips.
class ByteTokenizer final : public Tokenizer {
 public:
  std::vector<TokenId> encode(std::string_view text) const override;
  std::string decode(const std::vector<TokenId>& ids) const override;
  int vocab_size() const override { return 256; }
  std::string name() const override { return "byte"; }
};

// Where GPT-2's two files are. find_gpt2_files() (gpt2_files.h) looks them up.
struct Gpt2Files {
  std::string encoder_json;  // token string -> id (OpenAI's encoder.json)
  std::string vocab_bpe;     // the merges in rank order (OpenAI's vocab.bpe)
};

// "byte" or "gpt2" (the GPT-2 files are only read for "gpt2"). An unknown name
// is an InputError at `place` (e.g. "training.tokenizer" or "--tokenizer").
std::unique_ptr<Tokenizer> make_tokenizer(const std::string& name, const Gpt2Files& gpt2_files,
                                          const std::string& place);

}  // namespace lowband::data
