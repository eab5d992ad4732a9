// Mask R-CNN with a ResNet-50-FPN backbone (MLPerf v0.7 object detection and segmentation, COCO).
// He et al. 2017, Lin et al. 2017 (FPN), the MLPerf reference and the TPU implementation
// (tensorflow/tpu models/official/mask_rcnn), whose training settings fix the dynamic sizes:
//  - images resized to short side 800, long side at most 1333, padded to 832 x 1344 (multiples
//    of 64, the TPU implementation's training image size);
//  - RPN: 3 anchors per location on P2..P6; top 2000 proposals per level before NMS, 1000 per
//    image after (training settings); anchor labels are computed by the host input pipeline;
//  - 512 sampled ROIs per image for the box head, 128 (the 25 % foreground share) for the mask
//    head; up to 100 ground-truth boxes per image;
//  - batch norm frozen (fixed statistics and affine parameters), as the reference model.
// Proposals are stop-gradient. Under spatial partitioning the backbone, FPN and RPN split rows;
// the RPN scores and ROI-align crops are combined over the spatial axis (all-reduce of partial
// results) and the ROI heads split their ROIs over it.
#include <cmath>
#include <limits>

#include "core/errors.hpp"
#include "core/params.hpp"
#include "models/builders/cnn_blocks.hpp"
#include "models/builders/cnn_checks.hpp"
#include "models/model_builder.hpp"
#include "models/ops.hpp"
#include "models/training.hpp"

namespace tpusim {
namespace {
using T = ParamType;
const char* kModel = "maskrcnn";

ParamSpec param(const char* path, ParamType type, const char* unit, double def, const char* meaning,
                double min, double max) {
  return {path, type, unit, def, meaning, min, max, {}, "workload.model", kModel};
}

// One parameter per line reads as a table.
// clang-format off
const ParamRegistrar kParams{{
    // 256: the MLPerf v0.7 512-chip run (reference table).
    param("workload.global_batch", T::Integer, "images", 256,
          "images per training step over all replicas", 1, 1e9),
    param("workload.image_height", T::Integer, "pixels", 832,
          "padded input height (short side 800 padded to a multiple of 64)", 64, 1e5),
    param("workload.image_width", T::Integer, "pixels", 1344,
          "padded input width (long side at most 1333 padded to a multiple of 64)", 64, 1e5),
    param("workload.classes", T::Integer, "", 81, "object classes including background", 2, 1e5),
    param("workload.rpn_pre_nms_topn", T::Integer, "boxes", 2000,
          "proposals per FPN level and image kept before NMS", 1, 1e6),
    param("workload.rpn_post_nms_topn", T::Integer, "boxes", 1000,
          "proposals per image kept after NMS", 1, 1e6),
    param("workload.rois_per_image", T::Integer, "boxes", 512,
          "sampled ROIs per image for the box head", 1, 1e6),
    param("workload.mask_rois_per_image", T::Integer, "boxes", 128,
          "foreground ROIs per image for the mask head", 1, 1e6),
    param("workload.max_gt_boxes", T::Integer, "boxes", 100,
          "ground-truth boxes per image (padded)", 1, 1e5),
}};
// clang-format on

constexpr std::int64_t kFpn = 256;
constexpr std::int64_t kAnchors = 3;

// A gather-like vector op on the vector unit whose output does not split rows.
OpNode vector(OpKind kind, const std::string& name, double elements, double ops, double bwd) {
  return vector_op(kind, name, elements, 1, ops, bwd);
}

class MaskRcnn final : public ModelBuilder {
 public:
  bool supports_spatial() const override { return true; }

