// Closed-form checks of the detection op classes (models/detection_ops.hpp) through the
// TensorCore cost model: each expectation is derived from the shapes and hardware parameters.
#include <catch2/catch.hpp>

#include "core/config.hpp"
#include "models/builders/maskrcnn_parts.hpp"
#include "models/detection_ops.hpp"
#include "models/parallelism/layout.hpp"
#include "models/parallelism/per_core_cost.hpp"
#include "sim/core/tensor_core_cost.hpp"

using namespace tpusim;

namespace {
HardwareSpec detection_hw() {
  return HardwareSpec::from_config(load_config(nlohmann::json::object()));
}
OpTiming timing(const HardwareSpec& hw, const OpNode& n) {
  return compute_op_time(hw, per_core_cost(n, Layout{}));
}
double vpu_seconds(const HardwareSpec& hw, double elements, double ops) {
  return std::ceil(elements / (hw.vpu_lanes * hw.vpu_sublanes)) * ops / hw.clock_hz;
}
}  // namespace

TEST_CASE("bitonic sort: log2 N (log2 N + 1) / 2 compare-exchange stages over N = pow2(n)") {
  CHECK(bitonic_sort_stages(8) == 6);
  CHECK(bitonic_sort_stages(1000) == 55);  // padded to 1024: 10 x 11 / 2
  CHECK(bitonic_sort_stages(1) == 0);
  // A full sort touches every element in every stage.
  CHECK(bitonic_topk_element_stages(1100, 1100) == 2048.0 * bitonic_sort_stages(2048));
  CHECK(bitonic_topk_element_stages(1100, 5000) == 2048.0 * bitonic_sort_stages(2048));
}

TEST_CASE("bitonic top-k: block sorts, then merge-and-halve rounds") {
  // n = 8, k = 2: blocks of 2 sorted in 1 stage over 8 elements; round 1: 8 + 4 x 1; round 2:
  // 4 + 2 x 1; then one block of 2 is left.
  CHECK(bitonic_topk_element_stages(8, 2) == 8 + 12 + 6);
  // General: N stages(K) + sum over rounds of E + E/2 log2 K, E = N, N/2, ..., 2K.
  const double n = 262144, k = 2048;  // a Mask R-CNN level: 209664 anchors padded, k = 2000
  double expect = n * bitonic_sort_stages(2048);
  for (double e = n; e > k; e /= 2) expect += e + e / 2 * 11;
  CHECK(bitonic_topk_element_stages(209664, 2000) == expect);
  // Top-k of a small k is far cheaper than the full sort.
  CHECK(bitonic_topk_element_stages(209664, 2000) < 0.5 * bitonic_topk_element_stages(209664, 1e6));
}

TEST_CASE("top-k op: element-stages x 4 vector ops, keys read once, k keys and indices written") {
  const auto hw = detection_hw();
  const OpNode op = top_k("t", 2, 209664, 2000, DType::F32);
  CHECK(op.kind == OpKind::TopK);
  const double es = 2 * bitonic_topk_element_stages(209664, 2000);
  const auto t = timing(hw, op);
  CHECK(t.vpu.seconds() == Approx(vpu_seconds(hw, es, vpu_ops::kCompareExchange)).epsilon(1e-6));
  CHECK(op.bytes_read == 2.0 * 209664 * 4);
  CHECK(op.bytes_written == 2.0 * 2000 * (4 + 4));
}

TEST_CASE("f32 matmul on the bf16 MXU: passes x the bf16 tile work, same useful FLOPs") {
  const auto hw = detection_hw();
  for (const auto& [precision, passes] :
       std::vector<std::pair<std::string, int>>{{"default", 1}, {"high", 3}, {"highest", 6}}) {
    const Config cfg =
        load_config({{"workload", {{"model", "maskrcnn"}, {"f32_matmul_precision", precision}}}});
    // The precision as Mask R-CNN reads it (its own workload.f32_matmul_precision).
    const DetectionCosts costs = MaskRcnnDims::from_config(cfg).costs;
    REQUIRE(costs.f32_matmul_passes == passes);
    // 2 products of [1024,128] x [128,128]: 2 tiles of 1024 cycles of passes each per bf16 pass,
    // spread over the 2 MXUs, plus one fill and drain.
    const OpNode f32 = mxu_product(OpKind::Matmul, "m", 2, 1024, 128, 128, DType::F32, costs);
    const double cycles = std::ceil(2.0 * passes / hw.mxu.count) * 1024 + hw.mxu.fill_drain_cycles;
    CHECK(timing(hw, f32).mxu.seconds() ==
          Approx(cycles / hw.mxu_efficiency / hw.clock_hz).epsilon(1e-6));
    CHECK(f32.flops == 2.0 * 2 * 1024 * 128 * 128);
    CHECK(f32.bytes_read == 2.0 * (1024 * 128 + 128 * 128) * 4);
  }
  // bf16 operands take one pass whatever the precision.
  const Config hi =
      load_config({{"workload", {{"model", "maskrcnn"}, {"f32_matmul_precision", "highest"}}}});
  const OpNode bf16 = mxu_product(OpKind::Matmul, "m", 2, 1024, 128, 128, DType::BF16,
                                  MaskRcnnDims::from_config(hi).costs);
  CHECK(bf16.matmul->batch == 2);
}

