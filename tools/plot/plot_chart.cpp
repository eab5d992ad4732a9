#include "tools/plot/plot_chart.hpp"

#include <algorithm>
#include <cmath>

namespace tpusim::cli {

Axis chart_y_axis(const Chart& c) {
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& s : c.series)
    for (double y : s.y) {
      lo = std::min(lo, y);
      hi = std::max(hi, y);
    }
  for (const auto& m : c.marked)
    if (m.has_y) {
      lo = std::min(lo, m.y);
      hi = std::max(hi, m.y);
    }
  if (!std::isfinite(lo)) lo = hi = 0;  // only points without values: an empty band
  Axis y = value_axis(lo, hi, c.y_from_zero, c.y_log_above_ratio, c.y_percent);
  y.label = c.y_label;
  return y;
}

std::vector<LegendEntry> chart_legend(const Chart& c) {
  std::vector<LegendEntry> legend;
  if (c.series.size() > 1)
    for (std::size_t k = 0; k < c.series.size(); ++k)
      legend.push_back({c.series[k].label, LegendEntry::Line, static_cast<int>(k)});
  if (!c.marked.empty()) legend.push_back({"did not succeed", LegendEntry::Cross, 0});
  return legend;
}

void write_chart(const Chart& c, const std::string& path_stem, double dpi) {
  const Axis y = chart_y_axis(c);
  const std::vector<LegendEntry> legend = chart_legend(c);
  write_drawing(
      path_stem, legend,
      [&](cairo_t* cr, double legend_width) {
        const Frame f = canvas::draw_frame(cr, c.title, c.x, y, legend, legend_width);
        for (std::size_t k = 0; k < c.series.size(); ++k) {
          const auto& s = c.series[k];
          canvas::set_colour(cr, static_cast<int>(k));
          cairo_set_line_width(cr, 2.2);
          for (std::size_t i = 0; i < s.x.size(); ++i) {
            if (i == 0)
              cairo_move_to(cr, f.px(s.x[i]), f.py(s.y[i]));
            else
              cairo_line_to(cr, f.px(s.x[i]), f.py(s.y[i]));
          }
          cairo_stroke(cr);
          for (std::size_t i = 0; i < s.x.size(); ++i)
            canvas::marker(cr, static_cast<int>(k), f.px(s.x[i]), f.py(s.y[i]));
        }
        canvas::draw_marked(cr, f, c.marked);
      },
      dpi);
}

Axis bars_y_axis(const StackedBars& b) {
  double hi = 0;
  for (const auto& bar : b.values) {
    double sum = 0;
    for (double v : bar) sum += v;
    hi = std::max(hi, sum);
  }
  Axis y = value_axis(0, hi, true, 0, false);
  y.label = b.y_label;
  return y;
}

void write_bars(const StackedBars& b, const std::string& path_stem, double dpi) {
  const Axis y = bars_y_axis(b);
  std::vector<LegendEntry> legend;
  // The legend lists the top of the stack first, as the bars show it.
  for (std::size_t k = b.parts.size(); k-- > 0;)
    legend.push_back({b.parts[k], LegendEntry::Box, static_cast<int>(k)});
  if (!b.marked.empty()) legend.push_back({"did not succeed", LegendEntry::Cross, 0});

  write_drawing(
      path_stem, legend,
      [&](cairo_t* cr, double legend_width) {
        const Frame f = canvas::draw_frame(cr, b.title, b.x, y, legend, legend_width);
        const double slot = f.width / std::max(1.0, b.x.hi - b.x.lo);
        const double half = std::min(40.0, 0.35 * slot);
        for (std::size_t i = 0; i < b.values.size(); ++i) {
          double base = 0;
          const double x = f.px(b.bar_x[i]);
          for (std::size_t k = 0; k < b.values[i].size(); ++k) {
            const double top = base + b.values[i][k];
            canvas::set_colour(cr, static_cast<int>(k));
            cairo_rectangle(cr, x - half, f.py(top), 2 * half, f.py(base) - f.py(top));
            cairo_fill(cr);
            base = top;
          }
        }
        canvas::draw_marked(cr, f, b.marked);
      },
      dpi);
}

}  // namespace tpusim::cli
