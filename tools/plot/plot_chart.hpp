#pragma once
// The two kinds of chart `tpusim plot` draws: lines (one per series, a metric against a swept
// axis) and stacked bars (where a step's time goes, one bar per point).
#include <string>
#include <vector>

#include "tools/plot/plot_canvas.hpp"

namespace tpusim::cli {

struct ChartSeries {
  std::string label;
  std::vector<double> x, y;  ///< sorted by x (category positions on a category axis)
};

struct Chart {
  std::string title;
  Axis x;                    ///< from x_value_axis or category_axis, with its label
  std::string y_label;       ///< with unit, e.g. "step time (ms)"
  bool y_from_zero = false;  ///< start the y axis at 0; otherwise it is fitted to the data
  bool y_percent = false;    ///< values are fractions shown as percent
  /// Switch to a log10 y axis when the values span more than this factor (0: never), e.g. step
  /// times of strong scaling, which fall by the chip ratio.
  double y_log_above_ratio = 0;
  std::vector<ChartSeries> series;
  std::vector<MarkedPoint> marked;  ///< points that did not succeed
};

/// The y axis the chart is drawn with: fitted to the values (and marked points), from zero
/// when asked, log10 when they span more than y_log_above_ratio.
Axis chart_y_axis(const Chart& chart);

/// The legend of a line chart: one entry per series when there are several (one series needs
/// none: the title names it), and the mark of points that did not succeed.
std::vector<LegendEntry> chart_legend(const Chart& chart);

/// Writes `path_stem`.svg and `path_stem`.png (at `dpi`). Throws std::runtime_error if cairo
/// cannot write.
void write_chart(const Chart& chart, const std::string& path_stem, double dpi = kDefaultPngDpi);

struct StackedBars {
  std::string title;
  Axis x;  ///< a category axis: one slot per bar
  std::string y_label;
  std::vector<std::string> parts;           ///< legend labels, bottom of the stack first
  std::vector<double> bar_x;                ///< category position of each bar
  std::vector<std::vector<double>> values;  ///< [bar][part], >= 0
  std::vector<MarkedPoint> marked;
};

/// The y axis of a bar chart: from 0 (stacks are sums) to the highest stack.
Axis bars_y_axis(const StackedBars& bars);

/// Writes `path_stem`.svg and `path_stem`.png (at `dpi`).
void write_bars(const StackedBars& bars, const std::string& path_stem, double dpi = kDefaultPngDpi);

}  // namespace tpusim::cli
