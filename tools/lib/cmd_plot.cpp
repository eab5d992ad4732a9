// tpusim plot: scaling curves from a sweep's results.csv, as SVG and PNG.
#include <cairo.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>

#include "core/config.hpp"
#include "core/errors.hpp"
#include "tools/lib/commands.hpp"
#include "tools/lib/plot_chart.hpp"
#include "tools/sweep/csv_table.hpp"

namespace tpusim::cli {
namespace {
namespace fs = std::filesystem;

struct MetricChart {
  const char* column;
  const char* file;
  const char* title;
  const char* y_label;
  bool percent;
  double log_above_ratio;  ///< log y axis when the values span more than this
  bool optional;           ///< drawn only when the column has values (time to train sweeps)
};

// What each chart shows; the y label carries the unit.
constexpr MetricChart kCharts[] = {
    {"step_time_ms", "step_time", "Step time", "step time (ms)", false, 20, false},
    {"examples_per_s_per_chip", "examples_per_chip", "Throughput per chip",
     "examples per second per chip", false, 20, false},
    {"scaling_efficiency", "scaling_efficiency", "Scaling efficiency",
     "per-chip throughput relative to the smallest point (%)", true, 0, false},
    {"comm_share", "comm_share", "Communication share", "communication share of step time (%)",
     true, 0, false},
    {"time_to_train_s", "time_to_train", "Time to train", "time to train (s)", false, 20, true},
};

void run_plot(const std::string& csv, const std::string& out, std::string title) {
  const sweep::CsvTable t = sweep::read_csv(csv);
  ProblemList problems;
  for (const char* col : {"status", "series", "chips"})
    if (t.column(col) < 0)
      problems.add(csv, std::string("no column '") + col + "': not a results.csv of tpusim sweep");
  for (const auto& m : kCharts)
    if (!m.optional && t.column(m.column) < 0)
      problems.add(csv,
                   std::string("no column '") + m.column + "': not a results.csv of tpusim sweep");
  problems.throw_if_any();

  std::vector<std::string> order;
  std::map<std::string, std::vector<std::size_t>> rows_of;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    if (t.cell(r, "status") != "ok" || !t.number(r, "chips") || *t.number(r, "chips") <= 0)
      continue;
    const std::string& s = t.cell(r, "series");
    if (!rows_of.count(s)) order.push_back(s);
    rows_of[s].push_back(r);
  }
  if (order.empty())
    throw ConfigError(csv, "no successful points to plot (every row's status is not ok)");
  // Default title: the sweep file's name, from sweep.json beside the CSV, else the directory's.
  if (title.empty()) {
    const fs::path dir = fs::absolute(csv).parent_path();
    title = dir.filename().string();
    const fs::path plan = dir / "sweep.json";
    if (fs::exists(plan)) {
      try {
        auto j = read_json_file(plan.string());
        if (j.is_object() && j.contains("sweep_file") && j["sweep_file"].is_string())
          title = fs::path(j["sweep_file"].get<std::string>()).stem().string();
      } catch (const ConfigError&) {
        // A damaged sweep.json only costs the nicer title.
      }
    }
  }

  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw ConfigError("--out " + out, "cannot create the directory: " + ec.message());
  int charts = 0;
  for (const auto& m : kCharts) {
    Chart c;
    c.title = std::string(m.title) + " against chips: " + title;
    c.x_label = "chips (log2 scale)";
    c.y_label = m.y_label;
    c.y_percent = m.percent;
    c.y_log_above_ratio = m.log_above_ratio;
    for (const auto& name : order) {
      std::vector<std::pair<double, double>> pts;
      for (std::size_t r : rows_of[name])
        if (auto y = t.number(r, m.column)) pts.emplace_back(*t.number(r, "chips"), *y);
      if (pts.empty()) continue;
      std::stable_sort(pts.begin(), pts.end(), [](auto& a, auto& b) { return a.first < b.first; });
      ChartSeries s{name.empty() ? "(all points)" : name, {}, {}};
      for (const auto& [x, y] : pts) {
        s.x.push_back(x);
        s.y.push_back(y);
      }
      c.series.push_back(std::move(s));
    }
    // A metric no point has (time to train in a sweep of steps, communication share in a sweep
    // of times to train) has no chart.
    if (c.series.empty()) continue;
    write_chart(c, out + "/" + m.file);
    ++charts;
  }
  // Frees cairo's font caches, so that leak checkers see only real leaks.
  cairo_debug_reset_static_data();
  std::cerr << "tpusim plot: " << order.size() << " series, " << charts
            << " charts (SVG and PNG) in " << out << "\n";
}

const CommandRegistrar kRegister{[](CLI::App& app) {
  auto* cmd =
      app.add_subcommand("plot", "Draw scaling curves (SVG and PNG) from a sweep's results.csv");
  auto csv = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto title = std::make_shared<std::string>();
  cmd->add_option("results", *csv, "results.csv written by tpusim sweep or merge")->required();
  cmd->add_option("--out", *out, "directory for the charts")->required();
  cmd->add_option("--title", *title,
                  "names the study in chart titles (default: the CSV's directory name)");
  cmd->callback([=] { run_plot(*csv, *out, *title); });
}};

}  // namespace
}  // namespace tpusim::cli
