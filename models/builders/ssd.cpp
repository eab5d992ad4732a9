// SSD (MLPerf v0.7 object detection, COCO 300x300) as the Google TPU submissions run it on the
// device (docs/detection.md): ResNet-34 backbone up to its conv4 stage with that stage's stride
// set to 1 (38x38x256), batch norm trained and cross-replica; five extra blocks (1x1 then 3x3
// conv with bias and ReLU, no batch norm) to 19x19x512, 10x10x512, 5x5x256, 3x3x256, 1x1x256; on
// each of the six maps a 3x3 class conv (boxes x 81) and a 3x3 box conv (boxes x 4) with 4, 6,
// 6, 6, 4, 4 default boxes per location: 8732 boxes. Loss: softmax cross-entropy + smooth L1 per
// box, hard negative mining 3:1 without a sort (a 31-step binary search over the loss values'
// bit patterns). SGD with momentum. Liu et al. 2016 and the MLPerf v0.7 reference ssd300.
// Default-box matching is done by the input pipeline on the host (as in the TPU submission), so
// it has no device op.
#include <cmath>
#include <limits>

#include "core/errors.hpp"
#include "core/hardware.hpp"
#include "core/param_handle.hpp"
#include "core/params.hpp"
#include "models/builders/cnn_blocks.hpp"
#include "models/builders/cnn_checks.hpp"
#include "models/builders/ssd_layout.hpp"
#include "models/detection_ops.hpp"
#include "models/model_builder.hpp"
#include "models/ops.hpp"
#include "models/parallelism/layout.hpp"
#include "models/training.hpp"

namespace tpusim {
namespace {
using T = ParamType;
const char* kSsdModel = "ssd";

// One parameter per line reads as a table.
// clang-format off
const Param<std::int64_t> kSsdImageSize{{"workload.image_size", T::Integer, "pixels", 300, "height and width of the input images (257 or more: smaller leave no 1x1 last feature map)", 257, 1e5, {}, "workload.model", kSsdModel}};
const Param<std::int64_t> kSsdClasses{{"workload.classes", T::Integer, "", 81, "object classes including background", 2, 1e5, {}, "workload.model", kSsdModel}};
const Param<bool> kSsdSpaceToDepth{{"workload.space_to_depth", T::Boolean, "", true, "2x2 space-to-depth input (done by the host) and a 4x4 stride-1 first conv instead of 7x7/2", -kInf, kInf, {}, "workload.model", kSsdModel}};
// true: the TF 4096-chip run; the JAX 2048-chip run holds the full label tensors on every core.
const Param<bool> kSsdLabelsPartitioned{{"workload.labels_partitioned", T::Boolean, "", true, "label tensors split like the activations under spatial partitioning (TF); false: every core holds them whole and computes the loss of whole images (JAX)", -kInf, kInf, {}, "workload.model", kSsdModel}};
// 200: the MLPerf SSD's detections kept per image in evaluation.
const Param<std::int64_t> kSsdEvalDetections{{"workload.eval_detections", T::Integer, "boxes", 200, "detection candidates per class and detections per image kept by the eval post-processing", 1, 1e5, {}, "workload.model", kSsdModel}};
// 200: ASSUMPTION, the cap above: every kept detection passes the score threshold (the state
// late in the run; the count grows as the model learns). Read by the host metric only: the
// device post-processing is padded to workload.eval_detections (docs/train.md).
const Param<std::int64_t> kSsdEvalDetectionsPerImage{{"workload.eval_detections_per_image", T::Integer, "boxes", 200, "detections per image that pass the score threshold and reach the host's COCO evaluation (at most workload.eval_detections)", 0, 1e5, {}, "workload.model", kSsdModel}};
const Param<std::int64_t> kSsdNmsSelfSuppressionIterations{nms_self_suppression_param(kSsdModel)};
// clang-format on

// Extra blocks after the backbone: 1x1 conv to `mid`, 3x3 conv to `out` (stride 2 'same', or
// stride 1 'valid' for the last two), each with bias and ReLU (no batch norm in the TPU code).
struct ExtraBlock {
  std::int64_t mid, out;
  int stride;
  ConvPadding pad;
};
constexpr ExtraBlock kExtras[] = {{256, 512, 2, ConvPadding::Same},
                                  {256, 512, 2, ConvPadding::Same},
                                  {128, 256, 2, ConvPadding::Same},
                                  {128, 256, 1, ConvPadding::Valid},
                                  {128, 256, 1, ConvPadding::Valid}};

// Binary-search steps of the hard-negative mining: one per bit of a non-negative f32 loss (the
// sign bit is known), each a compare of every box's loss with the candidate threshold and a count.
constexpr std::int64_t kMiningSearchSteps = 31;
/// TPU NMS tile of the SSD eval post-processing (reference page).
constexpr std::int64_t kNmsTile = 256;

// The host's work per example: 8732 default boxes (docs/cnn.md); up to 50 random-crop tries, each
// testing the crop's IoU against every box (the MLPerf v0.7 code; all 50 taken: the worst case).
constexpr double kSsdAnchors = 8732;
constexpr double kSsdCropTries = 50;

class Ssd final : public ModelBuilder {
 public:
  bool supports_spatial() const override { return true; }

