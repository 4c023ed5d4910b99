#include "runtime/estimate/grid.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>

#include "common/error.h"
#include "runtime/scenario/units.h"

namespace lowband {

namespace {

using nlohmann::json;

std::string value_text(const json& v) {  // strings bare, the rest as JSON
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string fmt(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

enum class Quantity { number, bandwidth, duration, bytes };

// A value's number: plain numbers as they are, bandwidths in bits/s, durations in
// seconds, sizes in bytes; nothing when it is none of these (or another kind than `kind`).
std::optional<double> numeric_value(const json& v, std::optional<Quantity>& kind) {
  const auto accept = [&kind](Quantity q, double x) -> std::optional<double> {
    if (kind && *kind != q) return std::nullopt;
    kind = q;
    return x;
  };
  if (v.is_number()) return accept(Quantity::number, v.get<double>());
  if (!v.is_string()) return std::nullopt;
  const std::string text = v.get<std::string>();
  const std::pair<Quantity, double (*)(const std::string&, const std::string&)> parsers[] = {
      {Quantity::bandwidth, units::parse_bandwidth}, {Quantity::duration, units::parse_duration},
      {Quantity::bytes, units::parse_bytes}};
  for (const auto& [q, parse] : parsers) {
    if (kind && *kind != q) continue;
    try {
      const double x = parse(text, "");
      return accept(q, q == Quantity::bandwidth ? 8 * x : x);
    } catch (const InputError&) {
    }
  }
  return std::nullopt;
}

std::optional<Quantity> axis_quantity(const grid::Axis& axis) {
  std::optional<Quantity> kind;
  for (const json& v : axis.values)
    if (!numeric_value(v, kind)) return std::nullopt;
  return kind;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

EstimateGrid estimate_grid(const grid::SweepPlan& plan) {
  EstimateGrid grid;
  grid.base_name = plan.base_name;
  grid.source = plan.spec.source;
  for (const grid::Axis& a : plan.spec.axes) grid.axes.push_back(a.key);
  for (const grid::SweepPoint& p : plan.points) grid.points.push_back({p, estimate(p.scenario)});
  return grid;
}

// Whether some point has network.dynamics: then the run on it gets columns too.
bool any_changing_network(const EstimateGrid& grid) {
  for (const EstimateGridPoint& g : grid.points)
    if (g.estimate.changing_network) return true;
  return false;
}

std::string format_grid_table(const EstimateGrid& grid) {
  const bool changing = any_changing_network(grid);
  std::vector<std::string> header = grid.axes;
  for (const char* h : {"step s", "tokens/s", "exposed comm s", "bound s", "bound", "step/bound", "MFU"})
    header.push_back(h);
  if (changing) header.insert(header.end(), {"run s (changing)", "lost s"});
  std::vector<std::vector<std::string>> rows;
  for (const EstimateGridPoint& g : grid.points) {
    std::vector<std::string> row;
    for (const auto& [key, value] : g.point.settings) row.push_back(value_text(value));
    const Estimate& e = g.estimate;
    row.push_back(fmt("%.4g", e.step_seconds));
    row.push_back(fmt(e.tokens_per_s >= 1000 ? "%.0f" : "%.4g", e.tokens_per_s));
    row.push_back(fmt("%.4g", e.exposed_comm_seconds));
    row.push_back(fmt("%.4g", e.bound.bound_seconds));
    row.push_back(e.bound.bound_kind);
    row.push_back(fmt("%.3g", e.bound.step_over_bound));
    row.push_back(fmt("%.1f %%", 100 * e.mfu));
    if (changing) {
      row.push_back(e.changing_network ? fmt("%.4g", e.changing_network->total_seconds) : "-");
      row.push_back(e.changing_network ? fmt("%.4g", e.changing_network->lost_seconds) : "-");
    }
    rows.push_back(std::move(row));
  }
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  const size_t axes = grid.axes.size();
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(width[c] - cells[c].size(), ' ');
      out += (c ? "  " : "") + (c < axes ? cells[c] + pad : pad + cells[c]);  // axes left, numbers right
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = "estimate " + grid.base_name + " (" + grid.source + "): " + std::to_string(grid.points.size()) +
                    " points\n\n" + line(header);
  for (const auto& row : rows) out += line(row);
  out += "\nbound: the step no schedule of the point's transfers beats on that network (busiest link's bytes / "
         "bandwidth, chain of latencies, or compute; the bytes of its collectives, parallel.exchange and "
         "parallel.all_reduce: another algorithm has its own bound); step/bound: how far the step is from it\n";
  if (changing)
    out += "run s (changing): training.steps steps back to back on network.dynamics; lost s: beyond the same "
           "steps on the nominal network\n";
  return out;
}

std::string grid_csv(const EstimateGrid& grid) {
  std::string out = "name";
  for (const std::string& key : grid.axes) out += "," + csv_field(key);
  const char* columns[] = {"step_seconds",   "tokens_per_s", "compute_seconds",      "exposed_comm_seconds",
                           "bound_seconds",  "bound_kind",   "step_over_bound",      "busiest_link",
                           "busiest_link_seconds", "latency_bound_seconds", "mfu"};
  for (const char* c : columns) out += std::string(",") + c;
  const bool changing = any_changing_network(grid);
  if (changing) out += ",changing_network_total_seconds,changing_network_lost_seconds";
  out += "\n";
  for (const EstimateGridPoint& g : grid.points) {
    const json j = to_json(g.estimate);
    out += csv_field(g.point.name);
    for (const auto& [key, value] : g.point.settings) out += "," + csv_field(value_text(value));
    for (const char* c : columns) out += "," + csv_field(value_text(j.at(c)));
    if (changing && g.estimate.changing_network)
      out += "," + csv_field(value_text(g.estimate.changing_network->total_seconds)) + "," +
             csv_field(value_text(g.estimate.changing_network->lost_seconds));
    else if (changing)
      out += ",,";
    out += "\n";
  }
  return out;
}

json grid_json(const EstimateGrid& grid) {
  json points = json::array();
  for (const EstimateGridPoint& g : grid.points) {
    json settings = json::object();
    for (const auto& [key, value] : g.point.settings) settings[key] = value;
    json p = {{"name", g.point.name}, {"settings", settings}};
    p.update(to_json(g.estimate));
    p["scenario"] = g.point.scenario.name;
    points.push_back(std::move(p));
  }
  return {{"scenario", grid.base_name}, {"scenario_source", grid.source}, {"axes", grid.axes}, {"points", points}};
}

int numeric_axis(const grid::SweepPlan& plan, const std::string& place) {
  for (size_t a = 0; a < plan.spec.axes.size(); ++a)
    if (axis_quantity(plan.spec.axes[a])) return int(a);
  throw InputError(place, plan.spec.axes.empty()
                              ? "needs a grid with a numeric axis, e.g. --set network.bandwidth=80Mbps,300Mbps,1Gbps"
                              : "no axis of the grid is numeric (a number or a quantity with a unit, e.g. "
                                "network.bandwidth=80Mbps,1Gbps) to draw tokens/s against");
}

report::Figure grid_figure(const EstimateGrid& grid, const grid::SweepPlan& plan, int axis, const std::string& name) {
  const grid::Axis& x_axis = plan.spec.axes[size_t(axis)];
  const Quantity q = *axis_quantity(x_axis);
  report::Figure f;
  f.name = name;
  f.title = "Estimated tokens/s vs " + x_axis.key + " (" + grid.base_name + ")";
  f.log_x = f.x_is_bandwidth = q == Quantity::bandwidth;
  f.x_label = q == Quantity::bandwidth  ? x_axis.key + " (bits/s, log scale)"
              : q == Quantity::duration ? x_axis.key + " (s)"
              : q == Quantity::bytes    ? x_axis.key + " (bytes)"
                                        : x_axis.key;
  f.y_label = "tokens/s (points: estimate; thin line: the bound)";
  // One series per combination of the other axes' values, in the grid's order.
  std::map<std::string, size_t> series_of;
  std::vector<std::pair<report::Series, report::Series>> series;  // estimate, bound
  for (const EstimateGridPoint& g : grid.points) {
    std::vector<std::pair<std::string, json>> others;
    for (size_t a = 0; a < g.point.settings.size(); ++a)
      if (int(a) != axis) others.push_back(g.point.settings[a]);
    const std::string title = others.empty() ? grid.base_name : grid::describe_settings(others);
    const auto [it, fresh] = series_of.emplace(title, series.size());
    if (fresh) {
      const int color = int(series.size());
      series.push_back({report::Series{title, {}, report::Series::Style::linespoints, color},
                        report::Series{title + ": bound", {}, report::Series::Style::lines, color}});
    }
    std::optional<Quantity> kind = q;
    const double x = *numeric_value(g.point.settings[size_t(axis)].second, kind);
    series[it->second].first.points.emplace_back(x, g.estimate.tokens_per_s);
    series[it->second].second.points.emplace_back(x, g.estimate.bound.max_tokens_per_s);
  }
  for (auto& [estimated, bound] : series) {
    std::sort(estimated.points.begin(), estimated.points.end());
    std::sort(bound.points.begin(), bound.points.end());
    f.series.push_back(std::move(estimated));
    f.series.push_back(std::move(bound));
  }
  return f;
}

}  // namespace lowband
