#pragma once
// Reads a PNG written by tpusim plot with cairo and looks for a colour among its pixels.
#include <cairo.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <string>

/// True if some pixel of the PNG is `rgb` (8-bit, within 1 per channel).
inline bool png_has_colour(const std::string& png, const std::array<int, 3>& rgb) {
  cairo_surface_t* s = cairo_image_surface_create_from_png(png.c_str());
  REQUIRE(cairo_surface_status(s) == CAIRO_STATUS_SUCCESS);
  cairo_surface_flush(s);
  const int w = cairo_image_surface_get_width(s), h = cairo_image_surface_get_height(s);
  const int stride = cairo_image_surface_get_stride(s);
  const unsigned char* data = cairo_image_surface_get_data(s);
  bool found = false;
  for (int y = 0; y < h && !found; ++y)
    for (int x = 0; x < w && !found; ++x) {
      const auto px = *(reinterpret_cast<const uint32_t*>(data + y * stride) + x);
      const int r = (px >> 16) & 255, g = (px >> 8) & 255, b = px & 255;
      found = std::abs(r - rgb[0]) <= 1 && std::abs(g - rgb[1]) <= 1 && std::abs(b - rgb[2]) <= 1;
    }
  cairo_surface_destroy(s);
  return found;
}
