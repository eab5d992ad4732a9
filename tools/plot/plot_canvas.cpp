#include "tools/plot/plot_canvas.hpp"

#include <cairo-svg.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>

#include "core/output_file.hpp"

namespace tpusim::cli {
namespace {

// Colour-blind-friendly qualitative palette (Okabe and Ito, "Color Universal Design", 2008).
constexpr double kPalette[][3] = {{0.00, 0.45, 0.70}, {0.90, 0.62, 0.00}, {0.00, 0.62, 0.45},
                                  {0.80, 0.40, 0.00}, {0.34, 0.71, 0.91}, {0.80, 0.47, 0.65},
                                  {0.94, 0.89, 0.26}, {0.00, 0.00, 0.00}};
constexpr int kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);
// Points that did not succeed: a dark red no series uses.
constexpr double kMarkedRgb[3] = {0.70, 0.05, 0.10};

constexpr double kWidth = 900, kHeight = 540;  // in CSS pixels (SVG user units)
constexpr double kCssDpi = 96;
constexpr double kLeft = 90, kRight = 30, kTop = 60, kBottom = 70;

double text_width(cairo_t* cr, const std::string& s) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  return e.x_advance;
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

void check(cairo_surface_t* s, const std::string& path) {
  if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS)
    throw std::runtime_error("cannot draw " + path + ": " +
                             cairo_status_to_string(cairo_surface_status(s)));
}

/// cairo's stream writer: appends to the std::string the closure points at. The file is written
/// by write_output_file, so a full disk or an unwritable path is the same error everywhere.
cairo_status_t append_bytes(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

/// While the SVG is drawn, text goes here instead of to cairo, which would write it as glyph
/// outlines: the SVG gets <text> elements a person can edit (an editor, a paper's figure).
std::string* g_svg_text = nullptr;

std::string xml_escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

/// Shows `s` at the current point (after the caller's move), rotated by `degrees`, with its
/// start at x - align_x * width: through cairo, or as an SVG <text> element while an SVG is
/// drawn.
void show_text(cairo_t* cr, const std::string& s, double x, double y, double align_x,
               double degrees) {
  if (!g_svg_text) {
    cairo_save(cr);
    cairo_translate(cr, x, y);
    cairo_rotate(cr, degrees * M_PI / 180);
    cairo_move_to(cr, -align_x * text_width(cr, s), 0);
    cairo_show_text(cr, s.c_str());
    cairo_restore(cr);
    return;
  }
  double r = 0, g = 0, b = 0, a = 1;
  cairo_pattern_get_rgba(cairo_get_source(cr), &r, &g, &b, &a);
  cairo_matrix_t font;
  cairo_get_font_matrix(cr, &font);
  char head[320];
  std::snprintf(head, sizeof head,
                "<text x=\"%.2f\" y=\"%.2f\" font-family=\"DejaVu Sans, sans-serif\" "
                "font-size=\"%.1f\" fill=\"rgb(%d,%d,%d)\" text-anchor=\"%s\"",
                x, y, font.xx, static_cast<int>(std::lround(r * 255)),
                static_cast<int>(std::lround(g * 255)), static_cast<int>(std::lround(b * 255)),
                align_x <= 0.25   ? "start"
                : align_x >= 0.75 ? "end"
                                  : "middle");
  *g_svg_text += head;
  if (degrees != 0) {
    std::snprintf(head, sizeof head, " transform=\"rotate(%.1f %.2f %.2f)\"", degrees, x, y);
    *g_svg_text += head;
  }
  *g_svg_text += ">" + xml_escaped(s) + "</text>\n";
}

/// A PNG with a pHYs chunk after its header: `dpi` pixels per inch, so that a document or an
/// image viewer sizes it as drawn (cairo writes none).
std::string with_png_dpi(const std::string& png, double dpi) {
  constexpr std::size_t kHeaderEnd = 8 + 8 + 13 + 4;  // signature, IHDR (length, type, data, CRC)
  if (png.size() < kHeaderEnd || png.compare(12, 4, "IHDR") != 0) return png;
  const auto per_metre = static_cast<std::uint32_t>(std::lround(dpi / 0.0254));
  std::string chunk("pHYs");
  for (int k = 0; k < 2; ++k)
    for (int shift = 24; shift >= 0; shift -= 8)
      chunk += static_cast<char>((per_metre >> shift) & 0xff);
  chunk += '\1';  // unit: the metre
  const auto crc = static_cast<std::uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(chunk.data()), static_cast<uInt>(chunk.size())));
  std::string out = png.substr(0, kHeaderEnd);
  out += std::string("\0\0\0\x09", 4);  // the chunk's data length: 9 bytes
  out += chunk;
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((crc >> shift) & 0xff);
  return out + png.substr(kHeaderEnd);
}

}  // namespace