TEST_CASE("one-hot gather on the MXU: the table is read, the one-hot operand is built in place") {
  const auto hw = detection_hw();
  const DetectionCosts costs;  // 1 pass, 32-byte accesses
  // Sampling 512 of 1100 candidates' 8 f32 attributes per image, 2 images.
  const OpNode op = one_hot_matmul("g", 2, 512, 1100, 8, DType::F32, costs);
  CHECK(op.kind == OpKind::OneHotMatmul);
  CHECK(op.bytes_read == 2.0 * (1100 * 8 * 4 + 512 * 4));
  CHECK(op.bytes_written == 2.0 * 512 * 8 * 4);
  // MXU: k = 1100 -> 9 weight tiles per product, n = 8 -> 1; 512 rows = 64 passes of 8 cycles.
  const double cycles = std::ceil(2.0 * 9 / hw.mxu.count) * 512 + hw.mxu.fill_drain_cycles;
  CHECK(timing(hw, op).mxu.seconds() ==
        Approx(cycles / hw.mxu_efficiency / hw.clock_hz).epsilon(1e-6));
  // Vector work: the one-hot [512, 1100] (2 ops each) and the f32 table's bf16 split (1 op).
  CHECK(op.vpu_elements * op.vpu_ops_per_element ==
        Approx(2.0 * (512 * 1100 * vpu_ops::kOneHot + 1100 * 8)));
}

TEST_CASE("true gather and scatter-add: one HBM access of at least the burst per element") {
  const auto hw = detection_hw();
  const DetectionCosts costs;
  REQUIRE(costs.hbm_access_bytes == 32);
  // 4000 rows of 16 bytes (a box in f32): each a 32-byte access plus its i32 index.
  const OpNode g = hbm_gather("g", 4000, 16, DType::F32, costs);
  CHECK(g.bytes_read == 4000.0 * (32 + 4));
  CHECK(g.bytes_written == 4000.0 * 16);
  CHECK(timing(hw, g).hbm.seconds() ==
        Approx(hw.hbm_latency.seconds() +
               4000.0 * (36 + 16) / (hw.hbm_bandwidth_per_core.bytes_per_s() * hw.hbm_efficiency))
            .epsilon(1e-6));
  // Rows of 40 bytes need 2 accesses each.
  CHECK(hbm_gather("g", 10, 40, DType::F32, costs).bytes_read == 10.0 * (64 + 4));
  // Scatter-add: read-modify-write of the table row, plus the update and the index.
  const OpNode s = hbm_scatter_add("s", 4000, 16, DType::F32, costs);
  CHECK(s.bytes_read == 4000.0 * (32 + 16 + 4));
  CHECK(s.bytes_written == 4000.0 * 32);
}

TEST_CASE("f32 element-wise work moves 4 bytes per element and input") {
  const OpNode op = f32_vector_op(OpKind::Elementwise, "decode", 1e6, 2, 6, 0);
  CHECK(op.bytes_read == 8e6);
  CHECK(op.bytes_written == 4e6);
  CHECK(op.dtype == DType::F32);
}

TEST_CASE("device loop: T iterations, each its own device step paying the launch") {
  const auto hw = detection_hw();
  OpGraph g;
  const int in = g.add(f32_vector_op(OpKind::Elementwise, "in", 1024, 1, 1, 0));
  OpNode body = f32_vector_op(OpKind::Elementwise, "mining.step", 4 * 8732, 0, 2, 0);
  body.bytes_written = 0;  // a compare-and-reduce whose operand stays in vector memory
  const int last = add_device_loop(g, body, 31, {in});
  CHECK(g.size() == 32);
  CHECK(last == 31);
  double total = 0;
  for (int v = 1; v < g.size(); ++v) {
    REQUIRE(g.inputs(v) == std::vector<int>{v - 1});  // iterations run one after the other
    total += timing(hw, g.node(v)).total.seconds();
  }
  // T x (body + launch): the body is vector-bound (no bytes).
  CHECK(total == Approx(31 * (vpu_seconds(hw, 4 * 8732, 2) + hw.op_overhead.seconds())));
  CHECK(add_device_loop(g, body, 0, {in}) == in);
}

TEST_CASE("tiled NMS: tile i computes i + 1 IoU blocks, then the self-suppression loop") {
  OpGraph g;
  const int in = g.add(f32_vector_op(OpKind::Elementwise, "boxes", 2048, 1, 1, 0));
  // 2 images of 2000 boxes padded to 4 tiles of 512, 2 self-suppression passes per tile.
  add_tiled_nms(g, "nms", 2, 2000, 512, 2, in);
  CHECK(g.size() == 1 + 4 * (1 + 2));
  double iou = 0, passes = 0;
  for (int v = 1; v < g.size(); ++v) {
    const OpNode& n = g.node(v);
    CHECK(n.stop_gradient);
    if (n.name.find(".iou") != std::string::npos)
      iou += n.vpu_elements;
    else
      passes += n.vpu_elements;
  }
  CHECK(iou == 2.0 * 512 * 512 * (1 + 2 + 3 + 4));
  CHECK(passes == 2.0 * 512 * 512 * 4 * 2);
}
