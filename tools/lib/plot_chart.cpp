#include "tools/lib/plot_chart.hpp"

#include <cairo-svg.h>
#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace tpusim::cli {
namespace {

// Colour-blind-friendly qualitative palette (Okabe and Ito, "Color Universal Design", 2008).
constexpr double kPalette[][3] = {{0.00, 0.45, 0.70}, {0.90, 0.62, 0.00}, {0.00, 0.62, 0.45},
                                  {0.80, 0.40, 0.00}, {0.34, 0.71, 0.91}, {0.80, 0.47, 0.65},
                                  {0.94, 0.89, 0.26}, {0.00, 0.00, 0.00}};
constexpr int kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);
// Shapes differ from one series to the next as well, for grey print and neighbouring hues.
enum Marker { Circle, Square, Triangle, Diamond };

constexpr double kWidth = 900, kHeight = 540;
constexpr double kLeft = 90, kRight = 30, kTop = 60, kBottom = 70;

std::string tick_text(double v, bool percent) {
  char buf[32];
  if (percent)
    std::snprintf(buf, sizeof buf, "%g%%", std::round(v * 1000) / 10);
  else if (std::fabs(v) >= 1e5 || (v != 0 && std::fabs(v) < 1e-3))
    std::snprintf(buf, sizeof buf, "%.3g", v);
  else
    std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

double text_width(cairo_t* cr, const std::string& s) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  return e.x_advance;
}

void text_at(cairo_t* cr, const std::string& s, double x, double y, double align_x) {
  cairo_move_to(cr, x - align_x * text_width(cr, s), y);
  cairo_show_text(cr, s.c_str());
}

void marker(cairo_t* cr, Marker m, double x, double y) {
  const double r = 4.5;
  switch (m) {
    case Circle:
      cairo_arc(cr, x, y, r, 0, 2 * M_PI);
      break;
    case Square:
      cairo_rectangle(cr, x - r, y - r, 2 * r, 2 * r);
      break;
    case Triangle:
      cairo_move_to(cr, x, y - r - 1);
      cairo_line_to(cr, x + r + 1, y + r);
      cairo_line_to(cr, x - r - 1, y + r);
      cairo_close_path(cr);
      break;
    case Diamond:
      cairo_move_to(cr, x, y - r - 1);
      cairo_line_to(cr, x + r + 1, y);
      cairo_line_to(cr, x, y + r + 1);
      cairo_line_to(cr, x - r - 1, y);
      cairo_close_path(cr);
      break;
  }
  cairo_fill(cr);
}

// A red ring around a flagged point (a sweep point out of memory).
void flag_ring(cairo_t* cr, double x, double y) {
  cairo_set_source_rgb(cr, 0.85, 0.05, 0.05);
  cairo_set_line_width(cr, 2);
  cairo_new_sub_path(cr);
  cairo_arc(cr, x, y, 9, 0, 2 * M_PI);
  cairo_stroke(cr);
}

/// 1, 2, 5 x 10^k from the last at or below `lo` to the first at or above `hi` (log axes).
std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> all;
  for (int k = static_cast<int>(std::floor(std::log10(lo))) - 1;
       k <= static_cast<int>(std::ceil(std::log10(hi))) + 1; ++k)
    for (double m : {1.0, 2.0, 5.0}) all.push_back(m * std::pow(10.0, k));
  std::vector<double> ticks;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const bool from = i + 1 < all.size() && all[i + 1] > lo;  // the last tick at or below lo
    const bool upto = i == 0 || all[i - 1] < hi;              // up to the first at or above hi
    if (from && upto) ticks.push_back(all[i]);
  }
  return ticks;
}

