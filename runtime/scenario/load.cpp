// Reading scenario files: JSON syntax errors with line and column, duplicate keys,
// and --set overrides, whose errors name the flag.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "common/error.h"
#include "runtime/scenario/load.h"
#include "runtime/scenario/parse_internal.h"

namespace lowband {
namespace {

using nlohmann::json;
using scenario_detail::SchemaError;

bool is_index(const std::string& part) {
  return !part.empty() && part.size() < 10 && std::all_of(part.begin(), part.end(), [](unsigned char ch) { return std::isdigit(ch) != 0; });
}

void apply_one(json& document, const std::string& text) {
  scenario_detail::require_utf8(text, "--set");
  const std::string flag = "--set " + text;
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) throw InputError(flag, "expected PATH=VALUE, e.g. network.bandwidth=1Gbps");
  const std::string path = text.substr(0, eq), raw = text.substr(eq + 1);
  std::vector<std::string> parts;
  std::stringstream ss(path);
  for (std::string part; std::getline(ss, part, '.');) parts.push_back(part);
  if (path.back() == '.') parts.push_back("");
  for (const std::string& part : parts)
    if (is_index(part) && part.size() > 1 && part[0] == '0')
      throw InputError(flag, "index \"" + part + "\" in \"" + path + "\": write an array index without leading zeros");
  const std::optional<json> parsed =
      scenario_detail::parse_json_limited(raw, "", flag, /*syntax_errors_throw=*/false, {}, path);
  json value = parsed ? *parsed : json(raw);  // not JSON: a string such as 300Mbps

  json* at = &document;
  std::string walked;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    if (part.empty()) throw InputError(flag, "empty part in path \"" + path + "\"");
    if (at->is_null()) *at = is_index(part) ? json::array() : json::object();  // the schema keys no object by number
    if (at->is_object()) {
      at = &(*at)[part];
    } else if (at->is_array()) {
      if (!is_index(part))
        throw InputError(flag, scenario_detail::describe_path(walked) + " is an array: expected an index, got \"" + part + "\"");
      const size_t index = std::stoul(part);
      if (index > at->size())
        throw InputError(flag, "index " + part + " is out of range: " + scenario_detail::describe_path(walked) + " has " +
                                   std::to_string(at->size()) + " elements");
      if (index == at->size()) at->push_back(nullptr);
      at = &(*at)[index];
    } else {
      throw InputError(flag, scenario_detail::describe_path(walked) + " is " + at->type_name() + ", not an object or array");
    }
    walked = scenario_detail::join_path(walked, part);
  }
  *at = value;
  // A network file named here is read now, so that a later --set network.KEY applies to it.
  if (path == "network") scenario_detail::include_network_file(document, "", flag);
}

}  // namespace

void apply_overrides(nlohmann::json& document, const std::vector<std::string>& overrides) {
  for (const auto& o : overrides) apply_one(document, o);
}

namespace {

// A regular file's text and what parse_json_text makes of it (its line and column in errors).
json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw InputError(path, "cannot read the file");
  return scenario_detail::parse_json_text(text.str(), path);
}

}  // namespace

std::string scenario_detail::locate_file(const std::string& written, const std::string& source) {
  std::error_code ec;
  if (std::filesystem::exists(written, ec) || std::filesystem::path(written).is_absolute() ||
      source.rfind("builtin:", 0) == 0)
    return written;
  const std::filesystem::path beside = std::filesystem::path(source).parent_path() / written;
  return std::filesystem::exists(beside, ec) ? beside.string() : written;
}

void scenario_detail::include_network_file(json& document, const std::string& source, const std::string& place) {
  if (!document.is_object() || !document.contains("network") || !document["network"].is_string()) return;
  const std::string written = document["network"].get<std::string>();
  const std::string file = locate_file(written, source);
  std::error_code ec;
  if (written.empty() || !std::filesystem::is_regular_file(file, ec))
    throw InputError(place, "network: no such network file \"" + written +
                                "\" (a relative path is looked for in the working directory, then beside the "
                                "scenario file)");
  if (std::filesystem::file_size(file, ec) > scenario_detail::json_limits{}.max_bytes)
    throw InputError(file, "larger than a network file can be (4 MiB)");
  json network = read_json_file(file);
  if (!network.is_object())
    throw InputError(file, std::string("a network file holds the network section, an object; got ") + network.type_name());
  document["network"] = std::move(network);
}

