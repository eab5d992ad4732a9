// The host-side evaluation metric as host CPU work (models/input_pipeline.hpp): COCO mAP of boxes
// (SSD) and of boxes and masks (Mask R-CNN) as pycocotools' COCOeval computes it, BLEU of the
// Transformer's decoded sentences; each operation its size over one evaluation times a per-unit
// cost measured by tools/bench/host_metric_ops.cpp. docs/train.md has the table.
#include <cmath>

#include "core/errors.hpp"
#include "core/params.hpp"
#include "models/input_pipeline.hpp"
#include "models/model_builder.hpp"

namespace tpusim {

// Per-unit costs: MEASURED on this machine on 2026-12-02 with
// `build/bin/tpusim_host_ops_bench --rounds 15` (tools/bench/host_metric_ops.cpp, Release build,
// one thread; the machine of models/input_pipeline.cpp). Each default is the median over three
// runs of the fastest of 15 rounds (docs/train.md has the output).
// One parameter per line reads as a table.
// clang-format off
namespace host_cost {
using T = ParamType;
const Param<double> kScoreSort{{"hardware.host.cost.score_sort_ns_per_compare", T::Number, "ns", 0.9, "host CPU time per compare of sorting an image's detections by score (std::sort of 200; d log2 d compares)", 0, 1e9}};
const Param<double> kGreedyMatch{{"hardware.host.cost.greedy_match_ns_per_step", T::Number, "ns", 1.2, "host CPU time per detection x ground truth x IoU threshold x area range of COCOeval's greedy match", 0, 1e9}};
const Param<double> kAccumulate{{"hardware.host.cost.accumulate_ns_per_detection", T::Number, "ns", 141.0, "host CPU time per detection of COCOeval's accumulation of one category, area range and detection cap (sort by score, cumulative precision and recall at 10 IoU thresholds, 101 recall points)", 0, 1e9}};
const Param<double> kRleEncode{{"hardware.host.cost.rle_encode_ns_per_pixel", T::Number, "ns", 0.45, "host CPU time per image pixel to run-length encode a detection's binary mask at image size (COCO RLE)", 0, 1e9}};
const Param<double> kMaskIou{{"hardware.host.cost.mask_iou_ns_per_pair", T::Number, "ns", 1190.0, "host CPU time of the IoU of a detection's and a ground truth's run-length-encoded masks (objects of 128 x 96 pixels)", 0, 1e9}};
const Param<double> kNgramCount{{"hardware.host.cost.ngram_count_ns_per_ngram", T::Number, "ns", 35.8, "host CPU time per n-gram (n = 1..4) of BLEU's counting of a hypothesis and its reference in hash maps, with the clipping", 0, 1e9}};
}  // namespace host_cost

namespace {
using T = ParamType;
const Param<std::int64_t> kMetricThreads{{"hardware.host.metric_threads", T::Integer, "threads", 1, "threads the host-side metric runs on, on as many of its host's CPU cores (at most all of them); 1: pycocotools' COCOeval and a Python BLEU scorer run in one thread, so the other cores keep preparing batches (tpusim train)", 1, 1 << 20}};
const Param<std::string> kEvalMetricOn{{"train.eval_metric_on", T::String, "", "host", "where the host-side metric (COCO mAP, BLEU) runs: host (one host, after the last eval step's outfeed, as the MLPerf reference), all_hosts (each host scores its share of the examples, then a gather to one host: the paper's distributed evaluation) or device (no host time)", -kInf, kInf, {"host", "all_hosts", "device"}}};
}  // namespace
// clang-format on

namespace {
// COCOeval's defaults: 10 IoU thresholds, 4 area ranges, detection caps 1, 10 and 100.
constexpr double kCocoThresholds = 10, kCocoAreas = 4, kCocoCaps = 3;
// ASSUMPTION: a detection's object is 128 x 96 pixels (the mask the bench's IoU measures and the
// box its 28 x 28 mask is pasted into); not from a source (docs/train.md).
constexpr double kCocoObjectPixels = 128.0 * 96.0;
// Bytes the coordinator receives per detection: boxes (4 f32), score (f32), class and image
// (2 i32), and for Mask R-CNN the 28 x 28 f32 mask; with all_hosts, per detection and evaluated
// kind its score, category, image and one match flag per IoU threshold and area range (12 + 40).
constexpr double kCocoDetectionBytes = 4 * 4 + 4 + 2 * 4, kCocoMaskBytes = 28 * 28 * 4;
constexpr double kCocoMatchBytes = 12 + kCocoThresholds * kCocoAreas;
// BLEU's statistics of a sentence gathered with all_hosts: matches and totals of 4 orders and
// the lengths, 10 i32.
constexpr double kBleuSentenceBytes = 10 * 4;

// One COCOeval (of boxes or of masks) over `images` images of `d` detections and `g` ground truths:
// the per-image sort, the IoU of every detection with every ground truth (all pairs, as if the
// image had one category: an upper bound of pycocotools' per-category pairs), the greedy match
// and the accumulation per category (every detection counted for each area range and cap).
void coco_eval(MetricBuilder& b, const std::string& kind, double images, double d, double g,
               const Param<double>& iou, const char* iou_unit) {
  const double log_d = d > 1 ? std::log2(d) : 0;
  auto add = [&](const char* n, const Param<double>& cost, const char* unit, double units,
                 bool per) { b.add(kind + "." + n, cost, unit, units, per); };
  add("score_sort", host_cost::kScoreSort, "compares", images * d * log_d, true);
  add("iou", iou, iou_unit, images * d * g, true);
  add("greedy_match", host_cost::kGreedyMatch, "detection x ground truth x threshold x area",
      images * d * g * kCocoThresholds * kCocoAreas, true);
  add("accumulate", host_cost::kAccumulate, "detection x area range x cap",
      images * d * kCocoAreas * kCocoCaps, false);
  if (b.distributed())
    add("gather", host_cost::kRecordParse, "bytes gathered", images * d * kCocoMatchBytes, false);
}

MetricPlacement metric_placement(const Config& cfg) {
  const std::string on = kEvalMetricOn(cfg);
  if (on == "all_hosts") return MetricPlacement::AllHosts;
  if (on == "device") return MetricPlacement::Device;
  return MetricPlacement::Host;
}

}  // namespace

void MetricBuilder::add(const std::string& name, const Param<double>& cost, const char* unit,
                        double units, bool per_example) {
  m_.ops.push_back({name, cost.path(), unit, units, cost(cfg_), per_example});
}

void add_coco_metric(MetricBuilder& b, double images, bool masks, std::int64_t per_image,
                     const std::string& per_image_path, std::int64_t cap,
                     const std::string& cap_path) {
  if (per_image > cap)
    throw ConfigError(per_image_path, std::to_string(per_image) +
                                          " detections per image exceed the " +
                                          std::to_string(cap) + " the device keeps (" + cap_path +
                                          "); allowed: 0 to " + std::to_string(cap));
  const double d = static_cast<double>(per_image);
  const double g = kCocoBoxesPerImage;
  b.metric().name = masks ? "coco_map_boxes_masks" : "coco_map_boxes";
  // With one host, the detections of every host reach the coordinator: it parses them.
  if (!b.distributed())
    b.add("receive_detections", host_cost::kRecordParse, "bytes received",
          images * d * (kCocoDetectionBytes + (masks ? kCocoMaskBytes : 0)), false);
  coco_eval(b, "bbox", images, d, g, host_cost::kIou, "detection x ground-truth box pairs");
  if (!masks) return;
  // Each detection's 28 x 28 mask pasted into its box (bilinear, one channel), then the
  // image-sized binary mask run-length encoded; the mask evaluation matches RLE masks.
  b.add("segm.paste", host_cost::kMaskCrop, "box pixels", images * d * kCocoObjectPixels, true);
  b.add("segm.rle_encode", host_cost::kRleEncode, "image pixels", images * d * kCocoImagePixels,
        true);
  coco_eval(b, "segm", images, d, g, host_cost::kMaskIou, "detection x ground-truth masks");
}

// The padded decode length is an upper bound of the words scored.
void add_bleu_metric(MetricBuilder& b, double sentences, std::int64_t length) {
  const double len = static_cast<double>(length);
  double ngrams = 0;
  for (int n = 1; n <= 4; ++n) ngrams += 2 * std::max(0.0, len - n + 1);
  b.metric().name = "bleu";
  b.add("ngram_count", host_cost::kNgramCount, "n-grams", sentences * ngrams, true);
  if (b.distributed())
    b.add("gather", host_cost::kRecordParse, "bytes gathered", sentences * kBleuSentenceBytes,
          false);
}

double EvalMetric::busiest_host_ns() const {
  double ns = 0;
  for (const MetricOp& op : ops) ns += op.per_example ? op.ns() / hosts : op.ns();
  return ns;
}

EvalMetric eval_metric(const Config& cfg, std::int64_t eval_examples, int hosts) {
  EvalMetric m;
  m.placement = metric_placement(cfg);
  m.hosts = m.placement == MetricPlacement::AllHosts ? hosts : 1;
  m.threads = static_cast<int>(kMetricThreads(cfg));
  m.name = "device_accuracy";  // unless the model's metric runs on the host
  MetricBuilder b(cfg, std::move(m));
  model_builder_for(cfg)->eval_metric(b, cfg, static_cast<double>(eval_examples));
  if (b.metric().placement == MetricPlacement::Device) b.metric().ops.clear();
  return b.take();
}

}  // namespace tpusim