void draw(cairo_t* cr, const Chart& c, double legend_width) {
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);

  double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
  for (const auto& s : c.series)
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      xmin = std::min(xmin, s.x[i]);
      xmax = std::max(xmax, s.x[i]);
      ymin = std::min(ymin, s.y[i]);
      ymax = std::max(ymax, s.y[i]);
    }
  const bool has_limit = std::isfinite(c.limit_y);
  if (has_limit) {
    ymin = std::min(ymin, c.limit_y);
    ymax = std::max(ymax, c.limit_y);
  }
  bool any_flagged = false;
  for (const auto& s : c.series)
    for (bool f : s.flagged) any_flagged = any_flagged || f;
  // x: whole powers of two around the data; y: nice ticks around the data (from 0 if asked).
  double lx0 = std::floor(std::log2(xmin)), lx1 = std::ceil(std::log2(xmax));
  if (lx1 - lx0 < 1) {
    lx0 -= 1;
    lx1 += 1;
  }
  const bool log_y = c.y_log_above_ratio > 0 && ymin > 0 && ymax / ymin > c.y_log_above_ratio;
  std::vector<double> yt;
  double y0, y1;
  if (log_y) {
    yt = log_ticks(ymin, ymax);
    y0 = std::log10(yt.front());
    y1 = std::log10(yt.back());
  } else {
    if (c.y_from_zero) ymin = std::min(0.0, ymin);
    if (ymax - ymin < 1e-12 * std::max(1.0, std::fabs(ymax))) {
      ymax += std::max(1e-9, std::fabs(ymax) * 0.1);
      ymin -= c.y_from_zero ? 0 : std::fabs(ymin) * 0.1;
    }
    yt = nice_ticks(ymin, ymax, 6);
    y0 = std::min(ymin, yt.front());
    y1 = std::max(ymax, yt.back());
  }

  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (std::log2(x) - lx0) / (lx1 - lx0) * plot_w; };
  auto py = [&](double y) {
    return kTop + plot_h - ((log_y ? std::log10(y) : y) - y0) / (y1 - y0) * plot_h;
  };
  const std::string y_label = log_y ? c.y_label + ", log scale" : c.y_label;

  // Title.
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_font_size(cr, 18);
  text_at(cr, c.title, (kWidth + legend_width) / 2, 32, 0.5);

  // Grid and ticks.
  cairo_set_font_size(cr, 12);
  cairo_set_line_width(cr, 1);
  for (double e = lx0; e <= lx1 + 1e-9; e += 1) {
    double x = px(std::exp2(e));
    cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
    cairo_move_to(cr, x, kTop);
    cairo_line_to(cr, x, kTop + plot_h);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
    text_at(cr, tick_text(std::exp2(e), false), x, kTop + plot_h + 18, 0.5);
  }
  for (double v : yt) {
    double y = py(v);
    cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
    cairo_move_to(cr, kLeft, y);
    cairo_line_to(cr, kLeft + plot_w, y);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
    text_at(cr, tick_text(v, c.y_percent), kLeft - 8, y + 4, 1.0);
  }
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_rectangle(cr, kLeft, kTop, plot_w, plot_h);
  cairo_stroke(cr);

  // Axis labels.
  cairo_set_font_size(cr, 14);
  text_at(cr, c.x_label, kLeft + plot_w / 2, kHeight - 22, 0.5);
  cairo_save(cr);
  cairo_move_to(cr, 24, kTop + plot_h / 2 + text_width(cr, y_label) / 2);
  cairo_rotate(cr, -M_PI / 2);
  cairo_show_text(cr, y_label.c_str());
  cairo_restore(cr);

  // Lines and markers, clipped to the plot area.
  for (std::size_t k = 0; k < c.series.size(); ++k) {
    const auto& s = c.series[k];
    const double* rgb = kPalette[k % kPaletteSize];
    cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
    cairo_set_line_width(cr, 2.2);
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (i == 0)
        cairo_move_to(cr, px(s.x[i]), py(s.y[i]));
      else
        cairo_line_to(cr, px(s.x[i]), py(s.y[i]));
    }
    cairo_stroke(cr);
    for (std::size_t i = 0; i < s.x.size(); ++i)
      marker(cr, static_cast<Marker>(k % 4), px(s.x[i]), py(s.y[i]));
    for (std::size_t i = 0; i < s.flagged.size() && i < s.x.size(); ++i)
      if (s.flagged[i]) flag_ring(cr, px(s.x[i]), py(s.y[i]));
  }
  if (has_limit) {
    const double dash[] = {6, 4};
    cairo_set_source_rgb(cr, 0.75, 0.1, 0.1);
    cairo_set_line_width(cr, 1.5);
    cairo_set_dash(cr, dash, 2, 0);
    cairo_move_to(cr, kLeft, py(c.limit_y));
    cairo_line_to(cr, kLeft + plot_w, py(c.limit_y));
    cairo_stroke(cr);
    cairo_set_dash(cr, nullptr, 0, 0);
    cairo_set_font_size(cr, 12);
    text_at(cr, c.limit_label, kLeft + plot_w - 6, py(c.limit_y) - 6, 1.0);
  }

  // Legend to the right of the plot.
  cairo_set_font_size(cr, 12);
  const double lx = kWidth - kRight + 20;
  for (std::size_t k = 0; k < c.series.size(); ++k) {
    const double ly = kTop + 10 + 22 * static_cast<double>(k);
    const double* rgb = kPalette[k % kPaletteSize];
    cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
    cairo_set_line_width(cr, 2.2);
    cairo_move_to(cr, lx, ly);
    cairo_line_to(cr, lx + 28, ly);
    cairo_stroke(cr);
    marker(cr, static_cast<Marker>(k % 4), lx + 14, ly);
    cairo_set_source_rgb(cr, 0, 0, 0);
    text_at(cr, c.series[k].label, lx + 36, ly + 4, 0);
  }
  if (any_flagged) {
    const double ly = kTop + 10 + 22 * static_cast<double>(c.series.size());
    flag_ring(cr, lx + 14, ly);
    cairo_set_source_rgb(cr, 0, 0, 0);
    text_at(cr, c.flag_label, lx + 36, ly + 4, 0);
  }
}

