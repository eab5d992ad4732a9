#pragma once
// A line chart of one metric against chips (log2 axis), one line per series, drawn with cairo
// into SVG and PNG files.
#include <limits>
#include <string>
#include <vector>

namespace tpusim::cli {

struct ChartSeries {
  std::string label;
  std::vector<double> x, y;   ///< sorted by x
  std::vector<bool> flagged;  ///< per point (empty: none): drawn with a red ring
};

struct Chart {
  std::string title;
  std::string x_label;      ///< e.g. "chips (log2 scale)"
  std::string y_label;      ///< with unit, e.g. "step time (ms)"
  bool y_from_zero = true;  ///< start the y axis at 0 (shares, efficiencies, rates)
  bool y_percent = false;   ///< values are fractions shown as percent
  /// Switch to a log10 y axis when the values span more than this factor (0: never), e.g. step
  /// times of strong scaling, which fall by the chip ratio.
  double y_log_above_ratio = 0;
  std::vector<ChartSeries> series;
  std::string flag_label;  ///< legend text of flagged points, e.g. "out of memory"
  /// A dashed horizontal line at this y (e.g. the HBM capacity), labelled; NaN: none.
  double limit_y = std::numeric_limits<double>::quiet_NaN();
  std::string limit_label;
};

/// Writes `path_stem`.svg and `path_stem`.png. Throws std::runtime_error if cairo cannot write.
void write_chart(const Chart& chart, const std::string& path_stem);

/// Tick values for a linear axis over [lo, hi]: multiples of 1, 2 or 5 x 10^k, about `count`.
std::vector<double> nice_ticks(double lo, double hi, int count);

}  // namespace tpusim::cli