  OpGraph build(const Config& cfg, std::int64_t batch) const override {
    const std::int64_t h = cfg.integer("workload.image_height");
    const std::int64_t w = cfg.integer("workload.image_width");
    const std::int64_t classes = cfg.integer("workload.classes");
    const std::int64_t pre_nms = cfg.integer("workload.rpn_pre_nms_topn");
    const std::int64_t post_nms = cfg.integer("workload.rpn_post_nms_topn");
    const std::int64_t rois = cfg.integer("workload.rois_per_image");
    const std::int64_t mask_rois = cfg.integer("workload.mask_rois_per_image");
    const std::int64_t gt = cfg.integer("workload.max_gt_boxes");
    check_spatial_split(cfg, h, w, "workload.image_height/width");
    if (mask_rois > rois)
      throw ConfigError(
          "workload.mask_rois_per_image",
          std::to_string(mask_rois) + " exceeds workload.rois_per_image " + std::to_string(rois));

    OpGraph g;
    g.model = kModel;
    g.replica_batch = batch;
    CnnBlocks b(g, BatchNormMode::Frozen, static_cast<int>(cfg.integer("hardware.mxu.dim")));

    // ResNet-50 backbone: C2..C5 (strides 4..32).
    MapRef x = b.stem({batch, h, w, 3}, 1);
    const std::int64_t blocks[] = {3, 4, 6, 3}, widths[] = {64, 128, 256, 512};
    std::vector<MapRef> c;
    for (int stage = 0; stage < 4; ++stage) {
      for (std::int64_t i = 0; i < blocks[stage]; ++i)
        x = b.bottleneck("backbone.stage" + std::to_string(stage + 1) + "." + std::to_string(i), x,
                         widths[stage], i == 0 && stage > 0 ? 2 : 1);
      c.push_back(x);
    }

    // FPN: lateral 1x1 convs, top-down nearest 2x upsample + add, 3x3 output convs; P6 by
    // subsampling P5.
    std::vector<MapRef> lateral(4), p(5);
    for (int l = 3; l >= 0; --l) {
      const std::string n = "fpn.p" + std::to_string(l + 2);
      lateral[l] = b.conv(n + ".lateral", c[l], kFpn, 1, 1);
      if (l < 3)
        lateral[l] = b.elementwise(n + ".topdown_add", {lateral[l].op, lateral[l + 1].op},
                                   lateral[l].map, vpu_ops::kUpsampleAdd, vpu_ops::kUpsampleAdd);
    }
    for (int l = 0; l < 4; ++l)
      p[l] = b.conv("fpn.p" + std::to_string(l + 2) + ".output", lateral[l], kFpn, 3, 1);
    p[4] = b.max_pool("fpn.p6", p[3], 1, 2);

    // RPN head, weights shared over the levels (levels 1..4 tied to level 0).
    std::vector<int> rpn_out;
    double anchors = 0;
    int shared[3] = {-1, -1, -1};
    for (int l = 0; l < 5; ++l) {
      const std::string n = "rpn.p" + std::to_string(l + 2);
      MapRef t = b.conv(n + ".conv", p[l], kFpn, 3, 1);
      g.node(t.op).vpu_ops_per_element += vpu_ops::kRelu;
      g.node(t.op).bwd_vpu_ops_per_element += vpu_ops::kReluGrad;
      const MapRef score = b.conv(n + ".objectness", t, kAnchors, 1, 1);
      const MapRef box = b.conv(n + ".box", t, kAnchors * 4, 1, 1);
      const int ops[3] = {t.op, score.op, box.op};
      for (int k = 0; k < 3; ++k) {
        if (l == 0)
          shared[k] = ops[k];
        else
          tie(g, ops[k], shared[k]);
      }
      rpn_out.push_back(score.op);
      rpn_out.push_back(box.op);
      anchors += static_cast<double>(p[l].map.height) * p[l].map.width * kAnchors;
    }
    const double n_anchors = batch * anchors;
    // Infeed per image: the bf16 image, the host's anchor labels (an i32 score target and 4 f32
    // box targets per anchor) and the padded ground truth (4 f32 box corners, an i32 class and a
    // 28x28 f32 mask target per box).
    g.infeed_bytes_per_example =
        static_cast<double>(h) * w * 3 * 2 + anchors * 5 * 4 +
        static_cast<double>(cfg.integer("workload.max_gt_boxes")) * (5 + 28 * 28) * 4;
    // RPN loss over all anchors (labels from the host; sampled anchors masked in).
    OpNode rpn_loss = vector(OpKind::Loss, "rpn.loss", n_anchors * 5,
                             (vpu_ops::kSigmoidCrossEntropy + 4 * vpu_ops::kSmoothL1) / 5,
                             (vpu_ops::kSigmoidCrossEntropyGrad + 4 * vpu_ops::kSmoothL1Grad) / 5);
    rpn_loss.split.spatial = SplitDim::M;
    g.add(std::move(rpn_loss), rpn_out);

    // Proposals (stop-gradient): scores and boxes of all anchors gathered on every core of the
    // spatial axis, per-level top-k, decode, NMS, top post_nms per image, ROI sampling.
    const double levels = 5;
    OpNode gather = vector(OpKind::Elementwise, "proposals.gather_scores", n_anchors * 5, 1, 0);
    gather.stop_gradient = true;
    gather.out_dtype = DType::F32;
    gather.bytes_written = n_anchors * 5 * 4;
    gather.partial_bytes = gather.bytes_written;
    gather.split.spatial = SplitDim::K;
    int v = g.add(std::move(gather), rpn_out);
    v = add_stopped(g,
                    vector(OpKind::Elementwise, "proposals.topk", n_anchors,
                           2 * std::log2(std::max(2.0, anchors / levels)), 0),
                    v);
    const double candidates = static_cast<double>(batch) * levels * pre_nms;
    v = add_stopped(g, vector(OpKind::Elementwise, "proposals.decode", candidates * 4, 6, 0), v);
    // Blocked NMS: IoU of every candidate pair of a level (about 8 ops: 4 min/max, area, divide,
    // compare), then the suppression pass.
    v = add_stopped(g,
                    vector(OpKind::Elementwise, "proposals.nms",
                           static_cast<double>(batch) * levels * pre_nms * pre_nms, 8, 0),
                    v);
    v = add_stopped(g,
                    vector(OpKind::Elementwise, "proposals.topk_post_nms", candidates,
                           2 * std::log2(static_cast<double>(levels * pre_nms)), 0),
                    v);
    const double proposal_gt = static_cast<double>(batch) * (post_nms + gt) * gt;
    const int sampled =
        add_stopped(g, vector(OpKind::Elementwise, "roi.sample", proposal_gt, 10, 0), v);

    std::vector<int> features;
    for (int l = 0; l < 4; ++l) features.push_back(p[l].op);
    add_box_head(g, features, sampled, batch * rois, classes);
    add_mask_head(g, features, sampled, batch * mask_rois, classes, b.array_dim());

    derive_training_graph(g, OptimizerKind::Sgd);
    finish_conv_training_graph(g);
    return g;
  }

