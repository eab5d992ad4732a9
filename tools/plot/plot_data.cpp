#include "tools/plot/plot_data.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "tools/sweep/columns.hpp"
#include "tools/sweep/golden.hpp"

namespace tpusim::cli {
namespace {

using sweep::CsvTable;

constexpr const char* kExposedShare = "exposed_comm_share";

struct MetricStyle {
  const char* column;
  const char* file;
  const char* title;
  const char* y_label;
  bool percent;
  double log_above_ratio;  ///< log y axis when the values span more than this
  /// The y axis starts at 0 (times, shares, efficiencies: a reader compares their heights);
  /// otherwise it is fitted and drawn with a break at its foot.
  bool from_zero;
};

// The standard charts; the y label carries the unit.
constexpr MetricStyle kStandard[] = {
    {"step_time_ms", "step_time", "Step time", "step time (ms)", false, 20, true},
    {"examples_per_s_per_chip", "examples_per_chip", "Throughput per chip",
     "examples per second per chip", false, 20, false},
    {"scaling_efficiency", "scaling_efficiency", "Scaling efficiency",
     "per-chip throughput relative to the smallest point (%)", true, 0, true},
    {"comm_share", "comm_share", "Communication share", "communication share of step time (%)",
     true, 0, true},
    // Where collectives overlap compute (hardware.async_collectives), the standard chart shows
    // this one instead of comm_share: exposed_communication_ms / step_time_ms of each point.
    {kExposedShare, "exposed_comm_share", "Exposed communication share",
     "exposed communication share of step time (%)", true, 0, true},
    // Sweeps of `tpusim train` (branch train) add this column.
    {"time_to_train_s", "time_to_train", "Time to train", "time to train (s)", false, 20, true},
    // Sweeps add it where the memory model knows the Program (docs/memory.md).
    {"peak_memory_GiB", "peak_memory", "Peak memory per core", "peak HBM per core (GiB)", false, 20,
     false},
    // The language-model metrics of the reports (docs/llm.md, "Reports"): MaxText's names.
    {"mfu", "mfu", "Model FLOPs utilization", "MFU: model FLOPs / peak FLOPs (%)", true, 0, true},
    {"hfu", "hfu", "Hardware FLOPs utilization", "HFU: FLOPs run / peak FLOPs (%)", true, 0, true},
    {"tokens_per_s_per_chip", "tokens_per_chip", "Tokens per second per chip",
     "tokens per second per chip", false, 20, false},
    // Serve sweeps ("command": "serve", docs/serving.md): latency against load.
    {"ttft_ms_p99", "ttft_p99", "Time to first token, p99", "p99 TTFT (ms)", false, 20, true},
    {"tpot_ms_p99", "tpot_p99", "Time per output token, p99", "p99 TPOT (ms)", false, 20, true},
    {"requests_per_s", "requests_per_s", "Throughput", "requests per second", false, 20, true},
    {"goodput_requests_per_s", "goodput", "Goodput", "requests per second within the limits", false,
     20, true},
    // Multislice sweeps: the collectives' time over the data-center network.
    {"communication_dcn_ms", "communication_dcn", "Communication over the DCN",
     "communication over the data-center network (ms)", false, 20, true},
};

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string file_stem(const std::string& name) {
  std::string s;
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}

/// Style of any numeric column: shares, utilisations and efficiencies are fractions shown as
/// percent; the unit is the key name's suffix (step_time_ms -> ms, peak_hbm_GiB -> GiB).
MetricStyle style_of(const std::string& column, std::string& label_storage) {
  for (const auto& m : kStandard)
    if (column == m.column) return m;
  const bool percent = column.find("share") != std::string::npos ||
                       column.find("utilization") != std::string::npos ||
                       column.find("efficiency") != std::string::npos ||
                       column.find("fraction") != std::string::npos;
  std::string unit;
  for (const char* u : {"_ms", "_s", "_us", "_ns", "_GiB", "_MiB", "_KiB", "_bytes", "_GBps"})
    if (ends_with(column, u)) unit = std::string(u).substr(1);
  label_storage = column + (percent ? " (%)" : unit.empty() ? "" : " (" + unit + ")");
  const bool time = unit == "ms" || unit == "s" || unit == "us" || unit == "ns";
  return {column.c_str(), nullptr, column.c_str(), label_storage.c_str(),
          percent,        0,       percent || time};
}

bool is_numeric_column(const CsvTable& t, const std::string& column) {
  if (t.column(column) < 0) return false;
  bool any = false;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    if (t.cell(r, column).empty()) continue;
    if (!t.number(r, column)) return false;
    any = true;
  }
  return any;
}

/// Numeric result columns beyond the standard charts and the breakdown (time to train, memory,
/// stalls, ... as the reports grow): every numeric column except the swept ones, bookkeeping
/// (point, id, chips, cores, wall_s) and the metrics the standard charts already show.
std::vector<std::string> extra_metric_columns(const CsvTable& t) {
  const auto swept = sweep::swept_columns(t);
  std::set<std::string> shown{
      "point", "id", "chips", "cores", "wall_s", "examples_per_s_per_chip", "scaling_efficiency"};
  for (const auto& c : sweep::report_metric_columns()) shown.insert(c);
  for (const auto& m : kStandard) shown.insert(m.column);  // charted once, not again as extra
  std::vector<std::string> out;
  for (const auto& c : t.header)
    if (!shown.count(c) && std::find(swept.begin(), swept.end(), c) == swept.end() &&
        is_numeric_column(t, c))
      out.push_back(c);
  return out;
}

/// The parts of the time breakdown: compute, exposed communication, then every *stall*_ms.
std::vector<std::pair<std::string, std::string>> breakdown_parts(const CsvTable& t) {
  std::vector<std::pair<std::string, std::string>> parts;
  if (!is_numeric_column(t, "compute_ms") || !is_numeric_column(t, "exposed_communication_ms"))
    return parts;
  parts = {{"compute_ms", "compute"}, {"exposed_communication_ms", "exposed communication"}};
  for (const auto& c : t.header)
    if (c.find("stall") != std::string::npos && ends_with(c, "_ms")) {
      std::string label = c.substr(0, c.size() - 3);
      std::replace(label.begin(), label.end(), '_', ' ');
      parts.emplace_back(c, label);
    }
  return parts;
}

bool did_not_succeed(const std::string& status) {
  return !status.empty() && status != "ok" && status != "pending";
}

/// A row's curve: its series label without the x column's value.
std::string group_of(const CsvTable& t, std::size_t r, const std::string& x) {
  if (t.column("series") < 0) return "(all points)";
  std::string label = t.cell(r, "series");
  const std::string token = x + "=" + t.cell(r, x);
  if (auto pos = label.find(token); pos != std::string::npos) {
    label.erase(pos, token.size());
    while (label.find("  ") != std::string::npos) label.erase(label.find("  "), 1);
    while (!label.empty() && label.back() == ' ') label.pop_back();
    while (!label.empty() && label.front() == ' ') label.erase(0, 1);
  }
  if (label.empty()) label = t.column("model") >= 0 ? t.cell(r, "model") : "";
  return label.empty() ? "(all points)" : label;
}

/// A label as drawn: at most kPlotLabelChars characters (UTF-8 kept whole), "..." after a cut;
/// charts.json keeps the whole label. A 100,000-character label overflowed the drawing library.
constexpr std::size_t kPlotLabelChars = 200;
std::string drawn_label(const std::string& s) {
  std::size_t bytes = 0, chars = 0;
  while (bytes < s.size() && chars < kPlotLabelChars) {
    ++bytes;
    while (bytes < s.size() && (static_cast<unsigned char>(s[bytes]) & 0xC0) == 0x80) ++bytes;
    ++chars;
  }
  return bytes < s.size() ? s.substr(0, bytes) + "..." : s;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "(none)" : s;
}

}  // namespace