double Axis::fraction(double v) const {
  double t = v, a = lo, b = hi;
  if (scale == AxisScale::Log2) {
    t = std::log2(v);
    a = std::log2(lo);
    b = std::log2(hi);
  } else if (scale == AxisScale::Log10) {
    t = std::log10(v);
    a = std::log10(lo);
    b = std::log10(hi);
  }
  return b > a ? (t - a) / (b - a) : 0.5;
}

bool Axis::has_break() const { return scale == AxisScale::Linear && lo > 0; }

std::string Axis::tick_text(double v) const {
  if (scale == AxisScale::Category) {
    const auto i = static_cast<std::size_t>(std::llround(v));
    return i < categories.size() ? categories[i] : "";
  }
  char buf[32];
  if (percent)
    std::snprintf(buf, sizeof buf, "%g%%", std::round(v * 1000) / 10);
  else if (std::fabs(v) >= 1e5 || (v != 0 && std::fabs(v) < 1e-3))
    std::snprintf(buf, sizeof buf, "%.3g", v);
  else
    std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

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

Axis value_axis(double lo, double hi, bool from_zero, double log_above_ratio, bool percent) {
  Axis a;
  a.percent = percent;
  if (log_above_ratio > 0 && lo > 0 && hi / lo > log_above_ratio) {
    a.scale = AxisScale::Log10;
    a.ticks = log_ticks(lo, hi);
    a.lo = a.ticks.front();
    a.hi = a.ticks.back();
    return a;
  }
  if (from_zero) {
    lo = std::min(0.0, lo);
    hi = std::max(0.0, hi);
  }
  if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi))) {
    // One value: a band of 10 % around it (or up from zero).
    const double pad = std::max(1e-9, std::fabs(hi) * 0.1);
    hi += pad;
    if (!from_zero) lo -= pad;
  } else if (!from_zero) {
    // Fitted: a margin of 5 % of the span so points do not sit on the frame.
    const double pad = 0.05 * (hi - lo);
    hi += pad;
    lo = (lo >= 0 && lo - pad < 0) ? 0 : lo - pad;
  }
  a.ticks = nice_ticks(lo, hi, 6);
  // Keep the ticks inside the data's band: a fitted axis is not stretched to a round number.
  a.lo = from_zero ? std::min(lo, a.ticks.front()) : lo;
  a.hi = from_zero ? std::max(hi, a.ticks.back()) : hi;
  a.ticks.erase(std::remove_if(a.ticks.begin(), a.ticks.end(),
                               [&](double t) { return t < a.lo - 1e-12 || t > a.hi + 1e-12; }),
                a.ticks.end());
  return a;
}

Axis x_value_axis(const std::vector<double>& values) {
  const auto [mn, mx] = std::minmax_element(values.begin(), values.end());
  Axis a;
  if (*mn > 0 && *mx / *mn > 4) {
    a.scale = AxisScale::Log2;
    double e0 = std::floor(std::log2(*mn)), e1 = std::ceil(std::log2(*mx));
    for (double e = e0; e <= e1 + 1e-9; e += 1) a.ticks.push_back(std::exp2(e));
    a.lo = std::exp2(e0);
    a.hi = std::exp2(e1);
    return a;
  }
  a.scale = AxisScale::Linear;
  const double span = *mx - *mn;
  const double pad = span > 0 ? 0.08 * span : std::max(1.0, std::fabs(*mx) * 0.5);
  a.lo = *mn - pad;
  a.hi = *mx + pad;
  // Whole-number values (degrees, batch sizes) get their own ticks when there are few.
  std::vector<double> distinct(values);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  const bool whole =
      std::all_of(distinct.begin(), distinct.end(), [](double v) { return std::trunc(v) == v; });
  a.ticks = whole && distinct.size() <= 12 ? distinct : nice_ticks(*mn, *mx, 6);
  return a;
}

Axis category_axis(std::vector<std::string> labels) {
  Axis a;
  a.scale = AxisScale::Category;
  a.lo = -0.5;
  a.hi = static_cast<double>(labels.size()) - 0.5;
  for (std::size_t i = 0; i < labels.size(); ++i) a.ticks.push_back(static_cast<double>(i));
  a.categories = std::move(labels);
  return a;
}