 private:
  // A later level's RPN op uses the first level's weights.
  static void tie(OpGraph& g, int op, int owner) {
    g.node(op).params = 0;
    g.node(op).tied_to = owner;
  }

  static int add_stopped(OpGraph& g, OpNode op, int input) {
    op.stop_gradient = true;
    return g.add(std::move(op), {input});
  }

  // Multilevel ROI align of `rois` boxes to size x size x 256 (bilinear, 2x2 samples per bin):
  // each core samples the points in its rows, so the crops are partial over the spatial axis.
  static int roi_align(OpGraph& g, const std::string& name, const std::vector<int>& features,
                       int boxes_op, std::int64_t rois, std::int64_t size) {
    const double out = static_cast<double>(rois) * size * size * kFpn;
    OpNode op = vector_op(OpKind::Elementwise, name, out, 4, vpu_ops::kBilinearSample,
                          vpu_ops::kBilinearSample);
    op.partial_bytes = out * dtype_bytes(DType::BF16);
    op.split.spatial = SplitDim::K;
    op.shapes = {{rois, 4}, {rois, size, size, kFpn}};
    std::vector<int> ins = features;
    ins.push_back(boxes_op);
    return g.add(std::move(op), ins);
  }

  // Dense layer on the ROIs (split over the spatial axis), ReLU fused when `relu`.
  static int dense(OpGraph& g, const std::string& name, int input, std::int64_t rows,
                   std::int64_t k, std::int64_t n, bool relu) {
    OpNode op = weight_matmul(name, rows, k, n, true);
    if (relu) {
      op.vpu_ops_per_element += vpu_ops::kRelu;
      op.bwd_vpu_ops_per_element += vpu_ops::kReluGrad;
    }
    op.split.spatial = SplitDim::M;
    return g.add(std::move(op), {input});
  }

