// SSD (MLPerf v0.7 object detection, COCO 300x300): ResNet-34 backbone up to its conv4 stage with
// that stage's stride set to 1 (38x38x256), five extra blocks (1x1 then 3x3 conv, BN, ReLU) to
// 19x19x512, 10x10x512, 5x5x256, 3x3x256, 1x1x256; on each of the six maps a 3x3 class conv
// (boxes x 81) and a 3x3 box conv (boxes x 4) with 4, 6, 6, 6, 4, 4 default boxes per location:
// 8732 boxes. Loss: softmax cross-entropy + smooth L1 per box, hard negative mining 3:1 (a
// top-k over the boxes of each image). SGD with momentum. Liu et al. 2016 and the MLPerf v0.7
// reference ssd300 (shared reference workloads.md). Default-box matching is done by the input
// pipeline on the host (as in the TPU submission), so it has no device op.
#include <cmath>
#include <limits>

#include "core/errors.hpp"
#include "core/params.hpp"
#include "models/builders/cnn_blocks.hpp"
#include "models/builders/cnn_checks.hpp"
#include "models/builders/ssd_layout.hpp"
#include "models/model_builder.hpp"
#include "models/ops.hpp"
#include "models/training.hpp"

namespace tpusim {
namespace {
using T = ParamType;
constexpr double kInf = std::numeric_limits<double>::infinity();
const char* kModel = "ssd";

// One parameter per line reads as a table.
// clang-format off
const ParamRegistrar kParams{{
    // 4096: the MLPerf v0.7 4096- and 2048-chip runs (reference table).
    {"workload.global_batch", T::Integer, "images", 4096, "images per training step over all replicas", 1, 1e9, {}, "workload.model", kModel},
    {"workload.image_size", T::Integer, "pixels", 300, "height and width of the input images", 64, 1e5, {}, "workload.model", kModel},
    {"workload.classes", T::Integer, "", 81, "object classes including background", 2, 1e5, {}, "workload.model", kModel},
    {"workload.space_to_depth", T::Boolean, "", true, "2x2 space-to-depth input (done by the host) and a 4x4 stride-1 first conv instead of 7x7/2", -kInf, kInf, {}, "workload.model", kModel},
}};
// clang-format on

// Extra blocks after the backbone: 1x1 conv to `mid`, 3x3 conv to `out` (stride 2 'same', or
// stride 1 'valid' for the last two), each with BN and ReLU.
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

class Ssd final : public ModelBuilder {
 public:
  bool supports_spatial() const override { return true; }

  OpGraph build(const Config& cfg, std::int64_t batch) const override {
    const std::int64_t size = cfg.integer("workload.image_size");
    const std::int64_t classes = cfg.integer("workload.classes");
    const int s2d = cfg.boolean("workload.space_to_depth") ? 2 : 1;
    check_spatial_split(cfg, size / s2d, size / s2d, "workload.image_size");
    if (ssd_feature_map_sizes(size).back() < 1)
      throw ConfigError("workload.image_size", std::to_string(size) +
                                                   " pixels leave no 1x1 last feature map; "
                                                   "allowed: 257 or more");

    OpGraph g;
    g.model = kModel;
    g.replica_batch = batch;
    CnnBlocks b(g, BatchNormMode::CrossReplica, static_cast<int>(cfg.integer("hardware.mxu.dim")));
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
      MapRef y = b.conv_bn(p + ".conv1x1", maps.back(), kExtras[e].mid, 1, 1, true);
      maps.push_back(
          b.conv_bn(p + ".conv3x3", y, kExtras[e].out, 3, kExtras[e].stride, true, kExtras[e].pad));
    }

    std::vector<int> head_outputs;
    for (std::size_t i = 0; i < maps.size(); ++i) {
      const std::int64_t boxes = kSsdBoxesPerLocation[i];
      const std::string p = "head." + std::to_string(i);
      head_outputs.push_back(b.conv(p + ".class", maps[i], boxes * classes, 3, 1).op);
      head_outputs.push_back(b.conv(p + ".box", maps[i], boxes * 4, 3, 1).op);
    }

    // Per-box losses on each core's rows (partial: each box lives on one core), all-reduced so
    // every core can mine hard negatives over the whole image; then the mining top-k and sums.
    const std::int64_t boxes = ssd_default_boxes(size);
    const double per_box = static_cast<double>(batch) * boxes;
    const double ops = (classes * vpu_ops::kCrossEntropy + 4 * vpu_ops::kSmoothL1) /
                       static_cast<double>(classes + 4);
    const double bwd = (classes * vpu_ops::kCrossEntropyGrad + 4 * vpu_ops::kSmoothL1Grad) /
                       static_cast<double>(classes + 4);
    OpNode box_loss =
        vector_op(OpKind::Elementwise, "loss.per_box", per_box * (classes + 4), 1, ops, bwd);
    box_loss.out_dtype = DType::F32;
    box_loss.bytes_written = per_box * 4;
    box_loss.partial_bytes = box_loss.bytes_written;
    box_loss.split.spatial = SplitDim::K;
    box_loss.shapes = {{batch, boxes, classes + 4}, {batch, boxes}};
    const int per_box_v = g.add(std::move(box_loss), head_outputs);
    // Hard negative mining: a sort-based top-k of the negatives per image (about 2 log2(boxes)
    // compare-selects per box), then the masked sums.
    const double mining_ops = 2 * std::log2(static_cast<double>(boxes)) + 2;
    OpNode mining = vector_op(OpKind::Loss, "loss.hard_negative_mining", per_box, 1, mining_ops, 2);
    mining.out_dtype = DType::F32;
    mining.bytes_read = per_box * 4;
    mining.bytes_written = 4;
    g.add(std::move(mining), {per_box_v});

    // Infeed per image: the bf16 image and the host-encoded targets of every default box (4 f32
    // box offsets and an i32 class), plus the matched-box count.
    g.infeed_bytes_per_example = static_cast<double>(size) * size * 3 * 2 + boxes * 5.0 * 4 + 4;
    derive_training_graph(g, OptimizerKind::Sgd);
    finish_conv_training_graph(g);
    return g;
  }
};

const ModelRegistrar kRegister{kModel, [] { return std::make_unique<Ssd>(); }};

}  // namespace
}  // namespace tpusim
