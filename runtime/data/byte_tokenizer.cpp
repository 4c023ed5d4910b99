#include "common/error.h"
#include "runtime/data/gpt2_tokenizer.h"
#include "runtime/data/tokenizer.h"

namespace lowband::data {

std::vector<TokenId> ByteTokenizer::encode(std::string_view text) const {
  std::vector<TokenId> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<uint8_t>(text[i]);
  return ids;
}

std::string ByteTokenizer::decode(const std::vector<TokenId>& ids) const {
  std::string text(ids.size(), '\0');
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] > 255)
      throw InputError("token " + std::to_string(i),
                       "id " + std::to_string(ids[i]) + " is outside the byte vocabulary (0..255)");
    text[i] = static_cast<char>(ids[i]);
  }
  return text;
}

std::unique_ptr<Tokenizer> make_tokenizer(const std::string& name, const Gpt2Files& gpt2_files,
                                          const std::string& place) {
  if (name == "byte") return std::make_unique<ByteTokenizer>();
  if (name == "gpt2") return std::make_unique<Gpt2Tokenizer>(gpt2_files);
  throw InputError(place, "unknown tokenizer \"" + name + "\" (expected \"byte\" or \"gpt2\")");
}

}  // namespace lowband::data