namespace canvas {

void set_colour(cairo_t* cr, int k) {
  const double* rgb = kPalette[k % kPaletteSize];
  cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
}

// Shapes differ from one series to the next as well, for grey print and neighbouring hues.
void marker(cairo_t* cr, int shape, double x, double y) {
  const double r = 4.5;
  switch (shape % 4) {
    case 0:
      cairo_arc(cr, x, y, r, 0, 2 * M_PI);
      break;
    case 1:
      cairo_rectangle(cr, x - r, y - r, 2 * r, 2 * r);
      break;
    case 2:
      cairo_move_to(cr, x, y - r - 1);
      cairo_line_to(cr, x + r + 1, y + r);
      cairo_line_to(cr, x - r - 1, y + r);
      cairo_close_path(cr);
      break;
    default:
      cairo_move_to(cr, x, y - r - 1);
      cairo_line_to(cr, x + r + 1, y);
      cairo_line_to(cr, x, y + r + 1);
      cairo_line_to(cr, x - r - 1, y);
      cairo_close_path(cr);
      break;
  }
  cairo_fill(cr);
}

void cross(cairo_t* cr, double x, double y) {
  const double r = 6;
  cairo_set_source_rgb(cr, kMarkedRgb[0], kMarkedRgb[1], kMarkedRgb[2]);
  cairo_set_line_width(cr, 2.5);
  cairo_move_to(cr, x - r, y - r);
  cairo_line_to(cr, x + r, y + r);
  cairo_move_to(cr, x - r, y + r);
  cairo_line_to(cr, x + r, y - r);
  cairo_stroke(cr);
}

void text_at(cairo_t* cr, const std::string& s, double x, double y, double align_x) {
  show_text(cr, s, x, y, align_x, 0);
}

/// The mark of a linear y axis that does not start at zero: a gap in the axis line near its
/// foot, crossed by two parallel slashes.
static void draw_axis_break(cairo_t* cr, const Frame& f) {
  const double x = f.left, y = f.top + f.height - 14;
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_rectangle(cr, x - 6, y - 3, 12, 6);
  cairo_fill(cr);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_line_width(cr, 1.2);
  for (double dy : {-3.0, 3.0}) {
    cairo_move_to(cr, x - 7, y + dy + 3);
    cairo_line_to(cr, x + 7, y + dy - 3);
  }
  cairo_stroke(cr);
}

Frame draw_frame(cairo_t* cr, const std::string& title, const Axis& x, const Axis& y,
                 const std::vector<LegendEntry>& legend, double legend_width) {
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  Frame f{x, y, kLeft, kTop, kWidth - kLeft - kRight, kHeight - kTop - kBottom};

  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_font_size(cr, 18);
  text_at(cr, title, (kWidth + legend_width) / 2, 32, 0.5);

  cairo_set_font_size(cr, 12);
  cairo_set_line_width(cr, 1);
  // Labels wider than the space between ticks alternate between two rows.
  double widest = 0;
  for (double v : x.ticks) widest = std::max(widest, text_width(cr, x.tick_text(v)));
  const bool stagger =
      x.ticks.size() > 1 && widest + 6 > f.width / static_cast<double>(x.ticks.size());
  for (std::size_t i = 0; i < x.ticks.size(); ++i) {
    const double px = f.px(x.ticks[i]);
    cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
    cairo_move_to(cr, px, f.top);
    cairo_line_to(cr, px, f.top + f.height);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
    text_at(cr, x.tick_text(x.ticks[i]), px, f.top + f.height + 18 + (stagger && i % 2 ? 14 : 0),
            0.5);
  }
  for (double v : y.ticks) {
    const double py = f.py(v);
    cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
    cairo_move_to(cr, f.left, py);
    cairo_line_to(cr, f.left + f.width, py);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
    text_at(cr, y.tick_text(v), f.left - 8, py + 4, 1.0);
  }
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_rectangle(cr, f.left, f.top, f.width, f.height);
  cairo_stroke(cr);
  if (y.has_break()) draw_axis_break(cr, f);

  const auto scale_note = [](const Axis& a) {
    return a.scale == AxisScale::Log2    ? ", log2 scale"
           : a.scale == AxisScale::Log10 ? ", log scale"
                                         : "";
  };
  const std::string x_label = x.label + scale_note(x), y_label = y.label + scale_note(y);
  cairo_set_font_size(cr, 14);
  text_at(cr, x_label, f.left + f.width / 2, kHeight - (stagger ? 10 : 22), 0.5);
  show_text(cr, y_label, 24, f.top + f.height / 2, 0.5, -90);

  cairo_set_font_size(cr, 12);
  const double lx = kWidth - kRight + 20;
  for (std::size_t k = 0; k < legend.size(); ++k) {
    const auto& e = legend[k];
    const double ly = kTop + 10 + 22 * static_cast<double>(k);
    if (e.kind == LegendEntry::Cross) {
      cross(cr, lx + 14, ly);
    } else if (e.kind == LegendEntry::Box) {
      set_colour(cr, e.colour);
      cairo_rectangle(cr, lx + 4, ly - 7, 20, 14);
      cairo_fill(cr);
    } else {
      set_colour(cr, e.colour);
      cairo_set_line_width(cr, 2.2);
      cairo_move_to(cr, lx, ly);
      cairo_line_to(cr, lx + 28, ly);
      cairo_stroke(cr);
      marker(cr, e.colour, lx + 14, ly);
    }
    cairo_set_source_rgb(cr, 0, 0, 0);
    text_at(cr, e.label, lx + 36, ly + 4, 0);
  }
  return f;
}

void draw_marked(cairo_t* cr, const Frame& f, const std::vector<MarkedPoint>& marked) {
  cairo_set_font_size(cr, 11);
  for (const auto& m : marked) {
    // With a value: at it; without (no result): on the x axis. The status is written above.
    const double x = f.px(m.x), y = m.has_y ? f.py(m.y) : f.top + f.height - 8;
    cross(cr, x, y);
    text_at(cr, m.status, x, y - 10, 0.5);
  }
}

}  // namespace canvas

