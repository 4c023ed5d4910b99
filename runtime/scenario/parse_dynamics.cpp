// network.dynamics: how links and nodes change over the run, filled into
// sim::NetworkDynamic as sim/dynamics.h documents it. Each entry is a target
// ("node", "between" or neither: all), one quantity and its trace; trace files are
// read here, so a parsed scenario holds every point it replays.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "runtime/scenario/parse_internal.h"

namespace lowband::scenario_detail {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kQuantities = words_of(sim::dynamic_quantity_words());
const std::vector<std::string> kTraceKinds = {"steps", "file", "daily", "random_walk", "outages"};

// A trace's times and durations: SimGrid's clock is a double, but a run is not
// longer than decades. A factor's range: far past any real change of a link or a
// device, and clear of 0 (an outage is a state trace: a factor of 0 would stall a
// transfer forever instead of pausing it).
constexpr double kMaxTraceSeconds = 1e9;  // about 32 years
constexpr double kMinFactor = 1e-6, kMaxFactor = 1e6;
// A trace file's points are echoed inline in the resolved scenario.json, whose
// arrays are capped (json_limits::max_elements).
constexpr size_t kMaxPoints = 10000;
constexpr uintmax_t kMaxFileBytes = uintmax_t{64} << 20;  // far past 10000 lines, comments and all

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// The keys of `r` among `options`, in `options`' order.
std::vector<std::string> present(const ObjectReader& r, const std::vector<std::string>& options) {
  std::vector<std::string> out;
  for (const auto& key : options)
    if (r.has(key)) out.push_back(key);
  return out;
}

std::string listed(const std::vector<std::string>& options) {
  std::string out;
  for (size_t i = 0; i < options.size(); ++i)
    out += (i == 0 ? "" : i + 1 == options.size() ? " or " : ", ") + ("\"" + options[i] + "\"");
  return out;
}

// What is wrong with `v` as a value of a `quantity` trace ("" when nothing).
std::string value_problem(double v, const std::string& quantity) {
  if (quantity == "state")
    return v == 0 || v == 1 ? "" : "a state is 0 (down) or 1 (up), got " + number_text(v);
  if (v == 0)
    return "a " + quantity + " factor of 0 is refused: use a \"state\" trace for an outage (0 down, 1 up)";
  if (!(v >= kMinFactor && v <= kMaxFactor))
    return "a " + quantity + " factor (of the nominal value) is in [1e-06, 1e+06], got " + number_text(v);
  return "";
}

void check_value(double v, const std::string& path, const std::string& quantity) {
  const std::string problem = value_problem(v, quantity);
  if (!problem.empty()) fail(path, problem);
}

// A trace's time or duration: a string with a unit ("10min", "24h") or a number of seconds.
double trace_seconds(const json& v, const std::string& path) {
  double s = 0;
  if (v.is_string()) {
    s = as_duration(v, path);
  } else if (v.is_number()) {
    s = v.get<double>();
    if (!(s >= 0)) fail(path, "a duration must not be negative, got " + v.dump());
  } else {
    fail(path, "expected a duration (a string with a unit, e.g. \"10min\") or a number of seconds, got " + v.dump());
  }
  if (!(s <= kMaxTraceSeconds))
    fail(path, v.dump() + " is out of range: a trace's times and durations are at most 1e9 s (about 32 years)");
  return s == 0 ? 0.0 : s;
}

double seconds_or(const ObjectReader& r, const std::string& key, double fallback) {
  return r.has(key) ? trace_seconds(r.need(key), r.path_of(key)) : fallback;
}

// A trace's intervals (a period, a sample, a walk's step, an outage's mean): at
// least a second. A trace holds a point per change and the replay pays each one,
// so a nanosecond's sample over hours would be billions of points that no step
// can tell apart from a second's.
double interval_seconds_or(const ObjectReader& r, const std::string& key, double fallback) {
  const double s = seconds_or(r, key, fallback);
  if (!(s >= 1))
    fail(r.path_of(key), "must be at least 1s (a trace changes at most once a second), got " + r.need(key).dump());
  return s;
}

void check_increasing(double t, double previous, bool first, const std::string& path, const std::string& where = "") {
  if (!first && !(t > previous))
    fail(path, where + "times must increase strictly: " + number_text(t) + " s after " + number_text(previous) + " s");
}

// {"steps": [[T, V], ...]}
std::vector<sim::TracePoint> steps(const json& v, const std::string& path, const std::string& quantity) {
  const json& a = as_array(v, path);
  if (a.empty()) fail(path, "expected at least one [time, value] point");
  std::vector<sim::TracePoint> out;
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string at = join_path(path, std::to_string(i));
    if (!a[i].is_array() || a[i].size() != 2) fail(at, "expected [time, value], e.g. [\"1h\", 0.5], got " + a[i].dump());
    const double t = trace_seconds(a[i][0], join_path(at, "0"));
    check_increasing(t, out.empty() ? 0 : out.back().seconds, out.empty(), join_path(at, "0"));
    const double value = as_number(a[i][1], join_path(at, "1"), Bounds{});
    check_value(value, join_path(at, "1"), quantity);
    out.push_back({t, value});
  }
  return out;
}

