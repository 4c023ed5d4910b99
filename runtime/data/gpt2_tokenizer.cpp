#include "runtime/data/gpt2_tokenizer.h"

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "runtime/data/bpe.h"
#include "runtime/data/pretokenize.h"
#include "runtime/data/unicode_class.h"

namespace lowband::data {

namespace {

// OpenAI's bytes_to_unicode(): printable bytes stand for themselves, the others
// are moved to code points 256 and up, so that no token string holds a space or
// a control character.
std::array<uint32_t, 256> bytes_to_unicode() {
  std::array<uint32_t, 256> map{};
  std::array<bool, 256> printable{};
  for (int b = '!'; b <= '~'; ++b) printable[b] = true;
  for (int b = 0xA1; b <= 0xAC; ++b) printable[b] = true;
  for (int b = 0xAE; b <= 0xFF; ++b) printable[b] = true;
  uint32_t next = 256;
  for (int b = 0; b < 256; ++b) map[b] = printable[b] ? static_cast<uint32_t>(b) : next++;
  return map;
}

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "cannot open file");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

Gpt2Tokenizer::Gpt2Tokenizer(const Gpt2Files& files) {
  const std::array<uint32_t, 256> byte_to_cp = bytes_to_unicode();
  std::unordered_map<uint32_t, uint8_t> cp_to_byte;
  for (int b = 0; b < 256; ++b) cp_to_byte[byte_to_cp[b]] = static_cast<uint8_t>(b);

  // encoder.json: {"token string": id, ...}
  nlohmann::json encoder;
  try {
    encoder = nlohmann::json::parse(read_whole_file(files.encoder_json));
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(files.encoder_json, std::string("invalid JSON: ") + e.what());
  }
  if (!encoder.is_object() || encoder.empty())
    throw InputError(files.encoder_json, "expected a JSON object mapping token strings to ids");
  if (encoder.size() > std::numeric_limits<TokenId>::max() + size_t{1})
    throw InputError(files.encoder_json, "more than 65,536 tokens do not fit uint16 ids");
  std::unordered_map<std::string, TokenId> id_of;
  id_of.reserve(encoder.size());
  token_bytes_.assign(encoder.size(), std::string());
  std::vector<bool> seen(encoder.size(), false);
  for (const auto& [token, value] : encoder.items()) {
    if (!value.is_number_unsigned() || value.get<uint64_t>() >= encoder.size())
      throw InputError(files.encoder_json + ": \"" + token + "\"",
                       "id must be an integer in [0, " + std::to_string(encoder.size()) + ")");
    const auto id = value.get<TokenId>();
    if (seen[id]) throw InputError(files.encoder_json + ": \"" + token + "\"", "id " + std::to_string(id) + " used twice");
    seen[id] = true;
    id_of.emplace(token, id);
    std::string bytes;
    for (const char* p = token.data(); p < token.data() + token.size();) {
      const Utf8Char c = decode_utf8(p, token.data() + token.size());
      const auto b = cp_to_byte.find(c.code_point);
      if (b == cp_to_byte.end())
        throw InputError(files.encoder_json + ": \"" + token + "\"", "not a byte-level token string");
      bytes.push_back(static_cast<char>(b->second));
      p += c.bytes;
    }
    token_bytes_[id] = std::move(bytes);
  }
  for (int b = 0; b < 256; ++b) {
    std::string token;
    const uint32_t cp = byte_to_cp[b];  // < 0x800: one or two UTF-8 bytes
    if (cp < 0x80) token.push_back(static_cast<char>(cp));
    else { token.push_back(static_cast<char>(0xC0 | (cp >> 6))); token.push_back(static_cast<char>(0x80 | (cp & 0x3F))); }
    const auto it = id_of.find(token);
    if (it == id_of.end()) throw InputError(files.encoder_json, "no token for byte " + std::to_string(b));
    byte_token_[b] = it->second;
  }

  // vocab.bpe: a "#version" line, then one merge "left right" per line, best first.
  std::istringstream bpe(read_whole_file(files.vocab_bpe));
  std::vector<bool> is_byte(token_bytes_.size(), false), produced(token_bytes_.size(), false);
  for (const TokenId id : byte_token_) is_byte[id] = true;
  std::string line;
  int line_number = 0;
  uint32_t rank = 0;
  while (std::getline(bpe, line)) {
    ++line_number;
    if (line.empty() || (line_number == 1 && line.rfind("#version", 0) == 0)) continue;
    const std::string place = files.vocab_bpe + ":" + std::to_string(line_number);
    const size_t space = line.find(' ');
    if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
      throw InputError(place, "expected two tokens separated by one space");
    const std::string left = line.substr(0, space), right = line.substr(space + 1);
    const auto a = id_of.find(left), b = id_of.find(right), ab = id_of.find(left + right);
    if (a == id_of.end() || b == id_of.end() || ab == id_of.end())
      throw InputError(place, "merge \"" + line + "\" uses a token missing from " + files.encoder_json);
    // Proper (bpe.h): the parts exist already, the result is new.
    if ((!is_byte[a->second] && !produced[a->second]) || (!is_byte[b->second] && !produced[b->second]) ||
        is_byte[ab->second] || produced[ab->second])
      proper_merges_ = false;
    produced[ab->second] = true;
    if (!merges_.emplace(bpe_pair_key(a->second, b->second), BpeMerge{rank++, ab->second}).second)
      throw InputError(place, "merge \"" + line + "\" is listed twice");
  }
  if (merges_.empty()) throw InputError(files.vocab_bpe, "no merges");
}

void Gpt2Tokenizer::encode_piece(std::string_view piece, std::vector<TokenId>& out) const {
  std::vector<TokenId> word(piece.size());
  for (size_t i = 0; i < piece.size(); ++i) word[i] = byte_token_[static_cast<uint8_t>(piece[i])];
  if (proper_merges_) bpe_merge_with_heap(word, merges_);
  else bpe_merge_by_rounds(word, merges_);
  out.insert(out.end(), word.begin(), word.end());
}

void Gpt2Tokenizer::encode_text(std::string_view text, PieceCache& cache, std::vector<TokenId>& ids) const {
  for (const std::string_view piece : gpt2_pretokenize(text)) {
    auto it = cache.find(piece);
    if (it == cache.end()) {
      std::vector<TokenId> piece_ids;
      encode_piece(piece, piece_ids);
      it = cache.emplace(piece, std::move(piece_ids)).first;
    }
    ids.insert(ids.end(), it->second.begin(), it->second.end());
  }
}

// A cache per call: text repeats its words, and keeping it local keeps encode()
// const and thread-safe. Its keys view `text`, which outlives the call.
std::vector<TokenId> Gpt2Tokenizer::encode_ordinary(std::string_view text) const {
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3 + 1);
  PieceCache cache;
  encode_text(text, cache, ids);
  return ids;
}

std::vector<TokenId> Gpt2Tokenizer::encode(std::string_view text) const {
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3 + 1);
  PieceCache cache;
  size_t start = 0;
  while (true) {
    const size_t hit = text.find(kEndOfTextText, start);
    encode_text(text.substr(start, hit == std::string_view::npos ? hit : hit - start), cache, ids);
    if (hit == std::string_view::npos) break;
    ids.push_back(kEndOfText);
    start = hit + kEndOfTextText.size();
  }
  return ids;
}

std::string Gpt2Tokenizer::decode(const std::vector<TokenId>& ids) const {
  std::string text;
  text.reserve(ids.size() * 4);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= token_bytes_.size())
      throw InputError("token " + std::to_string(i), "id " + std::to_string(ids[i]) +
                                                         " is outside the GPT-2 vocabulary (0.." +
                                                         std::to_string(token_bytes_.size() - 1) + ")");
    text += token_bytes_[ids[i]];
  }
  return text;
}

}  // namespace lowband::data