Scenario scenario_detail::parse_with_overrides(const json& given, const std::string& source,
                              const std::vector<std::string>& overrides) {
  // A document that names a network file and was not read by load_scenario_file
  // (a built-in's text, a fuzzed document): its file read here.
  json document = given;
  include_network_file(document, source, source);
  try {
    Scenario s = scenario_detail::parse_document(document, source);
    s.source = source;
    return s;
  } catch (const SchemaError& e) {
    // The last --set that wrote at, above or below the error's path (or a related
    // one) is to blame: "--set a.typo=1" fails at a.typo, "--set c.method=mos" at c.
    auto under = [](const std::string& path, const std::string& prefix) {
      return path == prefix || path.rfind(prefix + ".", 0) == 0;
    };
    for (auto it = overrides.rbegin(); it != overrides.rend(); ++it) {
      const std::string set_path = it->substr(0, it->find('='));
      bool blamed = under(e.path(), set_path) || under(set_path, e.path());
      for (const auto& related : e.related()) blamed = blamed || under(related, set_path) || under(set_path, related);
      if (blamed) throw InputError("--set " + *it, e.what());
    }
    throw InputError(source, e.what());
  }
}

namespace {

json read_scenario_document(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(path, "no such scenario file");
  if (!std::filesystem::is_regular_file(path, ec)) throw InputError(path, "not a regular file");
  return read_json_file(path);
}

}  // namespace

Scenario load_scenario_file(const std::string& path, const std::vector<std::string>& overrides) {
  json document = read_scenario_document(path);
  scenario_detail::include_network_file(document, path, path);
  apply_overrides(document, overrides);
  return scenario_detail::parse_with_overrides(document, path, overrides);
}

std::optional<Scenario> load_network_file(const std::string& path) {
  const json document = read_scenario_document(path);
  if (!document.is_object() || !document.contains("topology") || document.contains("network")) return std::nullopt;
  json scenario = scenario_detail::parse_json_text(builtin_scenario_text("default"), path);
  scenario["parallel"] = json{{"context", 1}};
  scenario["network"] = document;
  return scenario_detail::parse_with_overrides(scenario, path, {});
}

Scenario load_recorded_scenario_file(const std::string& path, const std::vector<std::string>& overrides) {
  json document = read_scenario_document(path);
  upgrade_recorded_scenario(document);
  scenario_detail::include_network_file(document, path, path);
  apply_overrides(document, overrides);
  return scenario_detail::parse_with_overrides(document, path, overrides);
}

void upgrade_recorded_scenario(json& document) {
  if (!document.is_object()) return;
  // Recall runs recorded validation_fraction, which they never used (refused since).
  if (document.contains("training") && document["training"].is_object() &&
      document["training"].value("data_source", json()) == "recall")
    document["training"].erase("validation_fraction");
  if (!document.contains("compression")) return;
  json& c = document["compression"];
  if (!c.is_object()) return;
  const std::string method = c.contains("method") && c["method"].is_string() ? c["method"].get<std::string>() : "";
  if (method == "topk" || method == "quantize" || method == "drop") {
    // Recorded before the baselines had an uncompressed warm-up and final layer
    // (both keys always written since): every step and layer compressed.
    if (!c.contains("compress_final_layer")) c["warmup_steps"] = 0, c["compress_final_layer"] = true;
    return;
  }
  if (method != "mos") return;
  if (!c.contains("owner_kv")) c["owner_kv"] = "exact";
  if (!c.contains("compress_final_layer")) c["compress_final_layer"] = true;
  // No check kept U₀'s fit after the learning-rate warm-up: allow it where it ran so.
  // (Values of the wrong type are left for parse_scenario to name.)
  const auto integer_or = [](const json& o, const char* key, int64_t fallback) {
    return o.is_object() && o.contains(key) && o[key].is_number_integer() ? o[key].get<int64_t>() : fallback;
  };
  const bool warm_start = !(c.contains("warm_start") && c["warm_start"] == false);
  const int64_t warmup = warm_start ? integer_or(c, "warmup_steps", 500) : 0;
  const int64_t lr_warmup = document.contains("training") ? integer_or(document["training"], "lr_warmup_steps", 0) : 0;
  if (!c.contains("fit_during_lr_warmup") && warmup > 0 && warmup < lr_warmup) c["fit_during_lr_warmup"] = true;
}

}  // namespace lowband
