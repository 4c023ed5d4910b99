#pragma once
// GPT-2's pre-tokenisation: the text is cut into pieces by OpenAI's regex
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// and BPE runs on each piece separately. Implemented by hand (std::regex has no
// \p{L}); the alternatives are tried in order at each position, as the regex
// engine does, with the code-point classes of unicode_class.h.
#include <string_view>
#include <vector>

namespace lowband::data {

// The pieces of `text` in order; concatenated they give `text` back.
std::vector<std::string_view> gpt2_pretokenize(std::string_view text);

}  // namespace lowband::data
