// The per-operation CPU costs of the host-side evaluation metrics (COCO mAP of boxes and masks,
// BLEU), measured with real C++ loops of what the metric code does (pycocotools' COCOeval and
// mask API; a BLEU of n-gram counts): the per-image sort of detections by score, the greedy match
// of detections against ground truth at every IoU threshold and area range, the accumulation of
// precision and recall per category, run-length encoding of a binary mask at image size, the IoU
// of two run-length-encoded masks, and the n-gram counting of BLEU. The units are those that
// models/eval_metric.cpp multiplies the costs by (docs/train.md). The metric's IoU of a detection
// box with a ground-truth box is the pipeline's IoU (hardware.host.cost.iou_ns_per_pair) and the
// paste of a 28 x 28 mask into its box is the pipeline's one-channel bilinear resize
// (mask_crop_ns_per_pixel): host_ops.cpp measures both.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <unordered_map>
#include <vector>

#include "tools/bench/host_ops_timing.hpp"

namespace host_ops_bench {
namespace {

// COCOeval's defaults: 10 IoU thresholds 0.50:0.05:0.95, 4 area ranges (all, small, medium,
// large), 101 recall points.
constexpr int kMetricThresholds = 10;
constexpr int kMetricAreas = 4;
constexpr int kMetricRecallPoints = 101;

/// Scores of `n` detections sorted, highest first, as indices (COCOeval sorts each image's
/// detections by score before matching).
Result bench_score_sort(int rounds) {
  const int d = 200;  // SSD's detections per image
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> u(0, 1);
  std::vector<float> scores(d);
  for (float& s : scores) s = u(rng);
  std::vector<int> order(d);
  return {"score_sort_ns_per_compare", "compare (d log2 d per image of d detections)",
          time_per_unit(rounds, 2000, d * std::log2(static_cast<double>(d)), [&] {
            std::iota(order.begin(), order.end(), 0);
            std::sort(order.begin(), order.end(),
                      [&](int a, int b) { return scores[a] > scores[b]; });
            g_sink = g_sink + order[3];
          })};
}

/// COCOeval.evaluateImg's greedy match: for every IoU threshold, each detection in score order
/// takes the best still unmatched ground truth whose IoU passes the threshold (a matched crowd or
/// an ignored ground truth is skipped as there), per area range with that range's ignore flags.
Result bench_greedy_match(int rounds) {
  const int d = 200, g = 8;
  std::mt19937 rng(22);
  std::uniform_real_distribution<float> u(0, 1);
  std::vector<float> iou(static_cast<std::size_t>(d) * g);
  for (float& v : iou) v = u(rng) < 0.9f ? 0.0f : u(rng);  // most pairs do not overlap
  std::vector<std::uint8_t> ignore(static_cast<std::size_t>(kMetricAreas) * g);
  for (auto& v : ignore) v = u(rng) < 0.3f;
  std::vector<int> gt_match(static_cast<std::size_t>(kMetricThresholds) * g);
  std::vector<int> dt_match(static_cast<std::size_t>(kMetricThresholds) * d);
  const double units = double(d) * g * kMetricThresholds * kMetricAreas;
  return {"greedy_match_ns_per_step", "detection x ground truth x IoU threshold x area range",
          time_per_unit(rounds, 200, units, [&] {
            long matched = 0;
            for (int a = 0; a < kMetricAreas; ++a) {
              const std::uint8_t* ig = ignore.data() + a * g;
              std::fill(gt_match.begin(), gt_match.end(), -1);
              for (int t = 0; t < kMetricThresholds; ++t) {
                const float thr = 0.5f + 0.05f * t;
                for (int k = 0; k < d; ++k) {
                  float best = std::min(thr, 1 - 1e-10f);
                  int m = -1;
                  for (int j = 0; j < g; ++j) {
                    if (gt_match[t * g + j] >= 0) continue;
                    if (m > -1 && !ig[m] && ig[j]) break;
                    if (iou[k * g + j] < best) continue;
                    best = iou[k * g + j];
                    m = j;
                  }
                  dt_match[t * d + k] = m;
                  if (m >= 0) gt_match[t * g + m] = k, ++matched;
                }
              }
            }
            g_sink = g_sink + matched + dt_match[7];
          })};
}

/// COCOeval.accumulate for one category, area range and detection cap: the detections of every
/// image sorted by score, then per IoU threshold the cumulative true and false positives,
/// precision and recall, the precision envelope and its value at the 101 recall points.
Result bench_accumulate(int rounds) {
  const int n = 5000 * 200 / 80;  // SSD's detections of one category over the 5000 val images
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> u(0, 1);
  std::vector<float> scores(n);
  for (float& s : scores) s = u(rng);
  std::vector<std::uint8_t> tp(static_cast<std::size_t>(kMetricThresholds) * n);
  for (auto& v : tp) v = u(rng) < 0.4f;
  const int positives = n / 4;
  std::vector<int> order(n);
  std::vector<double> precision(n), recall(n);
  std::vector<double> at_recall(kMetricRecallPoints);
  return {"accumulate_ns_per_detection", "detection x area range x detection cap",
          time_per_unit(rounds, 20, n, [&] {
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(),
                             [&](int a, int b) { return scores[a] > scores[b]; });
            double total = 0;
            for (int t = 0; t < kMetricThresholds; ++t) {
              const std::uint8_t* hit = tp.data() + static_cast<std::size_t>(t) * n;
              double tps = 0, fps = 0;
              for (int i = 0; i < n; ++i) {
                const bool h = hit[order[i]];
                tps += h;
                fps += !h;
                recall[i] = tps / positives;
                precision[i] = tps / (tps + fps);
              }
              for (int i = n - 1; i > 0; --i)
                precision[i - 1] = std::max(precision[i - 1], precision[i]);
              for (int r = 0; r < kMetricRecallPoints; ++r) {
                const double target = r / 100.0;
                const auto it = std::lower_bound(recall.begin(), recall.end(), target);
                at_recall[r] = it == recall.end() ? 0 : precision[it - recall.begin()];
              }
              total += at_recall[50];
            }
            g_sink = g_sink + total;
          })};
}

/// A binary mask of an ellipse of `bw` x `bh` pixels at (x0, y0) in a w x h image, column-major
/// (COCO's run-length encoding walks columns).
std::vector<std::uint8_t> metric_ellipse_mask(int w, int h, int x0, int y0, int bw, int bh) {
  std::vector<std::uint8_t> m(static_cast<std::size_t>(w) * h, 0);
  for (int x = 0; x < w; ++x)
    for (int y = 0; y < h; ++y) {
      const double dx = (x - x0 - bw / 2.0) / (bw / 2.0), dy = (y - y0 - bh / 2.0) / (bh / 2.0);
      m[static_cast<std::size_t>(x) * h + y] = dx * dx + dy * dy <= 1;
    }
  return m;
}

/// pycocotools' rleEncode: alternating run lengths of 0s and 1s, starting with 0s.
std::vector<std::uint32_t> metric_rle_encode(const std::vector<std::uint8_t>& m) {
  std::vector<std::uint32_t> runs;
  std::uint8_t value = 0;
  std::uint32_t count = 0;
  for (std::uint8_t v : m) {
    if (v != value) {
      runs.push_back(count);
      count = 0;
      value = v;
    }
    ++count;
  }
  runs.push_back(count);
  return runs;
}

/// Intersection over union of two run-length-encoded masks of the same image (pycocotools'
/// rleIou: a merge of the two run sequences).
double metric_rle_iou(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b) {
  std::size_t i = 0, j = 0;
  std::uint32_t ca = a[0], cb = b[0];
  bool va = false, vb = false;
  std::uint64_t inter = 0, uni = 0;
  while (i < a.size() && j < b.size()) {
    const std::uint32_t c = std::min(ca, cb);
    if (va && vb) inter += c;
    if (va || vb) uni += c;
    ca -= c;
    cb -= c;
    if (ca == 0 && ++i < a.size()) ca = a[i], va = !va;
    if (cb == 0 && ++j < b.size()) cb = b[j], vb = !vb;
  }
  return uni ? static_cast<double>(inter) / static_cast<double>(uni) : 0.0;
}

// The masks: a 640 x 480 COCO image with an object of 128 x 96 pixels (an ASSUMED typical
// detection: docs/train.md), the detection shifted by 10 pixels against the ground truth.
constexpr int kMetricImageW = 640, kMetricImageH = 480, kMetricObjectW = 128, kMetricObjectH = 96;

void bench_mask_ops(int rounds, std::vector<Result>& out) {
  const auto gt =
      metric_ellipse_mask(kMetricImageW, kMetricImageH, 200, 150, kMetricObjectW, kMetricObjectH);
  const auto det =
      metric_ellipse_mask(kMetricImageW, kMetricImageH, 210, 160, kMetricObjectW, kMetricObjectH);
  out.push_back({"rle_encode_ns_per_pixel", "image pixel of a detection's mask",
                 time_per_unit(rounds, 50, double(kMetricImageW) * kMetricImageH, [&] {
                   const auto runs = metric_rle_encode(det);
                   g_sink = g_sink + runs.size();
                 })});
  const auto rg = metric_rle_encode(gt), rd = metric_rle_encode(det);
  out.push_back(
      {"mask_iou_ns_per_pair", "detection x ground-truth mask pair (128 x 96 objects)",
       time_per_unit(rounds, 5000, 1, [&] { g_sink = g_sink + metric_rle_iou(rd, rg); })});
}

/// BLEU's statistics of one sentence: the n-grams (n = 1..4) of the hypothesis and the reference
/// counted in hash maps, then the hypothesis counts clipped by the reference's.
Result bench_ngram_count(int rounds) {
  const int len = 97;  // workload.decode_length
  std::mt19937 rng(24);
  std::uniform_int_distribution<std::uint32_t> token(0, 33707);
  std::vector<std::uint32_t> ref(len), hyp(len);
  for (int i = 0; i < len; ++i) {
    ref[i] = token(rng);
    hyp[i] = i % 3 == 0 ? token(rng) : ref[i];  // two thirds of the words agree
  }
  double ngrams = 0;
  for (int n = 1; n <= 4; ++n) ngrams += 2.0 * (len - n + 1);
  return {"ngram_count_ns_per_ngram", "n-gram of the hypothesis or the reference (n = 1..4)",
          time_per_unit(rounds, 500, ngrams, [&] {
            long clipped = 0;
            for (int n = 1; n <= 4; ++n) {
              std::unordered_map<std::uint64_t, int> rc, hc;
              auto key = [n](const std::vector<std::uint32_t>& s, int i) {
                std::uint64_t k = 1469598103934665603ull;
                for (int j = 0; j < n; ++j) k = (k ^ s[i + j]) * 1099511628211ull;
                return k;
              };
              for (int i = 0; i + n <= len; ++i) ++rc[key(ref, i)];
              for (int i = 0; i + n <= len; ++i) ++hc[key(hyp, i)];
              for (const auto& [k, c] : hc) {
                const auto it = rc.find(k);
                if (it != rc.end()) clipped += std::min(c, it->second);
              }
            }
            g_sink = g_sink + clipped;
          })};
}

}  // namespace

void bench_metric_ops(int rounds, std::vector<Result>& out) {
  out.push_back(bench_score_sort(rounds));
  out.push_back(bench_greedy_match(rounds));
  out.push_back(bench_accumulate(rounds));
  bench_mask_ops(rounds, out);
  out.push_back(bench_ngram_count(rounds));
}

}  // namespace host_ops_bench