void check(cairo_surface_t* s, const std::string& path) {
  if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS)
    throw std::runtime_error("cannot write " + path + ": " +
                             cairo_status_to_string(cairo_surface_status(s)));
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int count) {
  const double raw = (hi - lo) / std::max(1, count);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> ticks;
  for (double v = std::floor(lo / step) * step; v <= hi + step * 0.999; v += step)
    ticks.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  return ticks;
}

void write_chart(const Chart& chart, const std::string& path_stem) {
  // Measure the legend first so the canvas fits the longest series label.
  cairo_surface_t* probe = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
  cairo_t* pc = cairo_create(probe);
  cairo_select_font_face(pc, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(pc, 12);
  double legend = 0;
  for (const auto& s : chart.series) legend = std::max(legend, text_width(pc, s.label));
  legend = std::max(legend, text_width(pc, chart.flag_label));
  cairo_destroy(pc);
  cairo_surface_destroy(probe);
  const double legend_width = legend + 36 + 30;
  const double width = kWidth + legend_width;
  const double height =
      std::max(kHeight, kTop + 30 + 22 * static_cast<double>(chart.series.size()));

  const std::string svg = path_stem + ".svg", png = path_stem + ".png";
  cairo_surface_t* s = cairo_svg_surface_create(svg.c_str(), width, height);
  check(s, svg);
  cairo_t* cr = cairo_create(s);
  draw(cr, chart, legend_width);
  cairo_destroy(cr);
  cairo_surface_finish(s);
  check(s, svg);
  cairo_surface_destroy(s);

  s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, static_cast<int>(width),
                                 static_cast<int>(height));
  cr = cairo_create(s);
  draw(cr, chart, legend_width);
  cairo_destroy(cr);
  cairo_status_t st = cairo_surface_write_to_png(s, png.c_str());
  cairo_surface_destroy(s);
  if (st != CAIRO_STATUS_SUCCESS)
    throw std::runtime_error("cannot write " + png + ": " + cairo_status_to_string(st));
}

}  // namespace tpusim::cli
