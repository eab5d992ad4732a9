#pragma once
// Reads a PNG written by tpusim plot with cairo and looks for colours among its pixels.
#include <cairo.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

/// Calls `visit(x, y, k)` for every pixel of the PNG whose colour is `colours[k]` (8-bit, within
/// 1 per channel).
template <typename Visit>
void colour_pixels(const std::string& png, const std::vector<std::array<int, 3>>& colours,
                   Visit visit) {
  cairo_surface_t* s = cairo_image_surface_create_from_png(png.c_str());
  REQUIRE(cairo_surface_status(s) == CAIRO_STATUS_SUCCESS);
  cairo_surface_flush(s);
  const int w = cairo_image_surface_get_width(s), h = cairo_image_surface_get_height(s);
  const int stride = cairo_image_surface_get_stride(s);
  const unsigned char* data = cairo_image_surface_get_data(s);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const auto* px = reinterpret_cast<const uint32_t*>(data + y * stride) + x;
      const int r = (*px >> 16) & 255, g = (*px >> 8) & 255, b = *px & 255;
      for (std::size_t k = 0; k < colours.size(); ++k)
        if (std::abs(r - colours[k][0]) <= 1 && std::abs(g - colours[k][1]) <= 1 &&
            std::abs(b - colours[k][2]) <= 1)
          visit(x, y, k);
    }
  cairo_surface_destroy(s);
}

/// True if some pixel of the PNG is `rgb`.
inline bool png_has_colour(const std::string& png, const std::array<int, 3>& rgb) {
  bool found = false;
  colour_pixels(png, {rgb}, [&](int, int, std::size_t) { found = true; });
  return found;
}
