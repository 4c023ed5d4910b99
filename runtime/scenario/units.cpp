#include "runtime/scenario/units.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <strings.h>
#include <vector>

#include "common/error.h"

namespace lowband::units {
namespace {

constexpr double kMaxBandwidth = 1e15;  // bytes/s
constexpr double kMaxSeconds = 1e12;
constexpr double kMaxBytes = 1e18;

// value_in_base = number * mul / div, with one of mul, div equal to 1 and both exact
// in binary, so a parsed value is the correctly rounded product or quotient.
struct Unit {
  const char* name;
  double mul;
  double div;
};

// Largest first within each family: the formatters walk them in this order.
const std::vector<Unit>& bandwidth_bit_units() {
  static const std::vector<Unit> u = {
      {"Tbps", 1.25e11, 1}, {"Gbps", 1.25e8, 1}, {"Mbps", 1.25e5, 1}, {"Kbps", 125, 1}, {"bps", 1, 8}};
  return u;
}
const std::vector<Unit>& bandwidth_byte_units() {
  static const std::vector<Unit> u = {{"TBps", 1e12, 1},           {"GBps", 1e9, 1},
                                      {"GiBps", 1073741824.0, 1}, {"MBps", 1e6, 1},
                                      {"MiBps", 1048576.0, 1},    {"KBps", 1e3, 1},
                                      {"KiBps", 1024, 1},         {"Bps", 1, 1}};
  return u;
}
const std::vector<Unit>& duration_units() {
  static const std::vector<Unit> u = {{"s", 1, 1}, {"ms", 1, 1e3}, {"us", 1, 1e6}, {"ns", 1, 1e9}};
  return u;
}
// Hours and minutes: parsed (a trace's period, "24h", "10min"), never written, so
// that every duration lowband writes or prints stays in s, ms, us or ns.
const std::vector<Unit>& long_duration_units() {
  static const std::vector<Unit> u = {{"h", 3600, 1}, {"min", 60, 1}};
  return u;
}
const std::vector<Unit>& byte_units() {
  static const std::vector<Unit> u = {{"TiB", 1099511627776.0, 1}, {"GB", 1e9, 1},
                                      {"GiB", 1073741824.0, 1},    {"MB", 1e6, 1},
                                      {"MiB", 1048576.0, 1},       {"KB", 1e3, 1},
                                      {"KiB", 1024, 1},            {"B", 1, 1}};
  return u;
}

// Length of the leading decimal number in `text` (sign, digits, fraction, exponent),
// or 0 when it does not start with one.
size_t number_length(const std::string& text) {
  size_t i = 0;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  size_t digits = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i, ++digits;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i, ++digits;
  }
  if (digits == 0) return 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    size_t j = i + 1;
    if (j < text.size() && (text[j] == '+' || text[j] == '-')) ++j;
    size_t exp_digits = 0;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j, ++exp_digits;
    if (exp_digits > 0) i = j;  // "5e" leaves "e" to the unit, which then fails
  }
  return i;
}

// `accepted` lists the units for the error message, smallest first.
// `limit` (written `limit_text`) bounds the magnitude in base units: far past any
// real network or model, and finite (a bandwidth of 1e308Tbps is inf bytes/s).
double parse_quantity(const std::string& text, const std::string& place, const char* what,
                      const std::vector<const std::vector<Unit>*>& families, const char* accepted, double limit,
                      const char* limit_text) {
  const std::string expected =
      std::string("expected ") + what + ": a number immediately followed by one of " + accepted;
  const size_t n = number_length(text);
  if (n == 0) throw InputError(place, "\"" + text + "\" does not start with a number; " + expected);
  // from_chars takes no leading '+'.
  const size_t skip = text[0] == '+' ? 1 : 0;
  double number = 0;
  const auto res = std::from_chars(text.data() + skip, text.data() + n, number);
  if (res.ec != std::errc() || res.ptr != text.data() + n || !std::isfinite(number))
    throw InputError(place, "\"" + text + "\" is out of range; " + expected);
  const std::string unit = text.substr(n);
  for (const auto* family : families)
    for (const auto& u : *family)
      if (unit == u.name) {
        const double value = u.div == 1 ? number * u.mul : number / u.div;
        if (!(std::fabs(value) <= limit)) throw InputError(place, "\"" + text + "\" is out of range: at most " + limit_text);
        return value;
      }
  std::string hint;
  for (const auto* family : families)
    for (const auto& u : *family)
      if (!unit.empty() && strcasecmp(unit.c_str(), u.name) == 0)
        hint += (hint.empty() ? " (units are case-sensitive: did you mean \"" : " or \"") + std::string(u.name) + "\"";
  if (!hint.empty()) hint += "?)";
  if (!unit.empty() && unit[0] == ' ') hint = " (no space between the number and the unit)";
  const std::string got = unit.empty() ? "no unit" : "unit \"" + unit + "\"";
  throw InputError(place, "\"" + text + "\" has " + got + hint + "; " + expected);
}