  static void add_box_head(OpGraph& g, const std::vector<int>& features, int sampled,
                           std::int64_t rois, std::int64_t classes) {
    const int crops = roi_align(g, "box_head.roi_align", features, sampled, rois, 7);
    int x = dense(g, "box_head.fc1", crops, rois, 7 * 7 * kFpn, 1024, true);
    x = dense(g, "box_head.fc2", x, rois, 1024, 1024, true);
    const int cls = dense(g, "box_head.class", x, rois, 1024, classes, false);
    const int box = dense(g, "box_head.box", x, rois, 1024, classes * 4, false);
    OpNode ce = cross_entropy_loss("box_head.class_loss", rois, classes);
    ce.split.spatial = SplitDim::M;
    g.add(std::move(ce), {cls});
    OpNode l1 = vector_op(OpKind::Loss, "box_head.box_loss", static_cast<double>(rois) * 4, 1,
                          vpu_ops::kSmoothL1, vpu_ops::kSmoothL1Grad);
    l1.split.spatial = SplitDim::M;
    g.add(std::move(l1), {box});
  }

  // Four 3x3 convs of 256 on 14x14 crops, a 2x2 stride-2 deconvolution to 28x28, a 1x1 conv to
  // one mask per class; sigmoid cross-entropy on the ground-truth class's mask. Convs over ROIs
  // split the ROIs (no rows, no halo): they carry no feature-map geometry.
  static void add_mask_head(OpGraph& g, const std::vector<int>& features, int sampled,
                            std::int64_t rois, std::int64_t classes, int array_dim) {
    int x = roi_align(g, "mask_head.roi_align", features, sampled, rois, 14);
    auto roi_conv = [&](const std::string& name, int input, FeatureMap in, std::int64_t out,
                        int taps_kernel, std::int64_t out_size, bool relu) {
      OpNode op = conv2d(name, in, out, taps_kernel, 1, array_dim, ConvPadding::Same, true);
      op.matmul->m = in.batch * out_size * out_size / (taps_kernel == 2 ? 4 : 1);
      op.flops = 2.0 * taps_kernel * taps_kernel * op.matmul->m * in.channels * out;
      op.bytes_written = static_cast<double>(in.batch) * out_size * out_size * out * 2;
      op.vpu_elements = static_cast<double>(in.batch) * out_size * out_size * out;
      if (relu) {
        op.vpu_ops_per_element += vpu_ops::kRelu;
        op.bwd_vpu_ops_per_element += vpu_ops::kReluGrad;
      }
      op.conv.reset();
      op.split.spatial = SplitDim::M;
      return g.add(std::move(op), {input});
    };
    FeatureMap m{rois, 14, 14, kFpn};
    for (int i = 0; i < 4; ++i)
      x = roi_conv("mask_head.conv" + std::to_string(i), x, m, kFpn, 3, 14, true);
    // Deconvolution: each input pixel feeds a 2x2 output block, one tap per output position.
    x = roi_conv("mask_head.deconv", x, m, kFpn, 2, 28, true);
    x = roi_conv("mask_head.mask_logits", x, {rois, 28, 28, kFpn}, classes, 1, 28, false);
    OpNode loss = vector_op(OpKind::Loss, "mask_head.loss", static_cast<double>(rois) * 28 * 28, 1,
                            vpu_ops::kSigmoidCrossEntropy, vpu_ops::kSigmoidCrossEntropyGrad);
    loss.split.spatial = SplitDim::M;
    g.add(std::move(loss), {x});
  }
};

const ModelRegistrar kRegister{kModel, [] { return std::make_unique<MaskRcnn>(); }};

}  // namespace
}  // namespace tpusim