bool parse_double(const std::string& token, double& out) {
  const char* begin = token.data() + (token.size() > 1 && token[0] == '+' ? 1 : 0);
  const auto res = std::from_chars(begin, token.data() + token.size(), out);
  return res.ec == std::errc() && res.ptr == token.data() + token.size() && std::isfinite(out);
}

// {"file": "path"}: one point a line, `seconds value`; blank lines and # comments.
std::vector<sim::TracePoint> file_points(const json& v, const std::string& path, const std::string& quantity,
                                         const std::string& source) {
  const std::string written = as_string(v, path);
  if (written.empty()) fail(path, "expected a file name, got \"\"");
  const std::string file = locate_file(written, source);
  std::error_code ec;
  const bool exists = fs::exists(file, ec);
  if (ec) fail(path, "cannot read the trace file \"" + file + "\": " + ec.message());
  if (!exists)
    fail(path, "no such trace file \"" + written + "\" (a relative path is looked for in the working directory, "
               "then beside the scenario file)");
  if (!fs::is_regular_file(file, ec)) fail(path, "\"" + file + "\" is not a regular file");
  if (const uintmax_t size = fs::file_size(file, ec); !ec && size > kMaxFileBytes)
    fail(path, "\"" + file + "\" is larger than 64 MiB: a trace holds at most " + std::to_string(kMaxPoints) +
                   " points");
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(path, "cannot read the trace file \"" + file + "\"");
  std::vector<sim::TracePoint> out;
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    const std::string where = file + ":" + std::to_string(number) + ": ";
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::vector<std::string> tokens;
    for (std::string w; words >> w;) tokens.push_back(w);
    if (tokens.empty()) continue;
    double t = 0, value = 0;
    if (tokens.size() != 2 || !parse_double(tokens[0], t) || !parse_double(tokens[1], value)) {
      std::string shown = line;
      while (!shown.empty() && std::isspace(static_cast<unsigned char>(shown.back()))) shown.pop_back();
      if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
      fail(path, where + "expected \"seconds value\" (two numbers), got \"" + shown + "\"");
    }
    if (!(t >= 0 && t <= kMaxTraceSeconds))
      fail(path, where + "time " + tokens[0] + " is out of range: a trace's times are 0..1e9 seconds");
    check_increasing(t, out.empty() ? 0 : out.back().seconds, out.empty(), path, where);
    const std::string problem = value_problem(value, quantity);
    if (!problem.empty()) fail(path, where + problem);
    if (out.size() == kMaxPoints)
      fail(path, where + "more than " + std::to_string(kMaxPoints) +
                     " points (the resolved scenario.json holds them inline, and its arrays hold at most that many)");
    out.push_back({t == 0 ? 0.0 : t, value});
  }
  if (in.bad()) fail(path, "cannot read the trace file \"" + file + "\"");
  if (out.empty()) fail(path, file + ": holds no points (expected lines of \"seconds value\")");
  return out;
}

// A generator's seed: a non-negative integer (a document built in code may hold it signed).
uint64_t seed(const ObjectReader& r) {
  const json& v = r.need("seed");
  if (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() > 0) return uint64_t(v.get<int64_t>());
  return as_uint64(v, r.path_of("seed"));
}

// A generated trace of a state would be neither 0 nor 1.
void refuse_for_state(const std::string& path, const std::string& kind, const std::string& quantity) {
  if (quantity == "state")
    fail(path, "a state is 0 or 1, which a " + kind + " trace does not give: use \"steps\", \"file\" or \"outages\"");
}

