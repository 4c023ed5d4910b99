// The optional "projection" section: {"scenario": "<built-in name>"} or
// {"scenario": {an inline scenario}}. The projected scenario is parsed as strictly
// as any other; it may not itself be projected.
#include "common/error.h"
#include "runtime/scenario/load.h"
#include "runtime/scenario/fields.h"
#include "runtime/scenario/parse_internal.h"

namespace lowband::scenario_detail {

ProjectionConfig parse_projection(const ObjectReader& root, const std::string& source) {
  ProjectionConfig p;
  if (!root.has("projection")) return p;
  const ObjectReader r = root.object("projection", fields::section("projection").keys());
  const std::string path = r.path_of("scenario");
  const json& value = r.need("scenario");
  json document;
  std::string inner_source = source;  // an inline scenario's relative files are the outer file's
  if (value.is_string()) {
    const std::string name = value.get<std::string>();
    try {
      inner_source = "builtin:" + name;
      document = parse_json_text(builtin_scenario_text(name), inner_source);
    } catch (const InputError& e) {
      throw SchemaError(path, path + ": " + e.what());
    }
  } else if (value.is_object()) {
    document = value;
  } else {
    throw SchemaError(path, path + ": expected a built-in scenario name or a scenario object, got " +
                                std::string(value.type_name()));
  }
  if (document.contains("projection"))
    throw SchemaError(path + ".projection", path + ": a projected scenario cannot itself be projected");
  try {
    p.scenario = std::make_shared<const Scenario>(parse_document(document, inner_source));
  } catch (const SchemaError& e) {
    // Point into the inline scenario: "projection.scenario.model.layers".
    throw SchemaError(join_path(path, e.path()), path + ": " + e.what());
  }
  return p;
}

}  // namespace lowband::scenario_detail
