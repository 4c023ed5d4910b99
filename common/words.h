#pragma once
// The words a scenario file spells an enum's values with, one table per enum:
// parsing, to_json, the key tables and schema (runtime/scenario/fields.h) and the
// names in messages read the same one (the table lives beside its enum).
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace lowband {

template <class E>
using Words = std::vector<std::pair<std::string, E>>;

// The value's word; "" when the table lacks the value.
template <class E>
const std::string& word_of(const Words<E>& words, E value) {
  static const std::string none;
  for (const auto& [word, e] : words)
    if (e == value) return word;
  return none;
}

// The value a word names; the word was checked against the table before (choice_or).
template <class E>
E value_of(const Words<E>& words, const std::string& word) {
  for (const auto& [w, e] : words)
    if (w == word) return e;
  throw std::logic_error("no value for the word \"" + word + "\"");
}

// Every word, in the table's order.
template <class E>
std::vector<std::string> words_of(const Words<E>& words) {
  std::vector<std::string> out;
  for (const auto& w : words) out.push_back(w.first);
  return out;
}

}  // namespace lowband