std::string shortest(double v) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

// The shortest exact spelling of `value` over `units`, preferring units in which
// the number is at least 1, and among equally short spellings the larger unit.
std::string exact(double value, const std::vector<Unit>& units) {
  std::string best;
  bool best_at_least_one = false;
  for (const auto& u : units) {
    const double v = u.div == 1 ? value / u.mul : value * u.div;
    for (double candidate : {v, std::nextafter(v, -INFINITY), std::nextafter(v, INFINITY)}) {
      const std::string number = shortest(candidate);
      double back = 0;
      std::from_chars(number.data(), number.data() + number.size(), back);
      if ((u.div == 1 ? back * u.mul : back / u.div) != value) continue;
      const bool at_least_one = std::fabs(candidate) >= 1 || value == 0;
      const std::string s = number + u.name;
      if (best.empty() || (at_least_one && !best_at_least_one) ||
          (at_least_one == best_at_least_one && s.size() < best.size())) {
        best = s;
        best_at_least_one = at_least_one;
      }
      break;
    }
  }
  return best;  // never empty: the last unit of each family has an exact spelling
}

std::string human(double value, const std::vector<Unit>& units) {
  const Unit* chosen = &units.back();
  for (const auto& u : units) {
    const double v = u.div == 1 ? value / u.mul : value * u.div;
    if (std::fabs(v) >= 1) {
      chosen = &u;
      break;
    }
  }
  const double v = chosen->div == 1 ? value / chosen->mul : value * chosen->div;
  char buf[64];
  if (std::fabs(v) >= 1e4)
    std::snprintf(buf, sizeof buf, "%.0f %s", v, chosen->name);
  else
    std::snprintf(buf, sizeof buf, "%.4g %s", v, chosen->name);
  return buf;
}

}  // namespace

double parse_bandwidth(const std::string& text, const std::string& place) {
  const double v =
      parse_quantity(text, place, "a bandwidth", {&bandwidth_bit_units(), &bandwidth_byte_units()},
                     "bps Kbps Mbps Gbps Tbps (bits), Bps KBps MBps GBps TBps KiBps MiBps GiBps (bytes)",
                     kMaxBandwidth, "1e15 bytes/s (8000Tbps)");
  if (!(v > 0)) throw InputError(place, "bandwidth must be positive, got \"" + text + "\"");
  return v;
}

double parse_duration(const std::string& text, const std::string& place) {
  const double v = parse_quantity(text, place, "a duration", {&long_duration_units(), &duration_units()},
                                  "h min s ms us ns", kMaxSeconds,
                                  "1e12 s (about 32,000 years)");
  if (v < 0) throw InputError(place, "duration must not be negative, got \"" + text + "\"");
  return v == 0 ? 0.0 : v;  // "-0s" is 0
}

double parse_bytes(const std::string& text, const std::string& place) {
  const double v = parse_quantity(text, place, "a size in bytes", {&byte_units()}, "B KB MB GB KiB MiB GiB TiB",
                                  kMaxBytes, "1e18 bytes (1 EB)");
  if (v < 0) throw InputError(place, "size must not be negative, got \"" + text + "\"");
  return v == 0 ? 0.0 : v;
}

std::string format_bandwidth(double bytes_per_s) { return human(bytes_per_s, bandwidth_bit_units()); }
std::string format_duration(double seconds) { return human(seconds, duration_units()); }
std::string format_bytes(double bytes) {
  static const std::vector<Unit> binary = {
      {"TiB", 1099511627776.0, 1}, {"GiB", 1073741824.0, 1}, {"MiB", 1048576.0, 1}, {"KiB", 1024, 1}, {"B", 1, 1}};
  return human(bytes, binary);
}

std::string exact_bandwidth(double bytes_per_s, bool in_bytes) {
  return exact(bytes_per_s, in_bytes ? bandwidth_byte_units() : bandwidth_bit_units());
}
std::string exact_duration(double seconds) { return exact(seconds, duration_units()); }
std::string exact_bytes(double bytes) { return exact(bytes, byte_units()); }

}  // namespace lowband::units