  /// Training: decode, random crop (IoU tries), resize, flip, colour jitter, anchor matching and
  /// box encoding. Evaluation: decode and resize only (no augmentation, no targets: the metric
  /// compares the detections with the annotations on the host).
  void input_pipeline(PipelineBuilder& p, const Config& cfg, PipelinePass pass) const override {
    const double out = static_cast<double>(kSsdImageSize(cfg));
    p.decode(kCocoImagePixels);
    if (pass == PipelinePass::Eval) {
      p.add("resize", host_cost::kResize, "output pixels", out * out);
      return;
    }
    p.add("random_crop", host_cost::kIou, "crop tries x boxes", kSsdCropTries * kCocoBoxesPerImage);
    p.add("resize", host_cost::kResize, "output pixels", out * out);
    p.add("flip", host_cost::kFlip, "pixels", out * out);
    p.add("color_jitter", host_cost::kColorJitter, "pixels", out * out);
    p.match(kCocoBoxesPerImage * kSsdAnchors, kSsdAnchors);
  }

  /// COCO mAP of boxes; it runs on the host while training goes on (the reference; docs/train.md).
  void eval_metric(MetricBuilder& m, const Config& cfg, double examples) const override {
    add_coco_metric(m, examples, false, kSsdEvalDetectionsPerImage(cfg),
                    kSsdEvalDetectionsPerImage.path(), kSsdEvalDetections(cfg),
                    kSsdEvalDetections.path());
  }

  OpGraph build(const Config& cfg, std::int64_t batch) const override {
    OpGraph g = forward(cfg, batch, true);
    // Infeed per image: the bf16 image and the host-encoded targets of every default box (4 f32
    // box offsets and an i32 class), plus the matched-box count.
    const std::int64_t size = kSsdImageSize(cfg);
    g.infeed_bytes_per_example =
        static_cast<double>(size) * size * 3 * 2 + ssd_default_boxes(size) * 5.0 * 4 + 4;
    derive_training_graph(g, OptimizerKind::Sgd, cfg);
    finish_conv_training_graph(g);
    return g;
  }