std::string default_x_column(const CsvTable& t) {
  std::map<std::string, std::set<std::string>> chips_of;
  for (std::size_t r = 0; r < t.rows.size(); ++r)
    chips_of[group_of(t, r, "chips")].insert(t.cell(r, "chips"));
  for (const auto& [g, chips] : chips_of)
    if (chips.size() > 1) return "chips";
  for (const auto& c : sweep::swept_columns(t)) {
    std::set<std::string> values;
    for (std::size_t r = 0; r < t.rows.size(); ++r) values.insert(t.cell(r, c));
    if (values.size() > 1) return c;
  }
  return "chips";
}

namespace {

/// The metrics to chart: --y, or the standard ones the table has; every problem at once.
std::vector<std::string> metrics_to_plot(const CsvTable& t, const PlotRequest& req,
                                         const std::string& csv, const std::string& x) {
  ProblemList problems;
  if (t.column("status") < 0)
    problems.add(csv, "no column 'status': not a results.csv of tpusim sweep");
  if (t.column(x) < 0)
    problems.add("--x " + x, "not a column of " + csv + "; the swept columns are " +
                                 join(sweep::swept_columns(t)));
  std::vector<std::string> ys = req.y;
  if (ys.empty()) {
    // A serve sweep's results have latencies in place of the step time.
    const char* step = t.column("ttft_ms_p99") >= 0 ? "ttft_ms_p99" : "step_time_ms";
    for (const char* c : {"series", "chips", step})
      if (t.column(c) < 0)
        problems.add(csv, std::string("no column '") + c + "': not a results.csv of tpusim sweep");
    problems.throw_if_any();
    // A standard metric a kind of report leaves empty (a `train` sweep has no comm_share) is
    // skipped, not an error.
    // Where collectives overlap compute the exposed share is what the step pays: it replaces
    // the share of time with a collective in flight.
    const bool overlap = is_numeric_column(t, kExposedShare);
    for (const auto& m : kStandard)
      if (is_numeric_column(t, m.column) && !(overlap && std::string(m.column) == "comm_share"))
        ys.push_back(m.column);
    for (const auto& c : extra_metric_columns(t)) ys.push_back(c);
  }
  for (const auto& y : ys)
    if (!is_numeric_column(t, y))
      problems.add("--y " + y,
                   std::string(t.column(y) < 0 ? "not a column" : "not a numeric column") + " of " +
                       csv +
                       "; numeric columns include step_time_ms, "
                       "comm_share, examples_per_s_per_chip, ...");
  problems.throw_if_any();
  return ys;
}

/// The rows a plot draws (ok ones) or marks (failed ones), their x axis and their series.
struct PlotRows {
  const CsvTable& t;
  std::string x;
  std::vector<std::size_t> rows;
  bool numeric_x = true;
  std::vector<std::string> categories;
  Axis x_axis;
  std::vector<std::string> groups;
  std::vector<std::string> group_of_row;  ///< per table row: its series (group_of, once)

