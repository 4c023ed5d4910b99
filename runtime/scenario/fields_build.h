#pragma once
// Builders for the field tables (fields_*.cpp): a generic key bound to a member
// of the Scenario reads, writes and documents itself; a key the section's own
// code reads is documented only (doc_only).
#include <string>
#include <utility>
#include <vector>

#include "runtime/scenario/fields.h"
#include "runtime/scenario/json_reader.h"
#include "runtime/scenario/parse_internal.h"

namespace lowband::fields::build {

using scenario_detail::Bounds;
using scenario_detail::ObjectReader;
using nlohmann::json;

// Where a section's struct sits in the Scenario: +[](Scenario& s) -> ModelConfig& { return s.model; }.
template <class C>
using At = C& (*)(Scenario&);

template <class C>
const C& at_const(At<C> at, const Scenario& s) {
  return at(const_cast<Scenario&>(s));  // read only
}

// The README's spelling of a range: "integer ≥ 1", "integer 1..8", "number in [0, 1)".
std::string integer_type(int64_t lo, int64_t hi);
std::string number_type(const Bounds& b);
std::string choice_type(const std::vector<std::string>& choices);  // "`"a"` \| `"b"`"
std::string quoted(const std::string& s);                          // "`"s"`"

// Documentation and examples of every field.
struct Doc {
  std::string default_text;
  std::string doc;
  std::string example;
  Applies applies = {};
  std::string unit = "";
};

Field doc_only(std::string key, Kind kind, std::string type, Doc d);
inline Field with_choices(Field f, std::vector<std::string> choices) {
  f.choices = std::move(choices);
  return f;
}
// A key of a few words, read by its section's own code.
inline Field doc_choice(std::string key, std::vector<std::string> choices, Doc d) {
  Field f = doc_only(std::move(key), Kind::choice, choice_type(choices), std::move(d));
  f.choices = std::move(choices);
  return f;
}

template <class C, class T>
Field integer(std::string key, At<C> at, T C::*member, int64_t lo, int64_t hi, Doc d) {
  Field f = doc_only(key, Kind::integer, integer_type(lo, hi), std::move(d));
  f.lo = double(lo), f.hi = double(hi);
  const bool required = f.required();
  f.read = [=](const ObjectReader& r, Scenario& s) {
    T& v = at(s).*member;
    v = static_cast<T>(required ? r.integer(key, lo, hi) : r.integer_or(key, int64_t(v), lo, hi));
  };
  f.write = [=](const Scenario& s) { return json(at_const(at, s).*member); };
  return f;
}

template <class C>
Field number(std::string key, At<C> at, double C::*member, Bounds b, Doc d) {
  Field f = doc_only(key, Kind::number, number_type(b), std::move(d));
  f.lo = b.lo, f.hi = b.hi, f.lo_open = b.lo_open, f.hi_open = b.hi_open;
  f.read = [=](const ObjectReader& r, Scenario& s) {
    double& v = at(s).*member;
    v = r.number_or(key, v, b);
  };
  f.write = [=](const Scenario& s) { return json(at_const(at, s).*member); };
  return f;
}

template <class C>
Field boolean(std::string key, At<C> at, bool C::*member, Doc d) {
  Field f = doc_only(key, Kind::boolean, "bool", std::move(d));
  f.read = [=](const ObjectReader& r, Scenario& s) {
    bool& v = at(s).*member;
    v = r.boolean_or(key, v);
  };
  f.write = [=](const Scenario& s) { return json(at_const(at, s).*member); };
  return f;
}

// A string from a fixed list, stored as the string itself.
template <class C>
Field word(std::string key, At<C> at, std::string C::*member, std::vector<std::string> choices, Doc d) {
  Field f = doc_only(key, Kind::choice, choice_type(choices), std::move(d));
  f.choices = choices;
  f.read = [=](const ObjectReader& r, Scenario& s) {
    std::string& v = at(s).*member;
    v = r.choice_or(key, v, choices);
  };
  f.write = [=](const Scenario& s) { return json(at_const(at, s).*member); };
  return f;
}

// An enum spelled by words: {{"zigzag", CpSplit::zigzag}, ...}.
template <class C, class E>
Field choice(std::string key, At<C> at, E C::*member, std::vector<std::pair<std::string, E>> words, Doc d) {
  std::vector<std::string> names;
  for (const auto& w : words) names.push_back(w.first);
  Field f = doc_only(key, Kind::choice, choice_type(names), std::move(d));
  f.choices = names;
  f.read = [=](const ObjectReader& r, Scenario& s) {
    E& v = at(s).*member;
    std::string current;
    for (const auto& [name, e] : words)
      if (e == v) current = name;
    const std::string got = r.choice_or(key, current, names);
    for (const auto& [name, e] : words)
      if (name == got) v = e;
  };
  f.write = [=](const Scenario& s) {
    const E v = at_const(at, s).*member;
    for (const auto& [name, e] : words)
      if (e == v) return json(name);
    return json(nullptr);
  };
  return f;
}

// `f` tested from `from` (JSON text, "" for the default) with `sets` applied as well.
inline Field tested_from(Field f, std::string from, std::vector<std::string> sets = {}) {
  f.example_from = std::move(from);
  f.example_sets = std::move(sets);
  return f;
}
// `f` read by its section's own code (written generically).
inline Field hand_read(Field f) {
  f.read = nullptr;
  return f;
}

// The section's keys, for ObjectReader.
inline std::vector<std::string> keys(const Section& s) { return s.keys(); }

}  // namespace lowband::fields::build
