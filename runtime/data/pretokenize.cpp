#include "runtime/data/pretokenize.h"

#include <cstddef>

#include "runtime/data/unicode_class.h"

namespace lowband::data {

namespace {

struct Cursor {
  const char* begin;
  const char* end;

  // The class and UTF-8 length of the character at byte offset i (i < size).
  CodeClass at(size_t i, int* bytes) const {
    const Utf8Char c = decode_utf8(begin + i, end);
    *bytes = c.bytes;
    return classify(c.code_point);
  }
  size_t size() const { return static_cast<size_t>(end - begin); }

  // End of the run of characters starting at i for which keep(class) holds.
  template <typename Keep>
  size_t run_end(size_t i, Keep keep) const {
    while (i < size()) {
      int bytes = 0;
      if (!keep(at(i, &bytes))) break;
      i += bytes;
    }
    return i;
  }
};

// Length of a contraction ('s 't 're 've 'm 'll 'd) at i, or 0.
size_t contraction(std::string_view t, size_t i) {
  if (t[i] != '\'' || i + 1 >= t.size()) return 0;
  const char a = t[i + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 < t.size()) {
    const char b = t[i + 2];
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  }
  return 0;
}

bool is_letter(CodeClass c) { return c == CodeClass::letter; }
bool is_number(CodeClass c) { return c == CodeClass::number; }
bool is_space(CodeClass c) { return c == CodeClass::space; }
bool is_other(CodeClass c) { return c == CodeClass::other; }

}  // namespace

std::vector<std::string_view> gpt2_pretokenize(std::string_view text) {
  std::vector<std::string_view> pieces;
  pieces.reserve(text.size() / 4 + 1);
  const Cursor cur{text.data(), text.data() + text.size()};
  size_t i = 0;
  while (i < text.size()) {
    size_t end = 0;
    if (const size_t n = contraction(text, i)) {
      end = i + n;
    } else {
      int bytes = 0;
      const CodeClass first = cur.at(i, &bytes);
      // " ?X+": an optional ASCII space, then a run of one class.
      CodeClass run_class = first;
      size_t run_start = i;
      if (text[i] == ' ' && i + 1 < text.size()) {
        int next_bytes = 0;
        const CodeClass next = cur.at(i + 1, &next_bytes);
        if (next != CodeClass::space) {
          run_class = next;
          run_start = i + 1;
        }
      }
      if (run_class == CodeClass::letter) end = cur.run_end(run_start, is_letter);
      else if (run_class == CodeClass::number) end = cur.run_end(run_start, is_number);
      else if (run_class == CodeClass::other) end = cur.run_end(run_start, is_other);
      else {
        // White space: \s+(?!\S) takes the run but leaves its last character
        // when a non-space follows (that character then joins the next piece
        // as " ?X+", or stands alone via \s+ when the run is one character).
        end = cur.run_end(i, is_space);
        if (end < text.size()) {
          size_t last = i;  // start of the run's last character
          for (size_t j = i; j < end;) {
            last = j;
            int b = 0;
            cur.at(j, &b);
            j += b;
          }
          if (last > i) end = last;
        }
      }
    }
    pieces.emplace_back(text.substr(i, end - i));
    i = end;
  }
  return pieces;
}

}  // namespace lowband::data