  const std::string& group(std::size_t r) const { return group_of_row[r]; }
  double x_of(std::size_t r) const {
    return numeric_x
               ? *t.number(r, x)
               : static_cast<double>(std::find(categories.begin(), categories.end(), t.cell(r, x)) -
                                     categories.begin());
  }
};

PlotRows plot_rows(const CsvTable& t, const std::string& x, const std::string& csv) {
  PlotRows p{t, x, {}, true, {}, {}, {}, {}};
  for (std::size_t r = 0; r < t.rows.size(); ++r) p.group_of_row.push_back(group_of(t, r, x));
  // Rows that count: ok ones drawn, failed ones marked; pending ones are not results yet.
  bool any_ok = false;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const std::string& st = t.cell(r, "status");
    if (st == "ok" || did_not_succeed(st)) p.rows.push_back(r);
    any_ok = any_ok || st == "ok";
  }
  if (!any_ok)
    throw ConfigError(csv, "no successful points to plot (every row's status is not ok)");

  // The x axis: numbers if every used cell is one, else categories in order of appearance.
  std::vector<double> xs;
  for (std::size_t r : p.rows) {
    const std::string& v = t.cell(r, x);
    if (std::find(p.categories.begin(), p.categories.end(), v) == p.categories.end())
      p.categories.push_back(v);
    if (auto n = t.number(r, x))
      xs.push_back(*n);
    else
      p.numeric_x = false;
  }
  std::vector<std::string> drawn;
  for (const auto& c : p.categories) drawn.push_back(drawn_label(c));
  p.x_axis = p.numeric_x ? x_value_axis(xs) : category_axis(drawn);
  p.x_axis.label = x == "chips" ? "chips" : x;

