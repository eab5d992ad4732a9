// ResNet-50 v1.5 (MLPerf v0.7 image classification, ImageNet 224x224): stem, bottleneck stages of
// 3, 4, 6, 3 blocks (widths 64, 128, 256, 512, expansion 4, stride on the 3x3), global average
// pool, fully connected 1000; batch norm everywhere, LARS. He et al. 2016 and the MLPerf
// reference (shared reference workloads.md). The TPU submissions' space-to-depth stem is the
// default.
#include <limits>
#include <optional>

#include "core/errors.hpp"
#include "core/hardware.hpp"
#include "core/param_handle.hpp"
#include "core/params.hpp"
#include "models/builders/cnn_blocks.hpp"
#include "models/builders/cnn_checks.hpp"
#include "models/eval_ops.hpp"
#include "models/model_builder.hpp"
#include "models/ops.hpp"
#include "models/training.hpp"

namespace tpusim {
namespace {
using T = ParamType;
const char* kResnet50Model = "resnet50";

// One parameter per line reads as a table.
// clang-format off
const Param<std::int64_t> kResnet50ImageSize{{"workload.image_size", T::Integer, "pixels", 224, "height and width of the input images", 32, 1e5, {}, "workload.model", kResnet50Model}};
const Param<std::int64_t> kResnet50Classes{{"workload.classes", T::Integer, "", 1000, "classifier outputs", 2, 1e7, {}, "workload.model", kResnet50Model}};
const Param<bool> kResnet50SpaceToDepth{{"workload.space_to_depth", T::Boolean, "", true, "2x2 space-to-depth input (done by the host) and a 4x4 stride-1 stem conv instead of 7x7/2, as the TPU submissions", -kInf, kInf, {}, "workload.model", kResnet50Model}};
// clang-format on

// ImageNet's mean training image is about 469 x 387 pixels (ASSUMPTION: the figure commonly given
// for ILSVRC-2012; not in the reference pages; docs/train.md).
constexpr double kResnet50ImagenetPixels = 469.0 * 387.0;

constexpr std::int64_t kStageBlocks[] = {3, 4, 6, 3};
constexpr std::int64_t kStageWidths[] = {64, 128, 256, 512};

class ResNet50 final : public ModelBuilder {
 public:
  bool supports_spatial() const override { return true; }

  /// Training: decode, resize to the input size, flip, normalise. Evaluation (the timed-run
  /// reference page): decode, centre crop resized to the input size, normalise.
  void input_pipeline(PipelineBuilder& p, const Config& cfg, PipelinePass pass) const override {
    const double out = static_cast<double>(kResnet50ImageSize(cfg));
    p.decode(kResnet50ImagenetPixels);
    if (pass == PipelinePass::Eval) {
      p.add("center_crop_resize", host_cost::kResize, "output pixels", out * out);
    } else {
      p.add("resize", host_cost::kResize, "output pixels", out * out);
      p.add("flip", host_cost::kFlip, "pixels", out * out);
    }
    p.add("normalize", host_cost::kNormalize, "pixels", out * out);
  }

  OpGraph build(const Config& cfg, std::int64_t batch) const override {
    OpGraph g = forward(cfg, batch, BatchNormMode::CrossReplica, true);
    derive_training_graph(g, OptimizerKind::Lars, cfg);
    finish_conv_training_graph(g);
    return g;
  }

  /// The MLPerf evaluation: the forward pass with batch norm in inference form (the moving
  /// statistics: no batch statistics, no cross-replica sums), then top-1 over the classes.
  std::optional<OpGraph> build_eval(const Config& cfg, std::int64_t batch) const override {
    return forward(cfg, batch, BatchNormMode::Frozen, false);
  }

 private:
  static OpGraph forward(const Config& cfg, std::int64_t batch, BatchNormMode bn, bool training) {
    const std::int64_t size = kResnet50ImageSize(cfg);
    const std::int64_t classes = kResnet50Classes(cfg);
    const int s2d = kResnet50SpaceToDepth(cfg) ? 2 : 1;
    const std::string map_from =
        kResnet50ImageSize.path() +
        (s2d > 1 ? " with " + kResnet50SpaceToDepth.path() : std::string());
    check_spatial_split(cfg, size / s2d, size / s2d, map_from, map_from);

    OpGraph g;
    g.model = kResnet50Model;
    g.replica_batch = batch;
    CnnBlocks b(g, bn, static_cast<int>(kHwMxuDim(cfg)));
    MapRef x = b.stem({batch, size, size, 3}, s2d);
    for (int stage = 0; stage < 4; ++stage)
      for (std::int64_t i = 0; i < kStageBlocks[stage]; ++i)
        x = b.bottleneck("stage" + std::to_string(stage + 1) + "." + std::to_string(i), x,
                         kStageWidths[stage], i == 0 && stage > 0 ? 2 : 1);

    // Global average pool: per-core partial sums of its rows, all-reduced over the spatial axis;
    // the classifier and the loss then run replicated on the replica's cores.
    OpNode pool = map_op(OpKind::Pool, "head.avg_pool", x.map, 1, 1, 1);
    pool.bytes_written = static_cast<double>(batch) * x.map.channels * 4;
    pool.out_dtype = DType::F32;
    pool.partial_bytes = pool.bytes_written;
    pool.split.spatial = SplitDim::K;
    const int pooled = g.add(std::move(pool), {x.op});
    const int fc = g.add(weight_matmul("head.fc", batch, x.map.channels, classes, true), {pooled});
    // Infeed per image: the bf16 image (space-to-depth keeps its bytes) and an i32 label.
    g.infeed_bytes_per_example = static_cast<double>(size) * size * 3 * 2 + 4;
    if (!training) {
      g.add(top_k_select("head.top1", batch, classes, 1, false), {fc});
      return g;
    }
    OpNode loss = cross_entropy_loss("head.loss", batch, classes);
    loss.vpu_ops_per_element += 1;  // label smoothing 0.1 (MLPerf reference)
    g.add(std::move(loss), {fc});
    return g;
  }
};

// 65536: the MLPerf v0.7 4096-chip run (reference table).
const ModelRegistrar kResnet50Register{{kResnet50Model,
                                        65536,
                                        "images per training step over all replicas",
                                        {"spatial_w", "batch_norm_groups"}},
                                       [] { return std::make_unique<ResNet50>(); }};

}  // namespace
}  // namespace tpusim
