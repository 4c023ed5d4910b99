#include "runtime/data/unicode_class.h"

#include <algorithm>
#include <array>

namespace lowband::data {

namespace {
// ASCII is most of the text: a direct table avoids the binary search.
std::array<CodeClass, 128> ascii_classes() {
  std::array<CodeClass, 128> t{};
  for (int c = 0; c < 128; ++c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) t[c] = CodeClass::letter;
    else if (c >= '0' && c <= '9') t[c] = CodeClass::number;
    else if (c == ' ' || (c >= 0x09 && c <= 0x0D)) t[c] = CodeClass::space;
    else t[c] = CodeClass::other;
  }
  return t;
}
}  // namespace

CodeClass classify(uint32_t code_point) {
  static const std::array<CodeClass, 128> ascii = ascii_classes();  // immutable after init
  if (code_point < 128) return ascii[code_point];
  const detail::CodePointRange* begin = detail::kCodePointRanges;
  const detail::CodePointRange* end = begin + detail::kCodePointRangeCount;
  // First range whose last >= code_point.
  const auto* it = std::lower_bound(begin, end, code_point,
                                    [](const detail::CodePointRange& r, uint32_t cp) { return r.last < cp; });
  if (it != end && it->first <= code_point) return it->cls;
  return CodeClass::other;
}

Utf8Char decode_utf8(const char* p, const char* end) {
  const auto byte = [&](int i) { return static_cast<uint8_t>(p[i]); };
  const uint8_t b0 = byte(0);
  if (b0 < 0x80) return {b0, 1};
  int length = 0;
  uint32_t cp = 0;
  uint32_t min_cp = 0;
  if ((b0 & 0xE0) == 0xC0) { length = 2; cp = b0 & 0x1F; min_cp = 0x80; }
  else if ((b0 & 0xF0) == 0xE0) { length = 3; cp = b0 & 0x0F; min_cp = 0x800; }
  else if ((b0 & 0xF8) == 0xF0) { length = 4; cp = b0 & 0x07; min_cp = 0x10000; }
  else return {0xFFFFFFFFu, 1};
  if (end - p < length) return {0xFFFFFFFFu, 1};
  for (int i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return {0xFFFFFFFFu, 1};
    cp = (cp << 6) | (byte(i) & 0x3F);
  }
  if (cp < min_cp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0xFFFFFFFFu, 1};
  return {cp, length};
}

}  // namespace lowband::data
