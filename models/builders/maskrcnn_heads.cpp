// Mask R-CNN's second stage as the TPU code writes it (maskrcnn_parts.hpp): ROIAlign as one-hot
// einsums over every FPN level, the box and mask heads, mask targets and losses, and the eval
// post-processing. Under spatial partitioning the second stage is split over the ROIs.
#include <algorithm>

#include "models/builders/maskrcnn_parts.hpp"
#include "models/conv_ops.hpp"
#include "models/ops.hpp"

namespace tpusim {
namespace {

constexpr std::int64_t kMaskSize = 28;  ///< mask head output and targets: 28 x 28
constexpr double kSoftmax = 6;          ///< max, subtract, exp, sum, divide, (score threshold)

int add_split(OpGraph& g, OpNode op, SplitDim spatial, const std::vector<int>& inputs) {
  op.split.spatial = spatial;
  std::vector<int> ins;
  for (int v : inputs)
    if (v >= 0) ins.push_back(v);
  return g.add(std::move(op), ins);
}

int stopped(OpGraph& g, OpNode op, SplitDim spatial, const std::vector<int>& inputs) {
  op.stop_gradient = true;
  return add_split(g, std::move(op), spatial, inputs);
}

// A dense layer on the ROIs, ReLU fused when `relu`.
int dense(OpGraph& g, const std::string& name, int input, std::int64_t rows, std::int64_t k,
          std::int64_t n, bool relu) {
  OpNode op = weight_matmul(name, rows, k, n, true);
  if (relu) {
    op.vpu_ops_per_element += vpu_ops::kRelu;
    op.bwd_vpu_ops_per_element += vpu_ops::kReluGrad;
  }
  return add_split(g, std::move(op), SplitDim::M, {input});
}

}  // namespace

std::vector<int> gather_levels_for_roi_align(OpGraph& g, const MaskRcnnFeatures& f) {
  // Each core holds its rows of every level; the ROI-sharded einsums read whole maps. An
  // all-reduce of the zero-padded shards over "spatial" stands for the all-gather (about twice
  // its bytes); nothing moves without spatial partitioning.
  std::vector<int> out;
  for (std::size_t l = 0; l < f.levels.size(); ++l) {
    OpNode op =
        vector_op(OpKind::Elementwise, "roi_align.whole_p" + std::to_string(l + 2), 0, 0, 0, 0);
    op.partial_bytes = f.levels[l].map.elements() * kBf16Bytes;
    op.split.spatial = SplitDim::K;
    op.shapes = {{f.levels[l].map.batch, f.levels[l].map.height, f.levels[l].map.width,
                  f.levels[l].map.channels}};
    out.push_back(g.add(std::move(op), {f.levels[l].op}));
  }
  return out;
}

int add_roi_align(OpGraph& g, const MaskRcnnDims& d, const std::string& name,
                  const MaskRcnnFeatures& f, const std::vector<int>& levels, int boxes,
                  std::int64_t batch, std::int64_t rois, std::int64_t out) {
  const double b = static_cast<double>(batch);
  std::vector<int> per_level;
  for (std::size_t l = 0; l < f.levels.size(); ++l) {
    const FeatureMap& m = f.levels[l].map;
    const std::string n = name + ".p" + std::to_string(l + 2);
    // f32 interpolation weights [B, N, out, H] (one-hot rows with bilinear weights) times the
    // level's features [B, H, W * 256] (bf16 in HBM, cast in the fusion): [B, N, out, W, 256].
    OpNode rows = one_hot_matmul(n + ".rows", batch, rois * out, m.height, m.width * kMaskRcnnFpn,
                                 DType::F32, d.costs);
    rows.bytes_read = b * (static_cast<double>(m.height) * m.width * kMaskRcnnFpn * kBf16Bytes +
                           static_cast<double>(rois) * out * kF32Bytes);
    const int r = add_split(g, std::move(rows), SplitDim::M, {boxes, levels[l]});
    // Then the column weights [B, N, out, W] per output row: [B, N, out, out, 256].
    OpNode cols = one_hot_matmul(n + ".cols", batch * rois * out, out, m.width, kMaskRcnnFpn,
                                 DType::F32, d.costs);
    per_level.push_back(add_split(g, std::move(cols), SplitDim::Batch, {boxes, r}));
  }
  // The level each ROI belongs to selected by a mask, summed over the levels, cast to bf16.
  const double crops = b * rois * out * out * kMaskRcnnFpn;
  OpNode sum = f32_vector_op(OpKind::Elementwise, name + ".level_sum", crops,
                             static_cast<int>(per_level.size()), 2.0 * per_level.size(),
                             2.0 * per_level.size());
  sum.out_dtype = DType::BF16;
  sum.bytes_written = crops * kBf16Bytes;
  // Its gradient selects dY by each ROI's level: it keeps none of the levels' crops.
  sum.grad_reads = GradReads::None;
  sum.shapes = {{batch, rois, out, out, kMaskRcnnFpn}};
  return add_split(g, std::move(sum), SplitDim::M, per_level);
}

std::pair<int, int> add_box_head(OpGraph& g, const MaskRcnnDims& d, int crops, std::int64_t rois) {
  int x = dense(g, "box_head.fc1", crops, rois, 7 * 7 * kMaskRcnnFpn, 1024, true);
  x = dense(g, "box_head.fc2", x, rois, 1024, 1024, true);
  const int cls = dense(g, "box_head.class", x, rois, 1024, d.classes, false);
  const int box = dense(g, "box_head.box", x, rois, 1024, d.classes * 4, false);
  return {cls, box};
}

int add_mask_head(OpGraph& g, const MaskRcnnDims& d, int crops, std::int64_t rois) {
  // Convs over ROIs split the ROIs (no rows, no halo): they carry no feature-map geometry.
  auto roi_conv = [&](const std::string& name, int input, FeatureMap in, std::int64_t out,
                      int kernel, std::int64_t out_size, bool relu) {
    OpNode op = conv2d(name, in, out, kernel, 1, d.array_dim, ConvPadding::Same, true);
    // The deconvolution: each input pixel feeds a 2x2 output block, one tap per output.
    op.matmul->m = in.batch * out_size * out_size / (kernel == 2 ? 4 : 1);
    op.flops = 2.0 * kernel * kernel * op.matmul->m * in.channels * out;
    op.bytes_written = static_cast<double>(in.batch) * out_size * out_size * out * kBf16Bytes;
    op.vpu_elements = static_cast<double>(in.batch) * out_size * out_size * out;
    if (relu) {
      op.vpu_ops_per_element += vpu_ops::kRelu;
      op.bwd_vpu_ops_per_element += vpu_ops::kReluGrad;
    }
    op.conv.reset();
    return add_split(g, std::move(op), SplitDim::M, {input});
  };
  const FeatureMap m{rois, 14, 14, kMaskRcnnFpn};
  int x = crops;
  for (int i = 0; i < 4; ++i)
    x = roi_conv("mask_head.conv" + std::to_string(i), x, m, kMaskRcnnFpn, 3, 14, true);
  x = roi_conv("mask_head.deconv", x, m, kMaskRcnnFpn, 2, kMaskSize, true);
  x = roi_conv("mask_head.mask_logits", x, {rois, kMaskSize, kMaskSize, kMaskRcnnFpn}, d.classes, 1,
               kMaskSize, false);
  // The class's mask picked by a one-hot einsum: [28 * 28, classes] x one-hot [classes, 1].
  OpNode pick = mxu_product(OpKind::OneHotMatmul, "mask_head.class_select", rois,
                            kMaskSize * kMaskSize, d.classes, 1, DType::BF16, d.costs);
  return add_split(g, std::move(pick), SplitDim::Batch, {x});
}

void add_maskrcnn_losses(OpGraph& g, const MaskRcnnDims& d, int cls, int box, int masks,
                         int sampled_rois, int mask_rois, std::int64_t batch) {
  const std::int64_t rois = batch * d.rois;
  add_split(g, cross_entropy_loss("box_head.class_loss", rois, d.classes), SplitDim::M, {cls});
  // The class box of every ROI: a one-hot [B*R, B*R*C] matmul with the box outputs viewed as
  // [B*R*C, 4], in f32 (the TPU code's select_class_targets).
  OpNode select = one_hot_matmul("box_head.select_class_box", 1, rois, rois * d.classes, 4,
                                 DType::F32, d.costs);
  const int selected = add_split(g, std::move(select), SplitDim::M, {sampled_rois, box});
  add_split(g,
            f32_vector_op(OpKind::Loss, "box_head.box_loss", static_cast<double>(rois) * 4, 2,
                          vpu_ops::kSmoothL1, vpu_ops::kSmoothL1Grad),
            SplitDim::M, {selected});

  // Mask targets, f32: the ROIs' ground-truth masks by a one-hot einsum over the padded masks
  // (from the host), then bilinear resampling to 28 x 28 as two einsums, then a threshold.
  const std::int64_t mr = batch * d.mask_rois;
  const std::int64_t gm = d.gt_mask;
  int t = stopped(
      g,
      one_hot_matmul("mask_targets.select", batch, d.mask_rois, d.gt, gm * gm, DType::F32, d.costs),
      SplitDim::M, {mask_rois});
  t = stopped(
      g,
      mxu_product(OpKind::Matmul, "mask_targets.rows", mr, kMaskSize, gm, gm, DType::F32, d.costs),
      SplitDim::Batch, {t});
  t = stopped(g,
              mxu_product(OpKind::Matmul, "mask_targets.cols", mr, kMaskSize, gm, kMaskSize,
                          DType::F32, d.costs),
              SplitDim::Batch, {t});
  t = stopped(g,
              f32_vector_op(OpKind::Elementwise, "mask_targets.threshold",
                            static_cast<double>(mr) * kMaskSize * kMaskSize, 1, 1, 0),
              SplitDim::M, {t});
  add_split(
      g,
      vector_op(OpKind::Loss, "mask_head.loss", static_cast<double>(mr) * kMaskSize * kMaskSize, 2,
                vpu_ops::kSigmoidCrossEntropy, vpu_ops::kSigmoidCrossEntropyGrad),
      SplitDim::M, {masks, t});
}

int add_detection_postprocess(OpGraph& g, const MaskRcnnDims& d, int cls, int box,
                              std::int64_t batch, std::int64_t rois) {
  const double b = static_cast<double>(batch);
  const std::int64_t fg = d.classes - 1;  // background has no detections
  // Class scores (softmax) and every class's decoded box, f32.
  int v = stopped(g,
                  f32_vector_op(OpKind::Elementwise, "detections.decode", b * rois * d.classes * 5,
                                2, (kSoftmax + 4 * 8) / 5, 0),
                  SplitDim::None, {cls, box});
  // Per class: the best boxes by a top-k, NMS over the classes as a batch, then the best
  // detections over all classes.
  v = stopped(g, top_k("detections.class_top_k", batch * fg, rois, rois, DType::F32),
              SplitDim::None, {v});
  v = add_tiled_nms(g, "detections.nms", batch * fg, rois, kMaskRcnnNmsTile, d.nms_self_iterations,
                    v);
  v = stopped(
      g, top_k("detections.top_k", batch, fg * d.eval_detections, d.eval_detections, DType::F32),
      SplitDim::None, {v});
  return v;
}

}  // namespace tpusim