sim::TraceSpec trace(const json& v, const std::string& path, const std::string& quantity,
                     const std::string& source) {
  const ObjectReader r(v, path, kTraceKinds);
  const std::vector<std::string> kinds = present(r, kTraceKinds);
  if (kinds.empty()) fail(path, "expected a trace: one of " + listed(kTraceKinds));
  if (kinds.size() > 1) fail(r.path_of(kinds[1]), "one trace each: \"" + kinds[0] + "\" or \"" + kinds[1] + "\", not both");
  const std::string kind = kinds[0], at = r.path_of(kind);
  sim::TraceSpec t;
  if (kind == "steps" || kind == "file") {
    t.kind = sim::TraceSpec::Kind::points;
    t.points = kind == "steps" ? steps(r.need(kind), at, quantity) : file_points(r.need(kind), at, quantity, source);
    // Down for good: every step after it would wait for ever (with network.restart, relaunch for ever).
    if (quantity == "state" && !t.points.empty() && t.points.back().value == 0)
      fail(at, "the trace ends down (0 from " + number_text(t.points.back().seconds) +
                   " s on): a node or link that never comes back up stalls every later step for ever; end it with a "
                   "point back up (1)");
  } else if (kind == "daily") {
    refuse_for_state(at, kind, quantity);
    const ObjectReader d = r.object(kind, {"low", "low_at", "period", "sample"});
    t.kind = sim::TraceSpec::Kind::daily;
    t.low = d.number("low", Bounds{0, 1, true, false});
    check_value(t.low, d.path_of("low"), quantity);
    t.period_s = interval_seconds_or(d, "period", t.period_s);
    t.sample_s = interval_seconds_or(d, "sample", t.sample_s);
    if (t.sample_s > t.period_s)
      fail(d.path_of("sample"), "a sample of " + number_text(t.sample_s) + " s is longer than the period, " +
                                    number_text(t.period_s) + " s", {d.path_of("period")});
    t.low_at_s = seconds_or(d, "low_at", t.low_at_s);
    if (!(t.low_at_s < t.period_s))
      fail(d.path_of("low_at"), "the time of the low, " + number_text(t.low_at_s) + " s, must be within the period [0, " +
                                    number_text(t.period_s) + " s)", {d.path_of("period")});
  } else if (kind == "random_walk") {
    refuse_for_state(at, kind, quantity);
    const ObjectReader w = r.object(kind, {"seed", "every", "sigma", "min", "max"});
    t.kind = sim::TraceSpec::Kind::random_walk;
    t.seed = seed(w);
    t.every_s = interval_seconds_or(w, "every", t.every_s);
    t.sigma = w.number_or("sigma", t.sigma, Bounds::closed(0, 1));
    t.min = w.number_or("min", t.min, Bounds{0, 1, true, false});
    t.max = w.number_or("max", t.max, Bounds::at_least(1));
    check_value(t.min, w.path_of("min"), quantity);
    check_value(t.max, w.path_of("max"), quantity);
    // A walk that cannot move is a constant written at length: refused with what moves it.
    if (t.sigma == 0)
      fail(w.has("sigma") ? w.path_of("sigma") : at,
           "a random walk of sigma 0 never moves: give \"sigma\" > 0 (the log-factor's step, e.g. 0.1)");
    if (t.min == t.max)
      fail(w.has("min") ? w.path_of("min") : at,
           "min and max are both " + number_text(t.min) + ": the walk is clamped to a constant; give \"min\" < 1 or "
           "\"max\" > 1 (the defaults are 1)");
  } else {
    const ObjectReader o = r.object(kind, {"seed", "mean_up", "mean_down", "value"});
    t.kind = sim::TraceSpec::Kind::outages;
    t.seed = seed(o);
    t.mean_up_s = interval_seconds_or(o, "mean_up", t.mean_up_s);
    t.mean_down_s = interval_seconds_or(o, "mean_down", t.mean_down_s);
    t.value = o.has("value") ? as_number(o.need("value"), o.path_of("value"), Bounds{}) : 0.0;
    if (quantity == "state" && t.value != 0)
      fail(o.path_of("value"), "a state trace's outages are 0 (down), got " + number_text(t.value) + ": leave \"value\" out");
    check_value(t.value, o.path_of("value"), quantity);
  }
  return t;
}

sim::DynamicQuantity quantity_of(const std::string& key) { return value_of(sim::dynamic_quantity_words(), key); }

sim::DynamicTarget target(const ObjectReader& e, const ObjectReader& net_reader, const sim::NetworkSpec& net) {
  sim::DynamicTarget t;
  if (e.has("node") && e.has("between"))
    fail(e.path_of("between"), "give \"node\" or \"between\", not both", {e.path_of("node")});
  if (e.has("node")) {
    t.kind = sim::DynamicTarget::Kind::node;
    t.a = index_in(e.need("node"), e.path_of("node"), net.nodes, "node");
  } else if (e.has("between")) {
    t.kind = sim::DynamicTarget::Kind::between;
    const std::string topology = net_reader.path_of("topology");
    switch (net.topology) {
      case sim::Topology::star:
        fail(e.path_of("between"), "a star has no link between two nodes (each node has its own access link): "
                                   "target a node's access link with \"node\"", {topology});
      case sim::Topology::clusters:
        std::tie(t.a, t.b) = between(e, int(net.clusters.size()), "cluster");
        break;
      case sim::Topology::full_mesh:
      case sim::Topology::explicit_links:
        std::tie(t.a, t.b) = between(e, net.nodes, "node");
        break;
    }
    if (net.topology == sim::Topology::explicit_links &&
        std::none_of(net.pair_links.begin(), net.pair_links.end(),
                     [&](const sim::PairLink& l) { return l.a == t.a && l.b == t.b; }))
      fail(e.path_of("between"), "nodes " + std::to_string(t.a) + " and " + std::to_string(t.b) +
                                     " have no link between them (network.links does not list it)",
           {net_reader.path_of("links")});
  }
  return t;
}

}  // namespace

