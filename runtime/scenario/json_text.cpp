// Scenario JSON text to a document, strictly and in linear time: syntax errors and
// out-of-range numbers name source:line:column (and the JSON path), duplicate keys
// their path, and a text past the limits (json_limits in parse_internal.h) is
// refused before it costs time or memory downstream.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/scenario/parse_internal.h"

namespace lowband::scenario_detail {
namespace {

// Line and column (1-based) of the character at 1-based byte offset `byte`.
std::pair<size_t, size_t> line_column(const std::string& text, size_t byte) {
  const size_t end = std::min(std::max<size_t>(byte, 1) - 1, text.size());
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < end; ++i)
    if (text[i] == '\n') ++line, line_start = i + 1;
  return {line, end - line_start + 1};
}

std::string shortened(std::string s) {
  constexpr size_t kMax = 120;
  if (s.size() > kMax) s = s.substr(0, kMax) + "...";
  return s;
}

// Builds the document like nlohmann's own DOM parser, checking the limits and
// duplicate keys as it goes; on an error keeps the place and reason and stops.
class Builder {
 public:
  explicit Builder(const json_limits& limits) : limits_(limits) {}

  bool null() { return value(nullptr); }
  bool boolean(bool b) { return value(b); }
  bool number_integer(json::number_integer_t n) { return value(n); }
  bool number_unsigned(json::number_unsigned_t n) { return value(n); }
  bool number_float(json::number_float_t x, const std::string&) { return value(x); }
  bool string(std::string& s) { return value(std::move(s)); }
  bool binary(json::binary_t&) { return fail("binary values are not JSON"); }
  bool start_object(std::size_t) { return open(json::object(), true); }
  bool start_array(std::size_t) { return open(json::array(), false); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& k) {
    Frame& top = frames_.back();
    if (!top.keys.insert(k).second) return fail("duplicate key \"" + shortened(k) + "\"", path_with(k), true);
    if (top.keys.size() > limits_.max_elements)
      return fail("more than " + std::to_string(limits_.max_elements) + " keys in one object");
    top.label = k;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    position_ = position;
    std::string reason = e.what();
    // Keep nlohmann's reason, dropping its "[json.exception...] ... column N: " prefix.
    const size_t at = reason.find(", column ");
    const size_t colon = at == std::string::npos ? std::string::npos : reason.find(": ", at);
    if (colon != std::string::npos) reason = reason.substr(colon + 2);
    if (e.id == 406) reason = "number out of range: " + reason.substr(reason.find('\'') == std::string::npos ? 0 : reason.find('\''));
    else if (reason.rfind("[json.exception.", 0) == 0 && reason.find("] ") != std::string::npos)
      reason = reason.substr(reason.find("] ") + 2);
    syntax_ = e.id != 406;
    parse_failed_ = true;
    // The value being read: the key's in an object, the next index in an array.
    const std::string path = frames_.empty() ? ""
                             : frames_.back().is_object ? path_with(frames_.back().label)
                                                        : path_with(std::to_string(frames_.back().count));
    return fail(shortened(reason), path.empty() ? "(top level)" : path);
  }

  json result;
  std::string error, error_path;
  bool syntax_ = false, duplicate_ = false, parse_failed_ = false;
  size_t position_ = 0;

 private:
  struct Frame {
    json* node;
    bool is_object;
    std::set<std::string> keys;
    std::string label;  // the key (object) or index (array) of the child being read
    size_t count = 0;
  };

  std::string path_with(const std::string& last) const {
    std::string path;
    for (const Frame& f : frames_) path = join_path(path, &f == &frames_.back() ? last : f.label);
    return path;
  }
  bool fail(const std::string& why, const std::string& path = "", bool duplicate = false) {
    if (error.empty()) {
      error = why;
      error_path = path.empty() && !frames_.empty() ? path_with(frames_.back().label) : path;
      duplicate_ = duplicate;
    }
    return false;
  }
  json* place(json&& v) {
    if (frames_.empty()) {
      result = std::move(v);
      return &result;
    }
    Frame& top = frames_.back();
    if (top.is_object) return &((*top.node)[top.label] = std::move(v));
    if (++top.count > limits_.max_elements)
      return fail("more than " + std::to_string(limits_.max_elements) + " elements in one array"), nullptr;
    top.label = std::to_string(top.count - 1);
    top.node->push_back(std::move(v));
    return &top.node->back();
  }
  bool value(json&& v) { return place(std::move(v)) != nullptr; }
  bool open(json&& v, bool is_object) {
    if (frames_.size() >= limits_.max_depth)
      return fail("nested deeper than " + std::to_string(limits_.max_depth) + " levels");
    json* node = place(std::move(v));
    if (!node) return false;
    frames_.push_back({node, is_object, {}, "", 0});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return true;
  }

  const json_limits& limits_;
  std::vector<Frame> frames_;
};

}  // namespace

std::optional<json> parse_json_limited(const std::string& text, const std::string& source, const std::string& place,
                                       bool syntax_errors_throw, const json_limits& limits,
                                       const std::string& value_path) {
  if (text.size() > limits.max_bytes)
    throw InputError(place, "larger than " + std::to_string(limits.max_bytes) + " bytes (" + std::to_string(text.size()) +
                                "): not a scenario");
  Builder b(limits);
  if (json::sax_parse(text, &b, json::input_format_t::json, /*strict=*/true)) return std::move(b.result);
  if (b.syntax_ && !syntax_errors_throw) return std::nullopt;
  if (b.duplicate_) throw InputError(source, b.error_path + ": " + b.error);
  std::string where = source.empty() ? place : source;
  if (b.parse_failed_ && !source.empty()) {
    const auto [line, column] = line_column(text, b.position_);
    where += ":" + std::to_string(line) + ":" + std::to_string(column);
  }
  if (b.syntax_) throw InputError(where, "invalid JSON: " + b.error);
  // A --set value's paths are under its key: "training.lr", not "(top level)".
  std::string path = b.error_path;
  if (!value_path.empty()) path = path == "(top level)" || path.empty() ? value_path : join_path(value_path, path);
  throw InputError(where, (path.empty() ? "" : path + ": ") + b.error);
}

void require_utf8(const std::string& text, const std::string& place) {
  try {
    (void)json(text).dump();
  } catch (const json::type_error&) {
    throw InputError(place, "not valid UTF-8: " + json(text).dump(-1, ' ', true, json::error_handler_t::replace));
  }
}

json parse_json_text(const std::string& text, const std::string& source) {
  return *parse_json_limited(text, source, source, /*syntax_errors_throw=*/true);
}

}  // namespace lowband::scenario_detail