  std::set<std::string> seen;
  for (std::size_t r : p.rows)
    if (seen.insert(p.group(r)).second) p.groups.push_back(p.group(r));
  if (p.groups.size() > kMaxPlotSeries)
    throw ConfigError(
        csv, "the rows make " + std::to_string(p.groups.size()) + " series (curves) " +
                 "against --x " + x + ", " +
                 past_limit(static_cast<double>(kMaxPlotSeries), "series", "kMaxPlotSeries") +
                 "; allowed: another --x, or a table of fewer series");
  return p;
}

/// The line chart of metric `y`: one line per series, failed points marked.
void add_line_chart(PlotSet& set, const PlotRows& p, const std::string& y, const PlotRequest& req) {
  const CsvTable& t = p.t;
  std::string label;
  const MetricStyle m = style_of(y, label);
  Chart c;
  c.title = std::string(m.title) + " against " + p.x_axis.label + ": " + req.title;
  c.x = p.x_axis;
  c.y_label = m.y_label;
  c.y_percent = m.percent;
  c.y_log_above_ratio = m.log_above_ratio;
  c.y_from_zero = !req.y_fitted && (req.y_from_zero || m.from_zero);
  nlohmann::json series_json = nlohmann::json::array();
  for (const auto& g : p.groups) {
    std::vector<std::pair<double, double>> pts;
    for (std::size_t r : p.rows)
      if (p.group(r) == g && t.cell(r, "status") == "ok")
        if (auto v = t.number(r, y)) pts.emplace_back(p.x_of(r), *v);
    if (pts.empty()) continue;
    std::stable_sort(pts.begin(), pts.end(), [](auto& a, auto& b) { return a.first < b.first; });
    ChartSeries s{drawn_label(g), {}, {}};
    for (const auto& [px, py] : pts) {
      s.x.push_back(px);
      s.y.push_back(py);
    }
    series_json.push_back({{"label", g}, {"x", s.x}, {"y", s.y}});
    c.series.push_back(std::move(s));
  }
  nlohmann::json marked_json = nlohmann::json::array();
  for (std::size_t r : p.rows)
    if (did_not_succeed(t.cell(r, "status"))) {
      MarkedPoint mp{p.x_of(r), false, 0, t.cell(r, "status")};
      if (auto v = t.number(r, y)) {
        mp.has_y = true;
        mp.y = *v;
      }
      marked_json.push_back({{"x", mp.x}, {"status", mp.status}, {"series", p.group(r)}});
      if (mp.has_y) marked_json.back()["y"] = mp.y;
      c.marked.push_back(mp);
    }
  const std::string stem = m.file ? m.file : file_stem(y);
  const Axis y_axis = chart_y_axis(c);
  set.manifest["charts"].push_back({{"file", stem},
                                    {"kind", "lines"},
                                    {"y_axis",
                                     {{"from", y_axis.lo},
                                      {"to", y_axis.hi},
                                      {"log", y_axis.scale == AxisScale::Log10},
                                      {"break", y_axis.has_break()}}},
                                    {"legend", !chart_legend(c).empty()},
                                    {"y", y},
                                    {"series", series_json},
                                    {"did_not_succeed", marked_json}});
  set.charts.emplace_back(stem, std::move(c));
}

