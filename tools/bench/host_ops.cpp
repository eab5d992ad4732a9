// tpusim_host_ops_bench: the per-operation CPU costs of the host input pipelines (and, in
// host_metric_ops.cpp, of the evaluation metrics), measured on
// this machine with real code. Each operation runs on one thread over a synthetic input for a
// fixed number of repetitions; the program prints, over rounds, the fastest and the median ns per
// unit (the unit is what models/input_pipeline.cpp multiplies the cost by: decoded pixels,
// output pixels, IoU pairs, bytes, tokens). docs/train.md quotes its output as the defaults of
// hardware.host.cost.* (declared in models/input_pipeline.cpp). On a shared machine the fastest
// round is the one least disturbed by other work.
//
//   tpusim_host_ops_bench [--rounds N]
//
// JPEG decode uses libjpeg-turbo (TurboJPEG API); the rest is plain C++ written here in the
// way an input pipeline does it (bilinear resize, flip, colour jitter, normalise, IoU matching
// with argmax, box encoding, record parsing with varints and a CRC, sequence packing).
#include <turbojpeg.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tools/bench/host_ops_timing.hpp"

namespace {

using host_ops_bench::g_sink;
using HostOpsResult = host_ops_bench::Result;
const auto& host_ops_time = host_ops_bench::time_per_unit;

/// A synthetic photograph-like RGB image: smooth gradients, a few shapes and sensor noise, so
/// that the JPEG has the detail of a photo (about 1.5 to 2 bits per pixel at quality 90).
std::vector<std::uint8_t> synthetic_image(int w, int h) {
  std::vector<std::uint8_t> img(static_cast<std::size_t>(w) * h * 3);
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 6);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const double u = static_cast<double>(x) / w, v = static_cast<double>(y) / h;
      const double ring = std::sin(40 * std::hypot(u - 0.4, v - 0.6));
      const double stripes = std::sin(25 * u + 9 * v) * std::cos(17 * v);
      const double base[3] = {120 + 80 * u + 30 * ring, 90 + 60 * v + 40 * stripes,
                              70 + 50 * u * v + 20 * ring * stripes};
      for (int c = 0; c < 3; ++c) {
        const double p = base[c] + noise(rng);
        img[(static_cast<std::size_t>(y) * w + x) * 3 + c] =
            static_cast<std::uint8_t>(std::clamp(p, 0.0, 255.0));
      }
    }
  return img;
}

/// Bilinear resize of an interleaved image with `ch` channels to out_w x out_h floats.
void bilinear_resize(const std::uint8_t* src, int w, int h, int ch, float* dst, int out_w,
                     int out_h) {
  const float sx = static_cast<float>(w) / out_w, sy = static_cast<float>(h) / out_h;
  for (int y = 0; y < out_h; ++y) {
    const float fy = std::max(0.0f, (y + 0.5f) * sy - 0.5f);
    const int y0 = std::min(static_cast<int>(fy), h - 1), y1 = std::min(y0 + 1, h - 1);
    const float wy = fy - y0;
    for (int x = 0; x < out_w; ++x) {
      const float fx = std::max(0.0f, (x + 0.5f) * sx - 0.5f);
      const int x0 = std::min(static_cast<int>(fx), w - 1), x1 = std::min(x0 + 1, w - 1);
      const float wx = fx - x0;
      for (int c = 0; c < ch; ++c) {
        auto at = [&](int yy, int xx) {
          return static_cast<float>(src[(static_cast<std::size_t>(yy) * w + xx) * ch + c]);
        };
        const float top = at(y0, x0) + wx * (at(y0, x1) - at(y0, x0));
        const float bot = at(y1, x0) + wx * (at(y1, x1) - at(y1, x0));
        dst[(static_cast<std::size_t>(y) * out_w + x) * ch + c] = top + wy * (bot - top);
      }
    }
  }
}

struct HostOpsBox {
  float y0, x0, y1, x1;
};