void write_drawing(const std::string& path_stem, const std::vector<LegendEntry>& legend,
                   const std::function<void(cairo_t*, double legend_width)>& draw, double dpi) {
  // Measure the legend first so the canvas fits the longest label.
  cairo_surface_t* probe = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
  cairo_t* pc = cairo_create(probe);
  cairo_select_font_face(pc, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(pc, 12);
  double longest = 0;
  for (const auto& e : legend) longest = std::max(longest, text_width(pc, e.label));
  cairo_destroy(pc);
  cairo_surface_destroy(probe);
  const double legend_width = legend.empty() ? 0.0 : longest + 36 + 30;
  const double width = kWidth + legend_width;
  const double height = std::max(kHeight, kTop + 30 + 22 * static_cast<double>(legend.size()));

  const std::string svg = path_stem + ".svg", png = path_stem + ".png";
  std::string bytes;
  cairo_surface_t* s = cairo_svg_surface_create_for_stream(append_bytes, &bytes, width, height);
  check(s, svg);
  // Units of CSS pixels (96 per inch; cairo's default is the point), as the PNG's scale assumes.
  cairo_svg_surface_set_document_unit(s, CAIRO_SVG_UNIT_PX);
  cairo_t* cr = cairo_create(s);
  std::string texts;
  g_svg_text = &texts;
  draw(cr, legend_width);
  g_svg_text = nullptr;
  cairo_destroy(cr);
  cairo_surface_finish(s);
  check(s, svg);
  cairo_surface_destroy(s);
  const auto end = bytes.rfind("</svg>");
  if (end != std::string::npos) bytes.insert(end, "<g id=\"text\">\n" + texts + "</g>\n");
  write_output_file(svg, bytes);

  // The PNG: the same drawing, its units (CSS pixels, 96 per inch) scaled to `dpi`.
  const double scale = dpi / kCssDpi;
  s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, static_cast<int>(std::ceil(width * scale)),
                                 static_cast<int>(std::ceil(height * scale)));
  check(s, png);
  cr = cairo_create(s);
  cairo_scale(cr, scale, scale);
  draw(cr, legend_width);
  cairo_destroy(cr);
  bytes.clear();
  cairo_status_t st = cairo_surface_write_to_png_stream(s, append_bytes, &bytes);
  cairo_surface_destroy(s);
  if (st != CAIRO_STATUS_SUCCESS)
    throw std::runtime_error("cannot draw " + png + ": " + cairo_status_to_string(st));
  write_output_file(png, with_png_dpi(bytes, dpi));
}

}  // namespace tpusim::cli
