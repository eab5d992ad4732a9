// Mask R-CNN's region proposals and ROI sampler as the TPU code runs them (maskrcnn_parts.hpp).
// Every op here is stop-gradient (boxes carry no gradient) and carries no sharding annotation,
// so under spatial partitioning it runs replicated on every core of the spatial axis.
#include <algorithm>
#include <cmath>

#include "models/builders/maskrcnn_parts.hpp"
#include "models/ops.hpp"

namespace tpusim {
namespace {

constexpr double kBoxBytes = 4 * kF32Bytes;  ///< a box or a box delta: 4 f32
/// Attributes carried by a candidate ROI through the sampler (box, matched ground-truth box).
constexpr std::int64_t kRoiAttributes = 8;
constexpr double kSigmoid = 4;
/// Box decode, clip and filter per coordinate: exp of the size deltas, scale, shift, 2 clips,
/// the small-box compare and select.
constexpr double kDecode = 8;

int stopped(OpGraph& g, OpNode op, const std::vector<int>& inputs) {
  op.stop_gradient = true;
  return g.add(std::move(op), inputs);
}

std::int64_t round_up(std::int64_t x, std::int64_t to) { return (x + to - 1) / to * to; }

}  // namespace

int add_proposals(OpGraph& g, const MaskRcnnDims& d, const MaskRcnnFeatures& f, std::int64_t batch,
                  std::int64_t pre_nms, std::int64_t post_nms) {
  const double b = static_cast<double>(batch);
  double all_anchors = 0;
  for (std::int64_t a : f.anchors) all_anchors += static_cast<double>(a);
  // Scores and deltas of every anchor, whole on every core of the spatial axis (partial per
  // core: an all-reduce over "spatial" when the maps are split).
  OpNode whole =
      f32_vector_op(OpKind::Elementwise, "proposals.rpn_outputs", b * all_anchors * 5, 0, 0, 0);
  whole.vpu_elements = 0;
  whole.bytes_written = 0;
  whole.partial_bytes = b * all_anchors * 5 * kF32Bytes;
  whole.split.spatial = SplitDim::K;
  const int rpn = stopped(g, std::move(whole), f.rpn_out);

  std::vector<int> per_level;
  std::int64_t merged = 0;
  for (std::size_t l = 0; l < f.anchors.size(); ++l) {
    const std::string n = "proposals.p" + std::to_string(l + 2);
    const std::int64_t anchors = f.anchors[l];
    const std::int64_t k = std::min(pre_nms, anchors);
    int v = stopped(
        g, f32_vector_op(OpKind::Elementwise, n + ".sigmoid", b * anchors, 1, kSigmoid, 0), {rpn});
    v = stopped(g, top_k(n + ".top_k", batch, anchors, k, DType::F32), {v});
    v = stopped(g,
                hbm_gather(n + ".gather_deltas_anchors", 2 * b * k, kBoxBytes, DType::F32, d.costs),
                {v});
    v = stopped(g, f32_vector_op(OpKind::Elementwise, n + ".decode", b * k * 4, 2, kDecode, 0),
                {v});
    // Boxes padded to whole tiles (2048 for 2000, 1024 for P6's 819).
    const std::int64_t padded = round_up(k, kMaskRcnnNmsTile);
    v = add_tiled_nms(g, n + ".nms", batch, padded, kMaskRcnnNmsTile, d.nms_self_iterations, v);
    const std::int64_t kept = std::min(post_nms, k);
    v = stopped(g, top_k(n + ".select", batch, padded, kept, DType::F32), {v});
    per_level.push_back(stopped(
        g, hbm_gather(n + ".gather_selected", b * kept, kBoxBytes, DType::F32, d.costs), {v}));
    merged += kept;
  }
  const int v =
      stopped(g, top_k("proposals.merge.top_k", batch, merged, post_nms, DType::F32), per_level);
  return stopped(
      g, hbm_gather("proposals.merge.gather", b * post_nms, kBoxBytes, DType::F32, d.costs), {v});
}

std::pair<int, int> add_roi_sampler(OpGraph& g, const MaskRcnnDims& d, int proposals,
                                    std::int64_t batch) {
  const double b = static_cast<double>(batch);
  const std::int64_t cand = d.post_nms + d.gt;  // ground truth appended to the proposals
  // IoU of every candidate with every ground-truth box, then the arg-max over the boxes.
  OpNode iou = f32_vector_op(OpKind::Elementwise, "roi_sampler.iou", b * cand * d.gt, 0,
                             vpu_ops::kBoxIou + 1, 0);
  iou.bytes_read = b * (cand + d.gt) * kBoxBytes;
  iou.bytes_written = b * cand * 2 * kF32Bytes;  // max IoU and its index
  int v = stopped(g, std::move(iou), {proposals});
  // The static balanced sampler: a random shuffle as a one-hot matmul, a full sort of the
  // candidates by (label, shuffled order), a cumulative sum (log2 n passes) to count each class.
  v = stopped(
      g,
      one_hot_matmul("roi_sampler.shuffle", batch, cand, cand, kRoiAttributes, DType::F32, d.costs),
      {v});
  v = stopped(g, top_k("roi_sampler.sort", batch, cand, cand, DType::F32), {v});
  v = stopped(g,
              f32_vector_op(OpKind::Elementwise, "roi_sampler.cumsum", b * cand, 1,
                            std::ceil(std::log2(static_cast<double>(cand))), 0),
              {v});
  const int rois = stopped(g,
                           one_hot_matmul("roi_sampler.gather_rois", batch, d.rois, cand,
                                          kRoiAttributes, DType::F32, d.costs),
                           {v});
  // Mask ROIs: the foreground ROIs first, by a top-k of the ROIs' foreground flags.
  v = stopped(g, top_k("roi_sampler.mask_top_k", batch, d.rois, d.mask_rois, DType::F32), {rois});
  const int mask = stopped(g,
                           one_hot_matmul("roi_sampler.gather_mask_rois", batch, d.mask_rois,
                                          d.rois, kRoiAttributes, DType::F32, d.costs),
                           {v});
  return {rois, mask};
}

}  // namespace tpusim
