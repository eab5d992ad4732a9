#include "models/detection_ops.hpp"

#include <algorithm>
#include <cmath>

#include "core/errors.hpp"
#include "core/param_handle.hpp"
#include "models/ops.hpp"

namespace tpusim {
namespace {
using T = ParamType;
}  // namespace

ParamSpec nms_self_suppression_param(const char* model) {
  // Assumed: the loop ends at the first pass that changes nothing, so at least 1; one more pass
  // for chains of overlapping boxes inside a tile. No measured trip count is published.
  return {"workload.nms_self_suppression_iterations",
          T::Integer,
          "",
          2,
          "expected trip count of the data-dependent self-suppression loop per NMS tile",
          1,
          1000,
          {},
          "workload.model",
          model};
}

ParamSpec f32_matmul_precision_param(const char* model) {
  return {"workload.f32_matmul_precision",
          T::String,
          "",
          "default",
          "XLA precision of the model's f32 matmuls and einsums on the bf16 MXU: default = 1 bf16 "
          "pass, high = 3 (bf16_3x), highest = 6 (bf16_6x)",
          -kInf,
          kInf,
          {"default", "high", "highest"},
          "workload.model",
          model};
}

namespace {
// One parameter per line reads as a table.
// clang-format off
// 32 bytes: an HBM2 pseudo-channel is 64 bits wide with a burst of 4 (JESD235).
const Param<std::int64_t> kHbmAccessBytes{{"hardware.hbm.access_bytes", T::Integer, "bytes", 32, "smallest HBM transfer of one random access (true gathers and scatter-adds pay at least this per element)", 1, 1 << 20}};
// clang-format on

std::int64_t pow2_ceil(std::int64_t n) {
  std::int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

int log2_exact(std::int64_t p) {
  int l = 0;
  while ((std::int64_t{1} << l) < p) ++l;
  return l;
}

}  // namespace

DetectionCosts DetectionCosts::from_config(const Config& cfg,
                                           const std::string& f32_matmul_precision) {
  DetectionCosts c;
  c.hbm_access_bytes = static_cast<double>(kHbmAccessBytes(cfg));
  const std::string& p = f32_matmul_precision;
  c.f32_matmul_passes = p == "highest" ? 6 : p == "high" ? 3 : 1;
  return c;
}

std::int64_t bitonic_sort_stages(std::int64_t n) {
  const std::int64_t l = log2_exact(pow2_ceil(std::max<std::int64_t>(n, 1)));
  return l * (l + 1) / 2;
}

double bitonic_topk_element_stages(std::int64_t n, std::int64_t k) {
  const std::int64_t big_n = pow2_ceil(std::max<std::int64_t>(n, 1));
  const std::int64_t big_k = std::min(big_n, pow2_ceil(std::max<std::int64_t>(k, 1)));
  double total = static_cast<double>(big_n) * bitonic_sort_stages(big_k);
  const int log_k = log2_exact(big_k);
  for (std::int64_t e = big_n; e > big_k; e /= 2) total += e + e / 2.0 * log_k;
  return total;
}

OpNode top_k(std::string name, std::int64_t rows, std::int64_t n, std::int64_t k, DType key) {
  const double r = static_cast<double>(rows);
  OpNode op;
  op.name = std::move(name);
  op.kind = OpKind::TopK;
  op.dtype = key;
  op.out_dtype = key;
  op.vpu_elements = r * bitonic_topk_element_stages(n, k);
  op.vpu_ops_per_element = vpu_ops::kCompareExchange;
  const std::int64_t kept = std::min(n, k);
  op.bytes_read = r * n * dtype_bytes(key);
  op.bytes_written = r * kept * (dtype_bytes(key) + dtype_bytes(DType::I32));
  op.shapes = {{rows, n}, {rows, kept}};
  return op;
}

OpNode mxu_product(OpKind kind, std::string name, std::int64_t batch, std::int64_t m,
                   std::int64_t k, std::int64_t n, DType dtype, const DetectionCosts& costs) {
  const int passes = dtype == DType::F32 ? costs.f32_matmul_passes : 1;
  OpNode op;
  op.name = std::move(name);
  op.kind = kind;
  op.dtype = dtype;
  op.out_dtype = dtype;
  const MatmulShape useful{batch, m, k, n};
  op.matmul = MatmulShape{batch * passes, m, k, n};
  op.flops = useful.flops();
  op.bytes_read = matmul_bytes_read(useful, dtype);
  op.bytes_written = matmul_bytes_written(useful, dtype);
  if (dtype == DType::F32) {  // split of both operands into bf16 parts, once per pass
    op.vpu_elements = static_cast<double>(batch) * (m * k + k * n);
    op.vpu_ops_per_element = passes;
  }
  op.shapes = {{batch, m, k}, {batch, k, n}, {batch, m, n}};
  return op;
}

OpNode one_hot_matmul(std::string name, std::int64_t batch, std::int64_t m, std::int64_t k,
                      std::int64_t n, DType dtype, const DetectionCosts& costs) {
  OpNode op = mxu_product(OpKind::OneHotMatmul, std::move(name), batch, m, k, n, dtype, costs);
  const double b = static_cast<double>(batch);
  // The one-hot operand is built in the fusion from m indices: only the table is read.
  const double split = op.vpu_elements > 0 ? b * k * n * op.vpu_ops_per_element : 0;
  const double one_hot = b * m * k * vpu_ops::kOneHot;
  op.vpu_elements = b * m * k + (op.vpu_elements > 0 ? b * k * n : 0);
  op.vpu_ops_per_element = (one_hot + split) / op.vpu_elements;
  op.bytes_read = b * (k * n * dtype_bytes(dtype) + m * dtype_bytes(DType::I32));
  return op;
}

OpNode hbm_gather(std::string name, double rows, double row_bytes, DType dtype,
                  const DetectionCosts& costs) {
  OpNode op;
  op.name = std::move(name);
  op.kind = OpKind::Gather;
  op.dtype = op.out_dtype = dtype;
  const double accesses = std::ceil(row_bytes / costs.hbm_access_bytes);
  op.bytes_read = rows * (accesses * costs.hbm_access_bytes + dtype_bytes(DType::I32));
  op.bytes_written = rows * row_bytes;
  op.vpu_elements = rows;
  op.vpu_ops_per_element = vpu_ops::kGather;
  op.shapes = {{static_cast<std::int64_t>(rows)}};
  return op;
}

OpNode hbm_scatter_add(std::string name, double rows, double row_bytes, DType dtype,
                       const DetectionCosts& costs) {
  OpNode op = hbm_gather(std::move(name), rows, row_bytes, dtype, costs);
  const double access = std::ceil(row_bytes / costs.hbm_access_bytes) * costs.hbm_access_bytes;
  op.bytes_read = rows * (access + row_bytes + dtype_bytes(DType::I32));  // table, update, index
  op.bytes_written = rows * access;
  return op;
}

OpNode f32_vector_op(OpKind kind, std::string name, double elements, int inputs,
                     double ops_per_element, double bwd_ops_per_element) {
  OpNode op =
      vector_op(kind, std::move(name), elements, inputs, ops_per_element, bwd_ops_per_element);
  op.dtype = op.out_dtype = DType::F32;
  op.bytes_read = elements * inputs * dtype_bytes(DType::F32);
  op.bytes_written = elements * dtype_bytes(DType::F32);
  return op;
}

int add_device_loop(OpGraph& g, const OpNode& body, std::int64_t trip_count,
                    const std::vector<int>& inputs) {
  int last = inputs.empty() ? -1 : inputs.back();
  std::vector<int> ins = inputs;
  for (std::int64_t i = 0; i < trip_count; ++i) {
    OpNode it = body;
    it.name = body.name + ".iter" + std::to_string(i);
    last = g.add(std::move(it), ins);
    ins = {last};
  }
  return last;
}

int add_tiled_nms(OpGraph& g, const std::string& name, std::int64_t rows, std::int64_t boxes,
                  std::int64_t tile, std::int64_t self_iterations, int input) {
  const std::int64_t tiles = (boxes + tile - 1) / tile;
  const double block = static_cast<double>(rows) * tile * tile;
  int v = input;
  for (std::int64_t i = 0; i < tiles; ++i) {
    const std::string t = name + ".tile" + std::to_string(i);
    OpNode iou = f32_vector_op(OpKind::Elementwise, t + ".iou", block * (i + 1), 0,
                               vpu_ops::kBoxIou + vpu_ops::kSuppress, 0);
    // Reads the tile's boxes and the earlier tiles' boxes and masks; writes the tile's mask.
    iou.bytes_read = static_cast<double>(rows) * tile * (i + 1) * 5 * dtype_bytes(DType::F32);
    iou.bytes_written = static_cast<double>(rows) * tile * dtype_bytes(DType::F32);
    iou.stop_gradient = true;
    v = g.add(std::move(iou), {v});
    OpNode pass = f32_vector_op(OpKind::Elementwise, t + ".self_suppression", block, 0,
                                vpu_ops::kSuppress, 0);
    pass.bytes_read = 0;  // the tile's IoU block stays in vector memory between iterations
    pass.bytes_written = 0;
    pass.stop_gradient = true;
    v = add_device_loop(g, pass, self_iterations, {v});
  }
  return v;
}

}  // namespace tpusim
