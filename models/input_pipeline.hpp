#pragma once
// The host CPU work of a model. Each model's builder (models/builders/NAME.cpp) names its
// operations (ModelBuilder::input_pipeline, ModelBuilder::eval_metric) with the builders below.
// The input pipeline (input_pipeline.cpp): the operations it runs per example (JPEG decode, crop,
// resize, flip, colour jitter, normalise, anchor matching, box encoding, mask crops, record
// parsing, packing: what the MLPerf v0.7 code does), each costed by its size in that example
// (pixels, box x anchor pairs, tokens, bytes) times a per-unit CPU cost that all models share
// (hardware.host.cost.*, measured by tools/bench/host_ops.cpp). What-ifs that cache or move a step
// are workload.input.*. The evaluation metric (eval_metric.cpp): COCO mAP, BLEU, as operations
// costed the same way. docs/train.md has the tables of costs and sizes.
#include <cstdint>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/param_handle.hpp"

namespace tpusim {

// COCO sizes shared by the detection pipelines and the COCO evaluation (models/eval_metric.cpp),
// ASSUMPTIONS (docs/train.md): images are mostly 640 x 480 (taken for all); train2017 has 860,001
// instances over 118,287 images, 7.3 boxes per image (taken for val2017 too).
inline constexpr double kCocoImagePixels = 640.0 * 480.0;
inline constexpr double kCocoBoxesPerImage = 860001.0 / 118287.0;

/// One operation of the pipeline, for one example.
struct PipelineOp {
  std::string name;       ///< "jpeg_decode"
  std::string cost_path;  ///< its per-unit cost: "hardware.host.cost.jpeg_decode_ns_per_pixel"
  std::string unit;       ///< "decoded pixels"
  double units = 0;       ///< size of the operation in one example
  double ns_per_unit = 0;
  double ns() const { return units * ns_per_unit; }  ///< CPU time on one host core
};

struct InputPipeline {
  std::vector<PipelineOp> ops;
  /// CPU time of one example on one host core, ns: the sum of its operations.
  double ns_per_example() const;
};

/// Which examples a pipeline prepares: training examples (augmented, with their targets) or
/// evaluation examples (decoded and sized for the eval program only).
enum class PipelinePass { Train, Eval };

/// The per-unit CPU costs the operations share (hardware.host.cost.*, input_pipeline.cpp and
/// eval_metric.cpp; measured by tools/bench/host_ops.cpp and host_metric_ops.cpp).
namespace host_cost {
extern const Param<double> kJpegDecode, kResize, kFlip, kColorJitter, kNormalize, kMaskCrop, kIou,
    kBoxEncode, kRecordParse, kPack;
extern const Param<double> kScoreSort, kGreedyMatch, kAccumulate, kRleEncode, kMaskIou, kNgramCount;
}  // namespace host_cost

/// What a model's ModelBuilder::input_pipeline adds its operations to.
class PipelineBuilder {
 public:
  PipelineBuilder(const Config& cfg, double record_bytes)
      : cfg_(cfg), record_bytes_(record_bytes) {}
  /// An operation of `units` per example at the per-unit cost `cost`.
  void add(const char* name, const Param<double>& cost, const char* unit, double units);
  /// The JPEG decode of `pixels`, unless workload.input.cached_decode.
  void decode(double pixels);
  /// Anchor matching and box encoding, unless workload.input.device_box_matching.
  void match(double box_anchor_pairs, double anchors);
  /// The example's record parsed (record_bytes of input_pipeline()).
  void parse_record();
  InputPipeline take() { return std::move(p_); }

 private:
  const Config& cfg_;
  double record_bytes_;
  InputPipeline p_;
};

/// The study's model's pipeline for `pass` (its ModelBuilder::input_pipeline). `record_bytes` is
/// the size of one example's record where the pipeline parses records (the builder's infeed bytes
/// per example of that pass's program: the record holds the same values). A model without its
/// own pipeline (decoder_lm) parses records only.
InputPipeline input_pipeline(const Config& cfg, double record_bytes,
                             PipelinePass pass = PipelinePass::Train);

/// Where the host-side evaluation metric runs (train.eval_metric_on).
enum class MetricPlacement {
  Host,      ///< one host, the coordinator, after the last eval step's outfeed (MLPerf reference)
  AllHosts,  ///< every host scores its share of the eval examples, then a gather (the paper)
  Device,    ///< on the device: no host time (its device cost is not added)
};

/// One operation of the metric, over one whole evaluation (all its examples).
struct MetricOp {
  std::string name;       ///< "greedy_match"
  std::string cost_path;  ///< "hardware.host.cost.greedy_match_ns_per_step"
  std::string unit;
  double units = 0;  ///< size over the evaluation
  double ns_per_unit = 0;
  /// true: per-example work, split over the hosts with all_hosts; false: the coordinator's
  /// (the per-category accumulation and the parsing of what it gathers).
  bool per_example = true;
  double ns() const { return units * ns_per_unit; }  ///< CPU time on one host core
};

/// The model's host-side metric for its placement (ops empty for device, and for models whose
/// metric the runs computed on the device: BERT's masked-LM accuracy, ResNet-50's top-1).
struct EvalMetric {
  std::string name;  ///< "coco_map_boxes", "coco_map_boxes_masks", "bleu", "device_accuracy"
  MetricPlacement placement = MetricPlacement::Host;
  /// The next device loop waits for the metric (true), or the metric overlaps it (false).
  bool blocking = false;
  int hosts = 1;  ///< hosts that share the per-example work (all_hosts), else 1
  /// Threads it runs on (hardware.host.metric_threads); a host gives it at most its cores.
  int threads = 1;
  std::vector<MetricOp> ops;
  /// CPU time of the busiest host (the coordinator) on one core, ns: per-example ops / hosts
  /// plus the coordinator's ops.
  double busiest_host_ns() const;
};

/// What a model's ModelBuilder::eval_metric adds its operations to.
class MetricBuilder {
 public:
  MetricBuilder(const Config& cfg, EvalMetric m) : cfg_(cfg), m_(std::move(m)) {}
  /// An operation of `units` over the evaluation at the per-unit cost `cost`; per-example ones
  /// are split over the hosts with all_hosts.
  void add(const std::string& name, const Param<double>& cost, const char* unit, double units,
           bool per_example);
  bool distributed() const { return m_.placement == MetricPlacement::AllHosts; }
  EvalMetric& metric() { return m_; }
  EvalMetric take() { return std::move(m_); }

 private:
  const Config& cfg_;
  EvalMetric m_;
};

/// COCO mAP of boxes (and of masks) over `images` images of `per_image` detections each, as
/// pycocotools' COCOeval computes it. Throws ConfigError naming `per_image_path` when `per_image`
/// exceeds `cap` (the detections the device keeps, named by `cap_path`).
void add_coco_metric(MetricBuilder& b, double images, bool masks, std::int64_t per_image,
                     const std::string& per_image_path, std::int64_t cap,
                     const std::string& cap_path);
/// BLEU over `sentences` decoded sentences of `length` tokens against references of that length.
void add_bleu_metric(MetricBuilder& b, double sentences, std::int64_t length);

/// The study's model's metric (its ModelBuilder::eval_metric) over one evaluation of
/// `eval_examples` examples, with train.eval_metric_on; `hosts` is the machine's host count. Throws
/// ConfigError naming workload.eval_detections_per_image when it exceeds workload.eval_detections.
EvalMetric eval_metric(const Config& cfg, std::int64_t eval_examples, int hosts);

}  // namespace tpusim