float host_ops_iou(const HostOpsBox& a, const HostOpsBox& b) {
  const float ih = std::max(0.0f, std::min(a.y1, b.y1) - std::max(a.y0, b.y0));
  const float iw = std::max(0.0f, std::min(a.x1, b.x1) - std::max(a.x0, b.x0));
  const float inter = ih * iw;
  const float area_a = (a.y1 - a.y0) * (a.x1 - a.x0), area_b = (b.y1 - b.y0) * (b.x1 - b.x0);
  return inter / (area_a + area_b - inter);
}

std::vector<HostOpsBox> random_boxes(int n, std::mt19937& rng) {
  std::uniform_real_distribution<float> pos(0, 0.8f), size(0.02f, 0.4f);
  std::vector<HostOpsBox> boxes(n);
  for (auto& b : boxes) {
    b.y0 = pos(rng);
    b.x0 = pos(rng);
    b.y1 = std::min(1.0f, b.y0 + size(rng));
    b.x1 = std::min(1.0f, b.x0 + size(rng));
  }
  return boxes;
}

/// A record of `values` int32 features as a protobuf-style stream of varints, with a trailing
/// CRC32 (bitwise, as a reader that checks records computes it).
std::vector<std::uint8_t> make_record(int values, std::mt19937& rng) {
  std::vector<std::uint8_t> rec;
  std::uniform_int_distribution<std::uint32_t> token(0, 30521);
  for (int i = 0; i < values; ++i) {
    std::uint32_t v = token(rng);
    while (v >= 0x80) {
      rec.push_back(static_cast<std::uint8_t>(v | 0x80));
      v >>= 7;
    }
    rec.push_back(static_cast<std::uint8_t>(v));
  }
  return rec;
}

