#include "sim/simgrid_settings.h"

#include <charconv>
#include <cmath>
#include <vector>

namespace lowband::sim {
namespace {

enum class Type { boolean, number, word };

struct Setting {
  const char* key;
  Type type;
  double lo = 0, hi = 0;            // number: inclusive
  std::vector<std::string> words;  // word
};

// Each one tried on a replay at its bounds (SimGrid 3.32). Why these ranges:
//  network/model: ns-3 is not built in and Constant aborts the replay.
//  network/optim: TI (trace integration) is for CPU traces.
//  network/TCP-gamma: a TCP window in bytes; 0 is none; 1e12 is past any buffer.
//  network/bandwidth-factor, latency-factor: correction factors, within three orders of
//    magnitude of 1 (0 aborts, a negative one makes latency vanish).
//  network/weight-S: CM02/LV08's weight of competing streams (bytes).
//  maxmin/precision: the solver's precision in bytes/s (default 1e-5); -1 segfaults, 1 aborts.
//  surf/precision: the clock's precision in seconds (default 1e-9).
const std::vector<Setting>& settings() {
  static const std::vector<Setting> s = {
      {"network/model", Type::word, 0, 0, {"CM02", "LV08", "SMPI", "IB"}},
      {"network/optim", Type::word, 0, 0, {"Lazy", "Full"}},
      {"network/crosstraffic", Type::boolean, 0, 0, {}},
      {"network/maxmin-selective-update", Type::boolean, 0, 0, {}},
      {"network/TCP-gamma", Type::number, 0, 1e12, {}},
      {"network/bandwidth-factor", Type::number, 1e-3, 1e3, {}},
      {"network/latency-factor", Type::number, 1e-3, 1e3, {}},
      {"network/weight-S", Type::number, 0, 1e9, {}},
      {"maxmin/precision", Type::number, 1e-12, 1e-3, {}},
      {"surf/precision", Type::number, 1e-15, 1e-6, {}},
  };
  return s;
}

std::string number_text(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string describe(const Setting& s) {
  switch (s.type) {
    case Type::boolean: return "true or false";
    case Type::number: return "a number in [" + number_text(s.lo) + ", " + number_text(s.hi) + "]";
    case Type::word: {
      std::string out;
      for (const auto& w : s.words) out += (out.empty() ? "\"" : " or \"") + w + "\"";
      return out;
    }
  }
  return "";
}

}  // namespace

std::string simgrid_setting_problem(const std::string& key, const std::string& value) {
  for (const Setting& s : settings()) {
    if (key != s.key) continue;
    bool ok = false;
    switch (s.type) {
      case Type::boolean:
        // SimGrid's spellings of a boolean.
        for (const char* w : {"true", "false", "yes", "no", "on", "off", "1", "0"}) ok = ok || value == w;
        break;
      case Type::number: {
        double v = 0;
        const auto r = std::from_chars(value.data(), value.data() + value.size(), v);
        ok = r.ec == std::errc() && r.ptr == value.data() + value.size() && std::isfinite(v) && v >= s.lo &&
             v <= s.hi;
        break;
      }
      case Type::word:
        for (const auto& w : s.words) ok = ok || value == w;
        break;
    }
    return ok ? "" : "expected " + describe(s) + ", got \"" + value + "\"";
  }
  std::string known;
  for (const Setting& s : settings()) known += (known.empty() ? "" : ", ") + std::string(s.key);
  return "not a SimGrid setting lowband passes on (those that shape the network: " + known + ")";
}

std::string simgrid_settings_allowed() {
  std::string out;
  for (const Setting& s : settings())
    out += (out.empty() ? "`" : ", `") + std::string(s.key) + "` (" + describe(s) + ")";
  return out;
}

}  // namespace lowband::sim
