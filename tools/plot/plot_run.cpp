#include "tools/plot/plot_run.hpp"

#include <cairo.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>

#include "core/config.hpp"
#include "core/errors.hpp"
#include "core/output_file.hpp"
#include "tools/plot/plot_chart.hpp"
#include "tools/plot/plot_data.hpp"
#include "tools/sweep/csv_table.hpp"
#include "tools/sweep/readable.hpp"

namespace tpusim::cli {
namespace {

namespace fs = std::filesystem;

/// The sweep's name for chart titles: from sweep.json beside the CSV, else the directory's.
std::string default_title(const std::string& csv) {
  const fs::path dir = fs::absolute(csv).parent_path();
  std::string title = dir.filename().string();
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
  return title;
}

}  // namespace

void run_plot(const std::string& csv, const std::string& out, PlotRequest request) {
  if (!(request.dpi >= 24 && request.dpi <= 1200))
    throw ConfigError("--dpi", "must be a resolution from 24 to 1200 pixels per inch, e.g. 300");
  const sweep::CsvTable t = sweep::read_csv(csv);
  if (request.title.empty()) request.title = default_title(csv);
  const PlotSet set = build_plots(t, request, csv);

  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw ConfigError("--out " + out, "cannot create the directory: " + ec.message());
  for (const auto& [stem, chart] : set.charts) write_chart(chart, out + "/" + stem, request.dpi);
  for (const auto& [stem, bars] : set.bars) write_bars(bars, out + "/" + stem, request.dpi);
  write_output_file(out + "/charts.json", set.manifest.dump(2) + "\n");
  // Frees cairo's font caches, so that leak checkers see only real leaks.
  cairo_debug_reset_static_data();
  std::cerr << "tpusim plot: x = " << set.x_column << ", "
            << count_of(static_cast<long long>(set.series), "series", "series") << ", "
            << count_of(static_cast<long long>(set.charts.size() + set.bars.size()), "chart")
            << " (SVG and PNG) in " << out << "\n";
}

}  // namespace tpusim::cli
