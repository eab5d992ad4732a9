// Mask R-CNN with a ResNet-50-FPN backbone (MLPerf v0.7 object detection and segmentation, COCO)
// as the Google TPU submission runs it on the device (docs/detection.md lists what is modelled
// and the sources): He et al. 2017, Lin et al. 2017 (FPN), the MLPerf reference, and the TPU
// implementation's training settings, which fix the dynamic sizes:
//  - images resized to short side 800, long side at most 1333, padded to 832 x 1344, delivered
//    space-to-depth 2 by the host;
//  - RPN: 3 anchors per location on P2..P6; top 2000 proposals per level before NMS, 1000 after
//    and 1000 per image after merging the levels; anchor labels come from the host;
//  - 512 sampled ROIs per image for the box head, 128 for the mask head; 100 padded ground-truth
//    boxes and masks (116 x 116) per image; 91 classes (the COCO ids);
//  - batch norm frozen and folded into the convolutions; conv0 and res2 not trained.
// The pieces are in maskrcnn_backbone.cpp, maskrcnn_proposals.cpp and maskrcnn_heads.cpp.
#include <limits>

#include "core/errors.hpp"
#include "core/hardware.hpp"
#include "core/param_handle.hpp"
#include "core/params.hpp"
#include "models/builders/cnn_checks.hpp"
#include "models/builders/maskrcnn_parts.hpp"
#include "models/model_builder.hpp"
#include "models/ops.hpp"
#include "models/training.hpp"

namespace tpusim {
namespace {
using T = ParamType;
const char* kMaskrcnnModel = "maskrcnn";

ParamSpec param(const char* path, ParamType type, const char* unit, double def, const char* meaning,
                double min, double max) {
  return {path, type, unit, def, meaning, min, max, {}, "workload.model", kMaskrcnnModel};
}

// One parameter per line reads as a table.
// clang-format off
const Param<std::int64_t> kMaskrcnnImageHeight{param("workload.image_height", T::Integer, "pixels", 832, "padded input height (short side 800 padded to a multiple of 64)", 64, 1e5)};
const Param<std::int64_t> kMaskrcnnImageWidth{param("workload.image_width", T::Integer, "pixels", 1344, "padded input width (long side at most 1333 padded to a multiple of 64)", 64, 1e5)};
// 91: the TPU implementation's class outputs (COCO category ids 1..90 and background).
const Param<std::int64_t> kMaskrcnnClasses{param("workload.classes", T::Integer, "", 91, "object classes including background", 2, 1e5)};
const Param<std::int64_t> kMaskrcnnRpnPreNmsTopn{param("workload.rpn_pre_nms_topn", T::Integer, "boxes", 2000, "proposals per FPN level and image kept before NMS (training)", 1, 1e6)};
const Param<std::int64_t> kMaskrcnnRpnPostNmsTopn{param("workload.rpn_post_nms_topn", T::Integer, "boxes", 1000, "proposals per level after NMS and per image after merging the levels (training)", 1, 1e6)};
const Param<std::int64_t> kMaskrcnnRoisPerImage{param("workload.rois_per_image", T::Integer, "boxes", 512, "sampled ROIs per image for the box head", 1, 1e6)};
const Param<std::int64_t> kMaskrcnnMaskRoisPerImage{param("workload.mask_rois_per_image", T::Integer, "boxes", 128, "foreground ROIs per image for the mask head", 1, 1e6)};
const Param<std::int64_t> kMaskrcnnMaxGtBoxes{param("workload.max_gt_boxes", T::Integer, "boxes", 100, "ground-truth boxes and masks per image (padded)", 1, 1e5)};
const Param<std::int64_t> kMaskrcnnGtMaskPixels{param("workload.gt_mask_pixels", T::Integer, "pixels", 116, "height = width of the padded ground-truth masks from the host (112 + 2 x 2)", 1, 1e4)};
// The TPU implementation's eval settings.
const Param<std::int64_t> kMaskrcnnEvalRpnPreNmsTopn{param("workload.eval_rpn_pre_nms_topn", T::Integer, "boxes", 1000, "proposals per FPN level and image kept before NMS (evaluation)", 1, 1e6)};
const Param<std::int64_t> kMaskrcnnEvalRpnPostNmsTopn{param("workload.eval_rpn_post_nms_topn", T::Integer, "boxes", 1000, "proposals per image after NMS (evaluation): the box head's ROIs", 1, 1e6)};
const Param<std::int64_t> kMaskrcnnEvalDetections{param("workload.eval_detections", T::Integer, "boxes", 100, "detections per image after the per-class NMS (evaluation): the mask head's ROIs", 1, 1e5)};
// 100: ASSUMPTION, the cap above (as for SSD: every kept detection passes the threshold).
const Param<std::int64_t> kMaskrcnnEvalDetectionsPerImage{param("workload.eval_detections_per_image", T::Integer, "boxes", 100, "detections per image that pass the score threshold and reach the host's COCO box and mask evaluation (at most workload.eval_detections)", 0, 1e5)};
// The TF detection code requests no precision (reference page), so XLA's DEFAULT applies.
const Param<std::string> kMaskrcnnF32MatmulPrecision{f32_matmul_precision_param(kMaskrcnnModel)};
const Param<std::int64_t> kMaskrcnnNmsSelfSuppressionIterations{nms_self_suppression_param(kMaskrcnnModel)};
// clang-format on

}  // namespace

MaskRcnnDims MaskRcnnDims::from_config(const Config& cfg) {
  MaskRcnnDims d;
  d.height = kMaskrcnnImageHeight(cfg);
  d.width = kMaskrcnnImageWidth(cfg);
  d.classes = kMaskrcnnClasses(cfg);
  d.pre_nms = kMaskrcnnRpnPreNmsTopn(cfg);
  d.post_nms = kMaskrcnnRpnPostNmsTopn(cfg);
  d.rois = kMaskrcnnRoisPerImage(cfg);
  d.mask_rois = kMaskrcnnMaskRoisPerImage(cfg);
  d.gt = kMaskrcnnMaxGtBoxes(cfg);
  d.gt_mask = kMaskrcnnGtMaskPixels(cfg);
  d.nms_self_iterations = kMaskrcnnNmsSelfSuppressionIterations(cfg);
  d.eval_pre_nms = kMaskrcnnEvalRpnPreNmsTopn(cfg);
  d.eval_post_nms = kMaskrcnnEvalRpnPostNmsTopn(cfg);
  d.eval_detections = kMaskrcnnEvalDetections(cfg);
  d.costs = DetectionCosts::from_config(cfg, kMaskrcnnF32MatmulPrecision(cfg));
  d.array_dim = static_cast<int>(kHwMxuDim(cfg));
  check_spatial_split(cfg, d.height, d.width, "workload.image_height", "workload.image_width");
  if (d.mask_rois > d.rois)
    throw ConfigError(
        "workload.mask_rois_per_image",
        std::to_string(d.mask_rois) + " exceeds workload.rois_per_image " + std::to_string(d.rois));
  if (d.eval_detections > d.eval_post_nms)
    throw ConfigError("workload.eval_detections", std::to_string(d.eval_detections) +
                                                      " exceeds workload.eval_rpn_post_nms_topn " +
                                                      std::to_string(d.eval_post_nms));
  return d;
}

namespace {

// The host's work per example: 279,279 anchors at 832 x 1344 (docs/detection.md); a 640 x 480
// image resized to short side 800 is 1067 x 800.
constexpr double kMaskrcnnAnchors = 279279;
constexpr double kMaskrcnnResizedPixels = 1067.0 * 800.0;

class MaskRcnn final : public ModelBuilder {
 public:
  bool supports_spatial() const override { return true; }

