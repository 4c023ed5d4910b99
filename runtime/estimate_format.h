#pragma once
// The pieces of `lowband estimate`'s terminal tables that the context and the
// pipeline estimates share: numbers with SI prefixes, one "key  value" row, the
// model's one-line description.
#include <cmath>
#include <cstdio>
#include <string>

#include "runtime/scenario/scenario.h"

namespace lowband::estimate_format {

inline std::string si(double value, const char* unit) {  // 1.23 G<unit>
  const char* prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  while (std::abs(value) >= 1000 && i < 6) value /= 1000, ++i;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g %s%s", value, prefixes[i], unit);
  return buf;
}

inline std::string fmt(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

inline void row(std::string& out, const char* key, const std::string& value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%-22s", key);
  out += buf + value + "\n";
}

inline std::string describe_model(const ModelConfig& m) {
  return std::to_string(m.layers) + " layers, d_model " + std::to_string(m.d_model) + ", " +
         std::to_string(m.heads) + " heads (" + std::to_string(m.kv_heads) + " kv), ffn " +
         std::to_string(m.ffn_hidden) + ", vocab " + std::to_string(m.vocab) + ", " + si(m.parameters(), "params");
}

}  // namespace lowband::estimate_format
