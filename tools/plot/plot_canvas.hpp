#pragma once
// What every chart of `tpusim plot` shares: axes (log2, log10, linear or categories), ticks,
// frame, title, legend, marks for points that did not succeed, and writing one drawing as SVG
// and PNG with cairo.
#include <cairo.h>

#include <functional>
#include <string>
#include <vector>

namespace tpusim::cli {

enum class AxisScale { Log2, Log10, Linear, Category };

struct Axis {
  AxisScale scale = AxisScale::Linear;
  double lo = 0, hi = 1;                ///< data range in axis units (category positions: 0..n-1)
  std::vector<double> ticks;            ///< in data units
  std::vector<std::string> categories;  ///< labels of positions 0..n-1 (Category)
  bool percent = false;                 ///< fractions shown as percent
  std::string label;

  /// 0..1 along the axis.
  double fraction(double v) const;
  std::string tick_text(double v) const;
  /// A linear axis that starts above zero: drawn with a break mark at its foot, so that a
  /// reader does not take its differences for ratios.
  bool has_break() const;
};

/// A numeric axis fitted to [lo, hi]: linear with nice ticks (from 0 if `from_zero`), or log10
/// when `log_above_ratio` > 0, lo > 0 and hi / lo exceeds it.
Axis value_axis(double lo, double hi, bool from_zero, double log_above_ratio, bool percent);
/// An x axis over `values`: log2 when they are positive and span more than a factor 4, else
/// linear.
Axis x_value_axis(const std::vector<double>& values);
/// Categories at positions 0..n-1, half a slot of margin on each side.
Axis category_axis(std::vector<std::string> labels);

/// Tick values for a linear axis over [lo, hi]: multiples of 1, 2 or 5 x 10^k, about `count`.
std::vector<double> nice_ticks(double lo, double hi, int count);

struct LegendEntry {
  std::string label;
  enum Kind { Line, Box, Cross } kind = Line;
  int colour = 0;  ///< palette index (Line, Box); Cross is drawn in dark red
};

/// A point whose run did not succeed (failed, oom, ...): drawn as a cross at its value, or on
/// the x axis with its status when it has none.
struct MarkedPoint {
  double x = 0;
  bool has_y = false;
  double y = 0;
  std::string status;
};

/// The plot area and its axes once laid out; what a chart draws its data into.
struct Frame {
  Axis x, y;
  double left, top, width, height;
  double px(double v) const { return left + x.fraction(v) * width; }
  double py(double v) const { return top + height - y.fraction(v) * height; }
};

namespace canvas {
void set_colour(cairo_t* cr, int palette_index);
void marker(cairo_t* cr, int shape, double x, double y);
void cross(cairo_t* cr, double x, double y);
void text_at(cairo_t* cr, const std::string& s, double x, double y, double align_x);
/// Background, title, grid, ticks, axis labels and legend; returns the frame to draw into.
Frame draw_frame(cairo_t* cr, const std::string& title, const Axis& x, const Axis& y,
                 const std::vector<LegendEntry>& legend, double legend_width);
/// The marks of points that did not succeed.
void draw_marked(cairo_t* cr, const Frame& f, const std::vector<MarkedPoint>& marked);
}  // namespace canvas

/// The resolution of PNG charts unless `tpusim plot --dpi` says otherwise: print quality.
constexpr double kDefaultPngDpi = 300;

/// Writes `path_stem`.svg and `path_stem`.png of a drawing with this legend (the canvas widens
/// to fit it). The SVG's text is <text> elements (editable), its units CSS pixels (900 x 540 plus
/// the legend); the PNG is the same drawing at `dpi` pixels per inch (96: one pixel per unit),
/// with the resolution recorded in it. Throws std::runtime_error if cairo cannot write.
void write_drawing(const std::string& path_stem, const std::vector<LegendEntry>& legend,
                   const std::function<void(cairo_t*, double legend_width)>& draw,
                   double dpi = kDefaultPngDpi);

}  // namespace tpusim::cli