  /// Training: decode, flip, resize, normalise and pad, anchor matching and box encoding, the
  /// ground-truth masks cropped. Evaluation (the timed-run reference page): decode, resize,
  /// normalise and pad only.
  void input_pipeline(PipelineBuilder& p, const Config& cfg, PipelinePass pass) const override {
    const double padded = static_cast<double>(kMaskrcnnImageHeight(cfg)) *
                          static_cast<double>(kMaskrcnnImageWidth(cfg));
    p.decode(kCocoImagePixels);
    if (pass == PipelinePass::Eval) {
      p.add("resize", host_cost::kResize, "output pixels", kMaskrcnnResizedPixels);
      p.add("normalize_pad", host_cost::kNormalize, "padded pixels", padded);
      return;
    }
    const double mask = static_cast<double>(kMaskrcnnGtMaskPixels(cfg));
    p.add("flip", host_cost::kFlip, "pixels", kCocoImagePixels);
    p.add("resize", host_cost::kResize, "output pixels", kMaskrcnnResizedPixels);
    p.add("normalize_pad", host_cost::kNormalize, "padded pixels", padded);
    p.match(kCocoBoxesPerImage * kMaskrcnnAnchors, kMaskrcnnAnchors);
    p.add("mask_crop", host_cost::kMaskCrop, "mask pixels", kCocoBoxesPerImage * mask * mask);
  }