std::uint32_t host_ops_crc32(const std::uint8_t* p, std::size_t n) {
  static std::uint32_t table[256];
  static bool ready = false;
  if (!ready) {
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0x82F63B78u ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
    ready = true;
  }
  std::uint32_t crc = ~0u;
  for (std::size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

/// Flip, colour jitter and normalise of an ow x oh RGB float image.
void bench_pixel_ops(int rounds, int ow, int oh, std::vector<float>& resized,
                     std::vector<HostOpsResult>& out) {
  out.push_back(
      {"flip_ns_per_pixel", "pixel (3 channels)", host_ops_time(rounds, 200, double(ow) * oh, [&] {
         for (int y = 0; y < oh; ++y) {
           float* row = resized.data() + static_cast<std::size_t>(y) * ow * 3;
           for (int a = 0, b = ow - 1; a < b; ++a, --b)
             for (int c = 0; c < 3; ++c) std::swap(row[a * 3 + c], row[b * 3 + c]);
         }
         g_sink = g_sink + resized[5];
       })});
  // Colour jitter as the SSD pipeline does it: brightness, contrast, saturation and hue shift
  // (a hue rotation in YIQ space), then a clamp.
  out.push_back({"color_jitter_ns_per_pixel", "pixel (3 channels)",
                 host_ops_time(rounds, 50, double(ow) * oh, [&] {
                   const float bright = 0.1f, contrast = 1.1f, sat = 0.9f, ch = 0.99f, sh = 0.1f;
                   for (std::size_t p = 0; p < resized.size(); p += 3) {
                     float r = resized[p] + bright, g = resized[p + 1] + bright,
                           b = resized[p + 2] + bright;
                     const float grey = 0.299f * r + 0.587f * g + 0.114f * b;
                     r = grey + sat * contrast * (r - grey);
                     g = grey + sat * contrast * (g - grey);
                     b = grey + sat * contrast * (b - grey);
                     const float yy = 0.299f * r + 0.587f * g + 0.114f * b;
                     const float i = 0.596f * r - 0.274f * g - 0.322f * b;
                     const float q = 0.211f * r - 0.523f * g + 0.312f * b;
                     const float i2 = ch * i - sh * q, q2 = sh * i + ch * q;
                     resized[p] = std::clamp(yy + 0.956f * i2 + 0.621f * q2, 0.0f, 255.0f);
                     resized[p + 1] = std::clamp(yy - 0.272f * i2 - 0.647f * q2, 0.0f, 255.0f);
                     resized[p + 2] = std::clamp(yy - 1.106f * i2 + 1.703f * q2, 0.0f, 255.0f);
                   }
                   g_sink = g_sink + resized[9];
                 })});
  std::vector<std::uint16_t> bf16(resized.size());
  out.push_back({"normalize_ns_per_pixel", "pixel (3 channels, to bf16)",
                 host_ops_time(rounds, 100, double(ow) * oh, [&] {
                   const float mean[3] = {123.7f, 116.3f, 103.5f},
                               inv_std[3] = {1 / 58.4f, 1 / 57.1f, 1 / 57.4f};
                   for (std::size_t p = 0; p < resized.size(); ++p) {
                     const float v = (resized[p] - mean[p % 3]) * inv_std[p % 3];
                     std::uint32_t bits;
                     std::memcpy(&bits, &v, 4);
                     bf16[p] = static_cast<std::uint16_t>(bits >> 16);
                   }
                   g_sink = g_sink + bf16[11];
                 })});
}

void bench_image_ops(int rounds, std::vector<HostOpsResult>& out) {
  const int w = 640, h = 480;  // a COCO-sized photograph
  const std::vector<std::uint8_t> img = synthetic_image(w, h);
  tjhandle enc = tjInitCompress();
  unsigned char* jpeg = nullptr;
  unsigned long jpeg_size = 0;
  if (tjCompress2(enc, img.data(), w, 0, h, TJPF_RGB, &jpeg, &jpeg_size, TJSAMP_420, 90, 0)) {
    std::fprintf(stderr, "host_ops: JPEG encode failed: %s\n", tjGetErrorStr2(enc));
    std::exit(1);
  }
  std::fprintf(stderr, "host_ops: %dx%d JPEG at quality 90, 4:2:0: %lu bytes (%.2f bits/pixel)\n",
               w, h, jpeg_size, 8.0 * jpeg_size / (w * h));
  tjhandle dec = tjInitDecompress();
  std::vector<std::uint8_t> rgb(img.size());
  out.push_back(
      {"jpeg_decode_ns_per_pixel", "decoded pixel", host_ops_time(rounds, 20, double(w) * h, [&] {
         tjDecompress2(dec, jpeg, jpeg_size, rgb.data(), w, 0, h, TJPF_RGB, 0);
         g_sink = g_sink + rgb[1234];
       })});
  tjFree(jpeg);
  tjDestroy(enc);
  tjDestroy(dec);

  const int ow = 300, oh = 300;
  std::vector<float> resized(static_cast<std::size_t>(ow) * oh * 3);
  out.push_back({"resize_ns_per_pixel", "output pixel (3 channels)",
                 host_ops_time(rounds, 20, double(ow) * oh, [&] {
                   bilinear_resize(rgb.data(), w, h, 3, resized.data(), ow, oh);
                   g_sink = g_sink + resized[77];
                 })});
  bench_pixel_ops(rounds, ow, oh, resized, out);
  // Ground-truth mask crop: a 1-channel bilinear resize of an instance's window of the
  // image-sized mask to 116x116.
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(w) * h);
  for (std::size_t i = 0; i < mask.size(); ++i) mask[i] = rgb[i * 3] > 128;
  std::vector<float> mask_out(116 * 116);
  out.push_back(
      {"mask_crop_ns_per_pixel", "output mask pixel", host_ops_time(rounds, 200, 116.0 * 116, [&] {
         bilinear_resize(mask.data() + 100 * w + 200, 160, 120, 1, mask_out.data(), 116, 116);
         g_sink = g_sink + mask_out[3];
       })});
}

void bench_box_and_record_ops(int rounds, std::vector<HostOpsResult>& out) {
  std::mt19937 rng(11);
  const int gt = 8, anchors = 8732;
  const std::vector<HostOpsBox> truth = random_boxes(gt, rng), prior = random_boxes(anchors, rng);
  std::vector<int> match(anchors);
  // Matching: IoU of every ground-truth box with every anchor, best box per anchor (argmax).
  out.push_back({"iou_ns_per_pair", "box x anchor pair",
                 host_ops_time(rounds, 100, double(gt) * anchors, [&] {
                   for (int a = 0; a < anchors; ++a) {
                     float best = -1;
                     int arg = -1;
                     for (int g = 0; g < gt; ++g) {
                       const float v = host_ops_iou(truth[g], prior[a]);
                       if (v > best) best = v, arg = g;
                     }
                     match[a] = best >= 0.5f ? arg : -1;
                   }
                   g_sink = g_sink + match[17];
                 })});
  std::vector<float> target(static_cast<std::size_t>(anchors) * 4);
  // Box encoding: centre offsets and log sizes of the matched box against each anchor.
  out.push_back({"box_encode_ns_per_anchor", "anchor", host_ops_time(rounds, 200, anchors, [&] {
                   for (int a = 0; a < anchors; ++a) {
                     const HostOpsBox& p = prior[a];
                     const HostOpsBox& g = truth[a % gt];
                     const float ph = p.y1 - p.y0, pw = p.x1 - p.x0;
                     target[a * 4 + 0] = 10 * ((g.y0 + g.y1 - p.y0 - p.y1) / 2) / ph;
                     target[a * 4 + 1] = 10 * ((g.x0 + g.x1 - p.x0 - p.x1) / 2) / pw;
                     target[a * 4 + 2] = 5 * std::log((g.y1 - g.y0) / ph);
                     target[a * 4 + 3] = 5 * std::log((g.x1 - g.x0) / pw);
                   }
                   g_sink = g_sink + target[9];
                 })});
  const std::vector<std::uint8_t> rec = make_record(4 * 512, rng);
  std::vector<std::int32_t> values(4 * 512);
  out.push_back({"record_parse_ns_per_byte", "record byte",
                 host_ops_time(rounds, 200, static_cast<double>(rec.size()), [&] {
                   const std::uint32_t crc = host_ops_crc32(rec.data(), rec.size());
                   std::size_t i = 0, n = 0;
                   while (i < rec.size()) {
                     std::uint32_t v = 0;
                     for (int shift = 0;; shift += 7) {
                       const std::uint8_t b = rec[i++];
                       v |= static_cast<std::uint32_t>(b & 0x7f) << shift;
                       if (!(b & 0x80)) break;
                     }
                     values[n++] = static_cast<std::int32_t>(v);
                   }
                   g_sink = g_sink + values[5] + crc;
                 })});
  // Packing: greedy first-fit of sentences into 256-token rows, writing tokens, segment ids and
  // positions.
  std::uniform_int_distribution<int> len(8, 60);
  std::vector<int> lengths(2000);
  for (int& l : lengths) l = len(rng);
  long tokens = 0;
  for (int l : lengths) tokens += l;
  std::vector<std::int32_t> rows(static_cast<std::size_t>(tokens) * 2 * 3);
  out.push_back(
      {"pack_ns_per_token", "token", host_ops_time(rounds, 50, static_cast<double>(tokens), [&] {
         std::vector<int> fill;
         for (int l : lengths) {
           std::size_t r = 0;
           while (r < fill.size() && fill[r] + l > 256) ++r;
           if (r == fill.size()) fill.push_back(0);
           std::int32_t* row = rows.data() + r * 256 * 3;
           for (int t = 0; t < l; ++t) {
             row[(fill[r] + t) * 3 + 0] = t * 31 + 7;
             row[(fill[r] + t) * 3 + 1] = static_cast<std::int32_t>(r);
             row[(fill[r] + t) * 3 + 2] = t;
           }
           fill[r] += l;
         }
         g_sink = g_sink + rows[3];
       })});
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 9;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--rounds") rounds = std::max(1, std::atoi(argv[i + 1]));
  std::vector<HostOpsResult> results;
  bench_image_ops(rounds, results);
  bench_box_and_record_ops(rounds, results);
  host_ops_bench::bench_metric_ops(rounds, results);
  std::printf("%-48s %9s %9s  %s\n", "parameter", "min ns", "median ns", "per");
  for (const auto& r : results)
    std::printf("hardware.host.cost.%-29s %9.2f %9.2f  %s\n", r.param, r.ns.min_ns, r.ns.median_ns,
                r.unit);
  return 0;
}
