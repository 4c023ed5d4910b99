#pragma once
// GPT-2's byte-level BPE, read from OpenAI's encoder.json and vocab.bpe.
// Reproduces the reference encoder id for id: bytes are mapped to printable
// code points (bytes_to_unicode), the text is cut by GPT-2's regex
// (pretokenize.h), and each piece is merged pair by pair, lowest rank first
// (bpe.h: in O(n log n) for a table learned by BPE, as GPT-2's is).
//
// The special token <|endoftext|> (id 50256): encode() turns each occurrence of
// that exact string into id 50256 (as tiktoken does with allowed_special="all",
// which is how the corpora of data/ (data/README.md), whose documents are joined by a
// line holding only <|endoftext|>, were counted); encode_ordinary() treats it as
// plain text. The text around it is encoded separately, so " <|endoftext|>"
// gives [220, 50256].
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/data/bpe.h"
#include "runtime/data/tokenizer.h"

namespace lowband::data {

class Gpt2Tokenizer final : public Tokenizer {
 public:
  static constexpr TokenId kEndOfText = 50256;
  static constexpr std::string_view kEndOfTextText = "<|endoftext|>";

  // InputError naming the file (and line, for vocab.bpe) on a missing or bad file.
  explicit Gpt2Tokenizer(const Gpt2Files& files);

  std::vector<TokenId> encode(std::string_view text) const override;
  std::vector<TokenId> encode_ordinary(std::string_view text) const;
  std::string decode(const std::vector<TokenId>& ids) const override;
  int vocab_size() const override { return static_cast<int>(token_bytes_.size()); }
  std::string name() const override { return "gpt2"; }

 private:
  using PieceCache = std::unordered_map<std::string_view, std::vector<TokenId>>;
  // Appends the ids of one pre-tokenised piece.
  void encode_piece(std::string_view piece, std::vector<TokenId>& out) const;
  // Appends the ids of text with no special tokens.
  void encode_text(std::string_view text, PieceCache& cache, std::vector<TokenId>& out) const;

  std::vector<std::string> token_bytes_;       // id -> the raw bytes it stands for
  std::array<TokenId, 256> byte_token_{};      // byte -> its single-byte token
  BpeMergeTable merges_;                       // (left, right) -> rank and result
  bool proper_merges_ = true;                  // heap merging is exact (bpe.h)
};

}  // namespace lowband::data