  /// COCO mAP of boxes and masks; taken to run on the host while training goes on, as SSD's
  /// (ASSUMPTION: the same TF TPU detection runner; docs/train.md).
  void eval_metric(MetricBuilder& m, const Config& cfg, double examples) const override {
    add_coco_metric(m, examples, true, kMaskrcnnEvalDetectionsPerImage(cfg),
                    kMaskrcnnEvalDetectionsPerImage.path(), kMaskrcnnEvalDetections(cfg),
                    kMaskrcnnEvalDetections.path());
  }

  OpGraph build(const Config& cfg, std::int64_t batch) const override {
    const MaskRcnnDims d = MaskRcnnDims::from_config(cfg);
    OpGraph g;
    g.model = kMaskrcnnModel;
    g.replica_batch = batch;
    CnnBlocks b(g, BatchNormMode::Frozen, d.array_dim);
    const MaskRcnnFeatures f = add_maskrcnn_backbone(g, b, d, batch);

    // RPN losses over all anchors (labels and the 256 sampled anchors come from the host).
    double anchors = 0;
    for (std::int64_t a : f.anchors) anchors += static_cast<double>(a);
    // Infeed per image: the bf16 image (space-to-depth keeps its bytes), the host's anchor labels
    // (an i32 score target and 4 f32 box targets per anchor) and the padded ground truth (4 f32
    // box corners and an i32 class per box, and its gt_mask x gt_mask f32 mask, from which the
    // device computes the mask targets).
    g.infeed_bytes_per_example =
        static_cast<double>(d.height) * d.width * 3 * 2 + anchors * 5 * 4 +
        static_cast<double>(d.gt) * (5 + static_cast<double>(d.gt_mask) * d.gt_mask) * 4;
    OpNode rpn_loss =
        vector_op(OpKind::Loss, "rpn.loss", batch * anchors * 5, 1,
                  (vpu_ops::kSigmoidCrossEntropy + 4 * vpu_ops::kSmoothL1) / 5,
                  (vpu_ops::kSigmoidCrossEntropyGrad + 4 * vpu_ops::kSmoothL1Grad) / 5);
    rpn_loss.split.spatial = SplitDim::M;
    g.add(std::move(rpn_loss), f.rpn_out);

    const int proposals = add_proposals(g, d, f, batch, d.pre_nms, d.post_nms);
    const auto [rois, mask_rois] = add_roi_sampler(g, d, proposals, batch);
    const std::vector<int> levels = gather_levels_for_roi_align(g, f);
    const int box_crops =
        add_roi_align(g, d, "box_head.roi_align", f, levels, rois, batch, d.rois, 7);
    const auto [cls, box] = add_box_head(g, d, box_crops, batch * d.rois);
    const int mask_crops =
        add_roi_align(g, d, "mask_head.roi_align", f, levels, mask_rois, batch, d.mask_rois, 14);
    const int masks = add_mask_head(g, d, mask_crops, batch * d.mask_rois);
    add_maskrcnn_losses(g, d, cls, box, masks, rois, mask_rois, batch);

    derive_training_graph(g, OptimizerKind::Sgd, cfg);
    finish_conv_training_graph(g);
    return g;
  }

  std::optional<OpGraph> build_eval(const Config& cfg, std::int64_t batch) const override {
    const MaskRcnnDims d = MaskRcnnDims::from_config(cfg);
    OpGraph g;
    g.model = kMaskrcnnModel;
    g.replica_batch = batch;
    CnnBlocks b(g, BatchNormMode::Frozen, d.array_dim);
    const MaskRcnnFeatures f = add_maskrcnn_backbone(g, b, d, batch);
    const int proposals = add_proposals(g, d, f, batch, d.eval_pre_nms, d.eval_post_nms);
    const std::vector<int> levels = gather_levels_for_roi_align(g, f);
    const int box_crops =
        add_roi_align(g, d, "box_head.roi_align", f, levels, proposals, batch, d.eval_post_nms, 7);
    const auto [cls, box] = add_box_head(g, d, box_crops, batch * d.eval_post_nms);
    const int detections = add_detection_postprocess(g, d, cls, box, batch, d.eval_post_nms);
    const int mask_crops = add_roi_align(g, d, "mask_head.roi_align", f, levels, detections, batch,
                                         d.eval_detections, 14);
    add_mask_head(g, d, mask_crops, batch * d.eval_detections);
    return g;
  }
};

// 256: the MLPerf v0.7 512-chip run (reference table).
const ModelRegistrar kMaskrcnnRegister{
    {kMaskrcnnModel, 256, "images per training step over all replicas", {"spatial_w"}},
    [] { return std::make_unique<MaskRcnn>(); }};

}  // namespace
}  // namespace tpusim
