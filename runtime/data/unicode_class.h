#pragma once
// Code-point classes for the GPT-2 pre-tokeniser, whose regex uses \p{L}
// (letters), \p{N} (numbers) and \s (white space). std::regex has no \p{...},
// so the classes come from a generated range table (unicode_ranges.cpp, made by
// gen_unicode_ranges.py from the Python `regex` module that the reference
// encoder runs with): all of Unicode is covered, at that module's Unicode version.
// Limits: code points added to Unicode after that version count as "other";
// bytes that are not valid UTF-8 are taken one at a time and count as "other"
// (the reference would refuse such text; byte-level BPE still round-trips them).
#include <cstdint>

namespace lowband::data {

enum class CodeClass : uint8_t { other, letter, number, space };

CodeClass classify(uint32_t code_point);

struct Utf8Char {
  uint32_t code_point = 0;  // 0xFFFFFFFF for an invalid byte
  int bytes = 1;            // 1 to 4
};

// Decodes one UTF-8 character at p (p < end). Overlong forms, surrogates and
// truncated sequences are invalid: they give one byte of class "other".
Utf8Char decode_utf8(const char* p, const char* end);

namespace detail {
struct CodePointRange {
  uint32_t first, last;  // inclusive
  CodeClass cls;
};
constexpr CodeClass L = CodeClass::letter, N = CodeClass::number, S = CodeClass::space;
extern const CodePointRange kCodePointRanges[];
extern const int kCodePointRangeCount;
}  // namespace detail

}  // namespace lowband::data