  std::optional<OpGraph> build_eval(const Config& cfg, std::int64_t batch) const override {
    OpGraph g = forward(cfg, batch, false);
    const std::int64_t classes = kSsdClasses(cfg);
    const std::int64_t keep = kSsdEvalDetections(cfg);
    const std::int64_t boxes = ssd_default_boxes(kSsdImageSize(cfg));
    const std::int64_t fg = classes - 1;
    const double b = static_cast<double>(batch);
    // The head outputs of whole images on every core (partial per core under spatial
    // partitioning), then f32 scores (softmax) and decoded boxes of every default box.
    OpNode whole =
        f32_vector_op(OpKind::Elementwise, "detections.decode", b * boxes * (classes + 4), 1,
                      (classes * vpu_ops::kCrossEntropy + 4 * 8.0) / (classes + 4), 0);
    whole.partial_bytes = b * boxes * (classes + 4) * dtype_bytes(DType::F32);
    whole.split.spatial = SplitDim::K;
    whole.stop_gradient = true;
    std::vector<int> heads;
    for (int v = 0; v < g.size(); ++v)
      if (g.node(v).name.rfind("head.", 0) == 0) heads.push_back(v);
    int v = g.add(std::move(whole), heads);
    // Per class the best `keep` boxes, NMS of each class's boxes (tile 256), the best `keep`
    // detections over the classes.
    OpNode per_class = top_k("detections.class_top_k", batch * fg, boxes, keep, DType::F32);
    per_class.stop_gradient = true;
    v = g.add(std::move(per_class), {v});
    const std::int64_t iterations = kSsdNmsSelfSuppressionIterations(cfg);
    v = add_tiled_nms(g, "detections.nms", batch * fg, keep, kNmsTile, iterations, v);
    OpNode best = top_k("detections.top_k", batch, fg * keep, keep, DType::F32);
    best.stop_gradient = true;
    g.add(std::move(best), {v});
    return g;
  }

 private:
  // The network and, when `loss`, the training loss.
  static OpGraph forward(const Config& cfg, std::int64_t batch, bool loss) {
    const std::int64_t size = kSsdImageSize(cfg);
    const std::int64_t classes = kSsdClasses(cfg);
    const int s2d = kSsdSpaceToDepth(cfg) ? 2 : 1;
    const std::string map_from =
        s2d > 1 ? "workload.image_size with workload.space_to_depth" : "workload.image_size";
    check_spatial_split(cfg, size / s2d, size / s2d, map_from, map_from);
    if (ssd_feature_map_sizes(size).back() < 1)
      throw ConfigError("workload.image_size", std::to_string(size) +
                                                   " pixels leave no 1x1 last feature map; "
                                                   "allowed: 257 or more");

    OpGraph g;
    g.model = kSsdModel;
    g.replica_batch = batch;
    CnnBlocks b(g, BatchNormMode::CrossReplica, static_cast<int>(kHwMxuDim(cfg)));
    MapRef x = b.stem({batch, size, size, 3}, s2d);
    // ResNet-34 conv2_x .. conv4_x: 3, 4, 6 basic blocks; conv4_x keeps stride 1 (MLPerf SSD).
    const std::int64_t blocks[] = {3, 4, 6}, widths[] = {64, 128, 256};
    const int strides[] = {1, 2, 1};
    for (int stage = 0; stage < 3; ++stage)
      for (std::int64_t i = 0; i < blocks[stage]; ++i)
        x = b.basic_block("backbone.stage" + std::to_string(stage + 2) + "." + std::to_string(i), x,
                          widths[stage], i == 0 ? strides[stage] : 1);

    std::vector<MapRef> maps{x};
    for (std::size_t e = 0; e < std::size(kExtras); ++e) {
      const std::string p = "extra." + std::to_string(e);
      MapRef y = relu(g, b.conv(p + ".conv1x1", maps.back(), kExtras[e].mid, 1, 1));
      maps.push_back(
          relu(g, b.conv(p + ".conv3x3", y, kExtras[e].out, 3, kExtras[e].stride, kExtras[e].pad)));
    }

    std::vector<int> head_outputs;
    for (std::size_t i = 0; i < maps.size(); ++i) {
      const std::int64_t boxes = kSsdBoxesPerLocation[i];
      const std::string p = "head." + std::to_string(i);
      head_outputs.push_back(b.conv(p + ".class", maps[i], boxes * classes, 3, 1).op);
      head_outputs.push_back(b.conv(p + ".box", maps[i], boxes * 4, 3, 1).op);
    }
    if (loss) add_loss(g, cfg, batch, head_outputs);
    return g;
  }

