// The host-side evaluation metric as host CPU work (models/input_pipeline.hpp): COCO mAP of boxes
// (SSD) and of boxes and masks (Mask R-CNN) as pycocotools' COCOeval computes it, BLEU of the
// Transformer's decoded sentences; each operation its size over one evaluation times a per-unit
// cost measured by tools/bench/host_metric_ops.cpp. docs/train.md has the table.
#include <cmath>

#include "core/errors.hpp"
#include "core/params.hpp"
#include "models/input_pipeline.hpp"

namespace tpusim {
namespace {
using T = ParamType;

// Per-unit costs: MEASURED on this machine on 2026-12-02 with
// `build/bin/tpusim_host_ops_bench --rounds 15` (tools/bench/host_metric_ops.cpp, Release build,
// one thread; the machine of models/input_pipeline.cpp). Each default is the median over three
// runs of the fastest of 15 rounds (docs/train.md has the output).
// One parameter per line reads as a table.
// clang-format off
const ParamRegistrar kEvalMetricParams{{
    {"hardware.host.cost.score_sort_ns_per_compare", T::Number, "ns", 0.9, "host CPU time per compare of sorting an image's detections by score (std::sort of 200; d log2 d compares)", 0, 1e9},
    {"hardware.host.cost.greedy_match_ns_per_step", T::Number, "ns", 1.2, "host CPU time per detection x ground truth x IoU threshold x area range of COCOeval's greedy match", 0, 1e9},
    {"hardware.host.cost.accumulate_ns_per_detection", T::Number, "ns", 141.0, "host CPU time per detection of COCOeval's accumulation of one category, area range and detection cap (sort by score, cumulative precision and recall at 10 IoU thresholds, 101 recall points)", 0, 1e9},
    {"hardware.host.cost.rle_encode_ns_per_pixel", T::Number, "ns", 0.45, "host CPU time per image pixel to run-length encode a detection's binary mask at image size (COCO RLE)", 0, 1e9},
    {"hardware.host.cost.mask_iou_ns_per_pair", T::Number, "ns", 1190.0, "host CPU time of the IoU of a detection's and a ground truth's run-length-encoded masks (objects of 128 x 96 pixels)", 0, 1e9},
    {"hardware.host.cost.ngram_count_ns_per_ngram", T::Number, "ns", 35.8, "host CPU time per n-gram (n = 1..4) of BLEU's counting of a hypothesis and its reference in hash maps, with the clipping", 0, 1e9},
    {"hardware.host.metric_threads", T::Integer, "threads", 1, "threads the host-side metric runs on, on as many of its host's CPU cores (at most all of them); 1: pycocotools' COCOeval and a Python BLEU scorer run in one thread, so the other cores keep preparing batches (tpusim train)", 1, 1 << 20},
    {"train.eval_metric_on", T::String, "", "host", "where the host-side metric (COCO mAP, BLEU) runs: host (one host, after the last eval step's outfeed, as the MLPerf reference), all_hosts (each host scores its share of the examples, then a gather to one host: the paper's distributed evaluation) or device (no host time)", -kInf, kInf, {"host", "all_hosts", "device"}},
}};
// clang-format on

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

struct MetricBuilder {
  const Config& cfg;
  EvalMetric m;
  void add(const std::string& name, const char* cost, const char* unit, double units,
           bool per_example) {
    const std::string path = std::string("hardware.host.cost.") + cost;
    m.ops.push_back({name, path, unit, units, cfg.number(path), per_example});
  }
  bool distributed() const { return m.placement == MetricPlacement::AllHosts; }
};

// One COCOeval (of boxes or of masks) over `images` images of `d` detections and `g` ground truths:
// the per-image sort, the IoU of every detection with every ground truth (all pairs, as if the
// image had one category: an upper bound of pycocotools' per-category pairs), the greedy match
// and the accumulation per category (every detection counted for each area range and cap).
void coco_eval(MetricBuilder& b, const std::string& kind, double images, double d, double g,
               const char* iou, const char* iou_unit) {
  const double log_d = d > 1 ? std::log2(d) : 0;
  auto add = [&](const char* n, const char* cost, const char* unit, double units, bool per) {
    b.add(kind + "." + n, cost, unit, units, per);
  };
  add("score_sort", "score_sort_ns_per_compare", "compares", images * d * log_d, true);
  add("iou", iou, iou_unit, images * d * g, true);
  add("greedy_match", "greedy_match_ns_per_step", "detection x ground truth x threshold x area",
      images * d * g * kCocoThresholds * kCocoAreas, true);
  add("accumulate", "accumulate_ns_per_detection", "detection x area range x cap",
      images * d * kCocoAreas * kCocoCaps, false);
  if (b.distributed())
    add("gather", "record_parse_ns_per_byte", "bytes gathered", images * d * kCocoMatchBytes,
        false);
}

void coco_metric(MetricBuilder& b, double images, bool masks) {
  const char* path = "workload.eval_detections_per_image";
  const double d = static_cast<double>(b.cfg.integer(path));
  const std::int64_t cap = b.cfg.integer("workload.eval_detections");
  if (d > static_cast<double>(cap))
    throw ConfigError(path, std::to_string(static_cast<std::int64_t>(d)) +
                                " detections per image exceed the " + std::to_string(cap) +
                                " the device keeps (workload.eval_detections); allowed: 0 to " +
                                std::to_string(cap));
  const double g = kCocoBoxesPerImage;
  b.m.name = masks ? "coco_map_boxes_masks" : "coco_map_boxes";
  // With one host, the detections of every host reach the coordinator: it parses them.
  if (!b.distributed())
    b.add("receive_detections", "record_parse_ns_per_byte", "bytes received",
          images * d * (kCocoDetectionBytes + (masks ? kCocoMaskBytes : 0)), false);
  coco_eval(b, "bbox", images, d, g, "iou_ns_per_pair", "detection x ground-truth box pairs");
  if (!masks) return;
  // Each detection's 28 x 28 mask pasted into its box (bilinear, one channel), then the
  // image-sized binary mask run-length encoded; the mask evaluation matches RLE masks.
  b.add("segm.paste", "mask_crop_ns_per_pixel", "box pixels", images * d * kCocoObjectPixels, true);
  b.add("segm.rle_encode", "rle_encode_ns_per_pixel", "image pixels", images * d * kCocoImagePixels,
        true);
  coco_eval(b, "segm", images, d, g, "mask_iou_ns_per_pair", "detection x ground-truth masks");
}

// BLEU over `sentences` decoded sentences of workload.decode_length tokens (the padded decode
// length: an upper bound of the words scored) against references of the same length.
void bleu_metric(MetricBuilder& b, double sentences) {
  const double len = static_cast<double>(b.cfg.integer("workload.decode_length"));
  double ngrams = 0;
  for (int n = 1; n <= 4; ++n) ngrams += 2 * std::max(0.0, len - n + 1);
  b.m.name = "bleu";
  b.add("ngram_count", "ngram_count_ns_per_ngram", "n-grams", sentences * ngrams, true);
  if (b.distributed())
    b.add("gather", "record_parse_ns_per_byte", "bytes gathered", sentences * kBleuSentenceBytes,
          false);
}

MetricPlacement metric_placement(const Config& cfg) {
  const std::string on = cfg.string("train.eval_metric_on");
  if (on == "all_hosts") return MetricPlacement::AllHosts;
  if (on == "device") return MetricPlacement::Device;
  return MetricPlacement::Host;
}

}  // namespace

double EvalMetric::busiest_host_ns() const {
  double ns = 0;
  for (const MetricOp& op : ops) ns += op.per_example ? op.ns() / hosts : op.ns();
  return ns;
}

EvalMetric eval_metric(const Config& cfg, std::int64_t eval_examples, int hosts) {
  MetricBuilder b{cfg, {}};
  b.m.placement = metric_placement(cfg);
  b.m.hosts = b.m.placement == MetricPlacement::AllHosts ? hosts : 1;
  b.m.threads = static_cast<int>(cfg.integer("hardware.host.metric_threads"));
  const std::string model = cfg.string("workload.model");
  const double n = static_cast<double>(eval_examples);
  // Overlap as the runs did it (docs/train.md): SSD's COCO evaluation runs on the host while
  // training goes on (reference); Mask R-CNN's is taken to do the same (ASSUMPTION: the same TF
  // TPU detection runner); the Transformer's BLEU is taken to block (ASSUMPTION: the JAX run
  // scores between epochs in its training loop).
  if (model == "ssd" || model == "maskrcnn") {
    coco_metric(b, n, model == "maskrcnn");
  } else if (model == "transformer_big") {
    bleu_metric(b, n);
    b.m.blocking = true;
  } else {
    b.m.name = "device_accuracy";  // the device computes it; the host reads a count
  }
  if (b.m.placement == MetricPlacement::Device) b.m.ops.clear();
  return std::move(b.m);
}

}  // namespace tpusim