std::vector<sim::NetworkDynamic> parse_dynamics(const ObjectReader& r, const sim::NetworkSpec& net,
                                                const std::string& source) {
  std::vector<sim::NetworkDynamic> out;
  if (!r.has("dynamics")) return out;
  const std::string path = r.path_of("dynamics");
  const json& a = as_array(r.need("dynamics"), path);
  std::vector<std::string> known = {"node", "between"};
  known.insert(known.end(), kQuantities.begin(), kQuantities.end());
  for (size_t i = 0; i < a.size(); ++i) {
    const ObjectReader e(a[i], join_path(path, std::to_string(i)), known);
    sim::NetworkDynamic d;
    d.target = target(e, r, net);
    const std::vector<std::string> quantities = present(e, kQuantities);
    if (quantities.empty()) fail(e.path(), "expected the quantity the trace changes: one of " + listed(kQuantities));
    if (quantities.size() > 1)
      fail(e.path_of(quantities[1]), "one quantity an entry: \"" + quantities[0] + "\" and \"" + quantities[1] +
                                         "\" go in two entries");
    const std::string quantity = quantities[0];
    d.quantity = quantity_of(quantity);
    if (quantity == "speed" && d.target.kind == sim::DynamicTarget::Kind::between)
      fail(e.path_of("speed"), "a link has no compute speed: \"speed\" takes a \"node\" target or none (every node)",
           {e.path_of("between")});
    if (quantity == "latency" && net.model != sim::NetworkModel::ideal)
      fail(e.path_of("latency"), "a latency trace needs network.model \"ideal\": the replay pays a changing latency "
                                 "itself only there (the tcp model's handshake and slow start time the latency SimGrid "
                                 "holds)", {r.path_of("model")});
    if (quantity == "latency" && !net.simgrid_config.empty())
      fail(e.path_of("latency"), "a latency trace needs no network.simgrid settings: the replay pays a changing latency "
                                 "itself only with the ideal model's own settings (network.simgrid could change how "
                                 "SimGrid times latency)", {r.path_of("simgrid")});
    d.trace = trace(e.need(quantity), e.path_of(quantity), quantity, source);
    out.push_back(std::move(d));
  }
  return out;
}

std::optional<sim::RestartPolicy> parse_restart(const ObjectReader& r, const sim::NetworkSpec& net) {
  if (!r.has("restart")) return std::nullopt;
  const ObjectReader e = r.object("restart", {"stall_timeout", "relaunch"});
  if (!sim::takes_anything_down(net.dynamics))
    fail(e.path(), "has no effect without a \"state\" trace in network.dynamics: a step stalls only while a node or "
                   "link it needs is down", {r.path_of("dynamics")});
  sim::RestartPolicy p;
  // At least a second: each restart is a replay of its own, and a watchdog that
  // fires sooner than that would fire on a healthy network's jitter anyway.
  p.stall_timeout_seconds = trace_seconds(e.need("stall_timeout"), e.path_of("stall_timeout"));
  if (!(p.stall_timeout_seconds >= 1))
    fail(e.path_of("stall_timeout"), "must be at least 1s, got " + e.need("stall_timeout").dump());
  p.relaunch_seconds = trace_seconds(e.need("relaunch"), e.path_of("relaunch"));
  // The work an outage implies, bounded before any is done.
  const std::string dynamics_path = r.path_of("dynamics");
  for (size_t i = 0; i < net.dynamics.size(); ++i) {
    const sim::NetworkDynamic& d = net.dynamics[i];
    if (d.quantity != sim::DynamicQuantity::state) continue;
    const double down = sim::typical_longest_outage_seconds(d.trace);
    const double relaunches = down / (p.stall_timeout_seconds + p.relaunch_seconds);
    if (relaunches > sim::kMaxRelaunchesPerOutage)
      fail(e.path(), "an outage of " + number_text(down) + " s (" + join_path(dynamics_path, std::to_string(i)) +
                         (d.trace.kind == sim::TraceSpec::Kind::outages ? ", its mean_down" : "") + ") would relaunch " +
                         "the run about " + number_text(std::round(relaunches)) + " times, one replay each (at most " +
                         number_text(sim::kMaxRelaunchesPerOutage) + "): raise stall_timeout or relaunch, or shorten "
                         "the outage",
           {join_path(dynamics_path, std::to_string(i))});
  }
  return p;
}

}  // namespace lowband::scenario_detail
