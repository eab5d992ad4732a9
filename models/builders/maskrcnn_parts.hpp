#pragma once
// The pieces of the Mask R-CNN builder (models/builders/maskrcnn.cpp), after the MLPerf v0.7
// TPU implementation as docs/detection.md describes it: the backbone, FPN and RPN
// (maskrcnn_backbone.cpp), proposals and the ROI sampler (maskrcnn_proposals.cpp), ROIAlign as
// one-hot einsums, the heads, mask targets and losses (maskrcnn_heads.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "models/builders/cnn_blocks.hpp"
#include "models/detection_ops.hpp"
#include "models/op_graph.hpp"

namespace tpusim {

constexpr std::int64_t kMaskRcnnFpn = 256;      ///< FPN channels
constexpr std::int64_t kMaskRcnnAnchors = 3;    ///< anchors per location and level
constexpr std::int64_t kMaskRcnnNmsTile = 512;  ///< boxes per tile of the proposals' NMS

/// The workload.* dimensions of a Mask R-CNN study.
struct MaskRcnnDims {
  std::int64_t height = 0, width = 0, classes = 0;
  std::int64_t pre_nms = 0, post_nms = 0, rois = 0, mask_rois = 0, gt = 0, gt_mask = 0;
  std::int64_t nms_self_iterations = 0;
  std::int64_t eval_pre_nms = 0, eval_post_nms = 0, eval_detections = 0;
  DetectionCosts costs;
  int array_dim = 128;
  static MaskRcnnDims from_config(const Config& cfg);
};

/// The first stage's outputs: FPN levels P2..P6 and the RPN heads' score and box ops.
struct MaskRcnnFeatures {
  std::vector<MapRef> levels;         ///< P2..P6
  std::vector<int> rpn_out;           ///< per level: objectness op, box op
  std::vector<std::int64_t> anchors;  ///< per level, per image
};

/// Stem (space-to-depth, 4x4 stride-1 conv), ResNet-50 C2..C5 with frozen batch norm folded into
/// the convolutions; conv0 and res2 own no trained weights. FPN (1x1 laterals, upsample-add, 3x3
/// outputs, P6 a stride-2 subsample) and the shared RPN head.
MaskRcnnFeatures add_maskrcnn_backbone(OpGraph& g, CnnBlocks& b, const MaskRcnnDims& d,
                                       std::int64_t batch);

/// RPN proposals (stop-gradient): per level sigmoid, top-k of min(pre_nms, anchors), gathers,
/// decode, tiled NMS, top-k post_nms; then all levels merged by a top-k post_nms. Returns the op
/// holding the proposals.
int add_proposals(OpGraph& g, const MaskRcnnDims& d, const MaskRcnnFeatures& f, std::int64_t batch,
                  std::int64_t pre_nms, std::int64_t post_nms);

/// The balanced ROI sampler on (post_nms + gt) candidates: IoU and argmax, a shuffle by one-hot
/// matmul, a full sort, a cumulative sum, the ROIs and the mask ROIs gathered by one-hot matmuls.
/// Returns {box-head ROIs op, mask ROIs op}.
std::pair<int, int> add_roi_sampler(OpGraph& g, const MaskRcnnDims& d, int proposals,
                                    std::int64_t batch);

/// The FPN levels made whole on every core of the spatial axis for ROIAlign (one op per level).
std::vector<int> gather_levels_for_roi_align(OpGraph& g, const MaskRcnnFeatures& f);

/// Multilevel ROIAlign of `rois` boxes per image to out x out x 256 as the TPU code writes it:
/// per level f32 one-hot einsums over the whole map (rows, then columns), a level select and
/// the sum over levels; split over the ROIs under spatial partitioning. Returns the crops' op.
int add_roi_align(OpGraph& g, const MaskRcnnDims& d, const std::string& name,
                  const MaskRcnnFeatures& f, const std::vector<int>& levels, int boxes,
                  std::int64_t batch, std::int64_t rois, std::int64_t out);

/// Box head (FC 1024, FC 1024, class and box outputs) on the crops; returns {class, box} ops.
std::pair<int, int> add_box_head(OpGraph& g, const MaskRcnnDims& d, int crops, std::int64_t rois);
/// Mask head (4 x 3x3 conv, 2x2/2 deconvolution, 1x1 to the classes) and the class mask picked
/// by a one-hot einsum; returns the picked masks' op.
int add_mask_head(OpGraph& g, const MaskRcnnDims& d, int crops, std::int64_t rois);

/// Training losses: box head softmax cross-entropy and the class box selected by a one-hot f32
/// matmul, mask targets on device (f32 einsums) and the mask sigmoid cross-entropy.
void add_maskrcnn_losses(OpGraph& g, const MaskRcnnDims& d, int cls, int box, int masks,
                         int sampled_rois, int mask_rois, std::int64_t batch);

/// Eval post-processing: per-class box decode, per-class top-k, tiled NMS over the classes,
/// and the top detections over all classes. Returns the detections' op.
int add_detection_postprocess(OpGraph& g, const MaskRcnnDims& d, int cls, int box,
                              std::int64_t batch, std::int64_t rois);

}  // namespace tpusim