  static MapRef relu(OpGraph& g, MapRef conv) {
    g.node(conv.op).vpu_ops_per_element += vpu_ops::kRelu;
    g.node(conv.op).bwd_vpu_ops_per_element += vpu_ops::kReluGrad;
    return conv;
  }

  // Per-box losses, then hard negative mining and the masked sums.
  static void add_loss(OpGraph& g, const Config& cfg, std::int64_t batch,
                       const std::vector<int>& head_outputs) {
    const std::int64_t size = kSsdImageSize(cfg);
    const std::int64_t classes = kSsdClasses(cfg);
    const std::int64_t boxes = ssd_default_boxes(size);
    const double per_box = static_cast<double>(batch) * boxes;
    const double ops = (classes * vpu_ops::kCrossEntropy + 4 * vpu_ops::kSmoothL1) /
                       static_cast<double>(classes + 4);
    const double bwd = (classes * vpu_ops::kCrossEntropyGrad + 4 * vpu_ops::kSmoothL1Grad) /
                       static_cast<double>(classes + 4);
    std::vector<int> inputs = head_outputs;
    const bool partitioned = kSsdLabelsPartitioned(cfg);
    // TF: labels split like the maps, each level's height padded up to a multiple of the
    // spatial degree (whole rows per core).
    const double loss_boxes =
        static_cast<double>(batch) *
        ssd_partitioned_boxes(size, partitioned ? kParallelismSpatial(cfg) : 1);
    OpNode box_loss =
        vector_op(OpKind::Elementwise, "loss.per_box", loss_boxes * (classes + 4), 1, ops, bwd);
    box_loss.out_dtype = DType::F32;
    box_loss.bytes_written = loss_boxes * 4;
    box_loss.shapes = {{batch, boxes, classes + 4}, {batch, boxes}};
    if (partitioned) {
      // Each core computes the losses of its rows' boxes; the per-box losses are summed over the
      // spatial axis so every core can mine whole images.
      box_loss.partial_bytes = box_loss.bytes_written;
      box_loss.split.spatial = SplitDim::K;
    } else {
      // JAX: whole label tensors on every core, so the head outputs are made whole there (an
      // all-reduce of the zero-padded shards over "spatial" stands for the all-gather) and every
      // core computes the losses of whole images.
      OpNode whole = vector_op(OpKind::Elementwise, "loss.whole_predictions", 0, 0, 0, 0);
      whole.partial_bytes = per_box * (classes + 4) * dtype_bytes(DType::BF16);
      whole.split.spatial = SplitDim::K;
      inputs = {g.add(std::move(whole), head_outputs)};
    }
    const int per_box_v = g.add(std::move(box_loss), inputs);
    // Hard negative mining without a sort: 31 device steps of compare-and-count over the boxes'
    // f32 losses find the k-th largest (k = min(3 x positives, boxes)), then one pass counts,
    // masks and sums.
    OpNode step = f32_vector_op(OpKind::Loss, "loss.mining_search", per_box, 1, 2, 0);
    step.bytes_written = 0;  // a threshold per image
    step.stop_gradient = true;
    const int found = add_device_loop(g, step, kMiningSearchSteps, {per_box_v});
    OpNode mask = f32_vector_op(OpKind::Loss, "loss.mining_mask_sum", per_box, 1, 3, 2);
    mask.bytes_written = 4;
    g.add(std::move(mask), {per_box_v, found});
  }
};

// 4096: the MLPerf v0.7 4096- and 2048-chip runs (reference table).
const ModelRegistrar kSsdRegister{{kSsdModel,
                                   4096,
                                   "images per training step over all replicas",
                                   {"spatial_w", "batch_norm_groups"}},
                                  [] { return std::make_unique<Ssd>(); }};

}  // namespace
}  // namespace tpusim
