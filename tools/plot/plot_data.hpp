#pragma once
// Which charts a results table gives: the x axis (a swept column), the series (points that
// differ in anything but x), the metrics (any numeric column), the time breakdown, and the
// points that did not succeed.
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tools/plot/plot_chart.hpp"
#include "tools/sweep/csv_table.hpp"

namespace tpusim::cli {

struct PlotRequest {
  std::string x;                ///< column for the x axis; "" picks one (see default_x_column)
  std::vector<std::string> y;   ///< metric columns; empty: the standard charts
  bool y_from_zero = false;     ///< every y axis from 0 (times, shares, efficiencies always are)
  bool y_fitted = false;        ///< every y axis fitted to its data (with a break mark)
  double dpi = kDefaultPngDpi;  ///< PNG resolution
  std::string title;            ///< names the study in chart titles
};

struct PlotSet {
  std::string x_column;
  std::size_t series = 0;
  std::vector<std::pair<std::string, Chart>> charts;      ///< file stem, chart
  std::vector<std::pair<std::string, StackedBars>> bars;  ///< file stem, breakdown
  nlohmann::json manifest;  ///< the numbers behind every chart (charts.json)
};

/// "chips" when it varies within a series, else the first swept column whose value varies
/// (a model-parallel sweep on a fixed machine: parallelism.model), else "chips".
std::string default_x_column(const sweep::CsvTable& t);

/// Throws ConfigError naming `csv_name` and the option for unknown or non-numeric columns and
/// for a table without successful points.
PlotSet build_plots(const sweep::CsvTable& t, const PlotRequest& request,
                    const std::string& csv_name);

}  // namespace tpusim::cli