/// The time breakdown of series `g`: one stacked bar per x value.
void add_breakdown(PlotSet& set, const PlotRows& p, const std::string& g,
                   const std::vector<std::pair<std::string, std::string>>& parts) {
  const CsvTable& t = p.t;
  const std::string& x = p.x;
  StackedBars b;
  b.title = "Where the step goes: " + drawn_label(g);
  b.y_label = "time per step (ms)";
  std::vector<std::size_t> mine;
  for (std::size_t r : p.rows)
    if (p.group(r) == g) mine.push_back(r);
  std::stable_sort(mine.begin(), mine.end(),
                   [&](std::size_t a, std::size_t b2) { return p.x_of(a) < p.x_of(b2); });
  std::vector<std::string> labels;
  for (std::size_t r : mine)
    if (std::find(labels.begin(), labels.end(), t.cell(r, x)) == labels.end())
      labels.push_back(t.cell(r, x));
  std::vector<std::string> drawn;
  for (const auto& l : labels) drawn.push_back(drawn_label(l));
  b.x = category_axis(drawn);
  b.x.label = p.x_axis.label;
  for (const auto& part : parts) b.parts.push_back(part.second);
  nlohmann::json bars_json = nlohmann::json::array();
  for (std::size_t r : mine) {
    const double pos =
        static_cast<double>(std::find(labels.begin(), labels.end(), t.cell(r, x)) - labels.begin());
    if (t.cell(r, "status") != "ok") {
      b.marked.push_back({pos, false, 0, t.cell(r, "status")});
      continue;
    }
    std::vector<double> v;
    for (const auto& part : parts) v.push_back(std::max(0.0, t.number(r, part.first).value_or(0)));
    bars_json.push_back({{"x", t.cell(r, x)}, {"values", v}});
    b.bar_x.push_back(pos);
    b.values.push_back(std::move(v));
  }
  nlohmann::json part_names = nlohmann::json::array();
  for (const auto& part : parts) part_names.push_back(part.first);
  const std::string stem = p.groups.size() == 1 ? "breakdown" : "breakdown_" + file_stem(g);
  const Axis y_axis = bars_y_axis(b);
  set.manifest["charts"].push_back({{"file", stem},
                                    {"kind", "stacked bars"},
                                    {"y_axis", {{"from", y_axis.lo}, {"to", y_axis.hi}}},
                                    {"series", g},
                                    {"parts", part_names},
                                    {"bars", bars_json}});
  set.bars.emplace_back(stem, std::move(b));
}

/// The table with the column exposed_comm_share (exposed_communication_ms / step_time_ms) when
/// some successful point's collectives overlap its compute (exposed below in flight), else as it
/// is.
CsvTable with_exposed_share(const CsvTable& t) {
  if (t.column(kExposedShare) >= 0 || !is_numeric_column(t, "communication_ms") ||
      !is_numeric_column(t, "exposed_communication_ms") || !is_numeric_column(t, "step_time_ms"))
    return t;
  bool overlap = false;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const auto comm = t.number(r, "communication_ms"),
               exposed = t.number(r, "exposed_communication_ms");
    overlap = overlap ||
              (t.cell(r, "status") == "ok" && comm && exposed && *exposed < *comm * (1 - 1e-6));
  }
  if (!overlap) return t;
  CsvTable out = t;
  out.header.push_back(kExposedShare);
  for (std::size_t r = 0; r < out.rows.size(); ++r) {
    const auto step = t.number(r, "step_time_ms"),
               exposed = t.number(r, "exposed_communication_ms");
    out.rows[r].push_back(step && exposed && *step > 0 ? sweep::number_text(*exposed / *step) : "");
  }
  return out;
}

}  // namespace

PlotSet build_plots(const CsvTable& table, const PlotRequest& req, const std::string& csv) {
  if (table.rows.size() > kMaxPlotRows)
    throw ConfigError(csv,
                      std::to_string(table.rows.size()) + " rows, " +
                          past_limit(static_cast<double>(kMaxPlotRows), "rows", "kMaxPlotRows") +
                          "; allowed: a results table of a sweep or a plan");
  const CsvTable t = with_exposed_share(table);
  const std::string x = req.x.empty() ? default_x_column(t) : req.x;
  const std::vector<std::string> ys = metrics_to_plot(t, req, csv, x);
  const PlotRows p = plot_rows(t, x, csv);

  PlotSet set;
  set.x_column = x;
  set.series = p.groups.size();
  set.manifest = {{"x", x}, {"charts", nlohmann::json::array()}};
  // Scaling efficiency is relative to the fewest chips of a series: flat when x is not chips.
  const bool chips_vary = x == "chips";
  for (const auto& y : ys) {
    if (req.y.empty() && y == "scaling_efficiency" && !chips_vary) continue;
    add_line_chart(set, p, y, req);
  }

  // The time breakdown, one chart per series, with the standard charts only.
  const auto parts = breakdown_parts(t);
  if (!req.y.empty() || parts.empty()) return set;
  for (const auto& g : p.groups) add_breakdown(set, p, g, parts);
  return set;
}

}  // namespace tpusim::cli
