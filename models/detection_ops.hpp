#pragma once
// Op classes of the detection models beyond convolutions (docs/detection.md): sorting and top-k
// as bitonic networks on the vector unit, device loops whose iterations are separate device
// steps, gathers written as one-hot matmuls on the MXU against true gathers and scatter-adds
// (HBM-bound, one memory access per element), f32 matmuls on the bf16 MXU as several passes,
// and f32 element-wise work. Each is a forward OpNode constructor (costs per replica, like
// models/ops.hpp) whose cost follows from the shapes and a few hardware parameters.
#include <cstdint>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/params.hpp"
#include "models/op_graph.hpp"

namespace tpusim {

namespace vpu_ops {
/// One compare-exchange of a bitonic stage, per element: bring the partner element (a lane or
/// sublane permute), compare, select the key and select its index (keys travel with indices).
constexpr double kCompareExchange = 4;
/// IoU of two boxes: 4 min/max, 2 subtracts and a multiply for the intersection, the union
/// (2 adds), a divide and the threshold compare.
constexpr double kBoxIou = 11;
/// One pass of a suppression step: mask multiply, max-reduce, compare.
constexpr double kSuppress = 3;
/// Building a one-hot operand: iota compare and select.
constexpr double kOneHot = 2;
}  // namespace vpu_ops

/// Hardware and compiler facts the detection op classes read (declared in detection_ops.cpp).
struct DetectionCosts {
  /// bf16 MXU passes of one f32 x f32 product: XLA's PrecisionConfig DEFAULT = 1 (operands
  /// rounded to bf16), HIGH = 3 (bf16_3x), HIGHEST = 6 (bf16_6x); jax.lax.Precision docs.
  int f32_matmul_passes = 1;
  /// Smallest HBM transfer of one random access (an HBM2 pseudo-channel burst, JESD235).
  double hbm_access_bytes = 32;
  /// hardware.hbm.access_bytes from `cfg`; the passes from `f32_matmul_precision`, the value of
  /// the model's workload.f32_matmul_precision (default, high, highest).
  static DetectionCosts from_config(const Config& cfg,
                                    const std::string& f32_matmul_precision = "default");
};

/// The declarations a detection model makes for itself (its Param handles, when_value `model`):
/// workload.nms_self_suppression_iterations and workload.f32_matmul_precision.
ParamSpec nms_self_suppression_param(const char* model);
ParamSpec f32_matmul_precision_param(const char* model);

/// Stages of a bitonic sorting network over n elements (n padded to a power of two N):
/// log2 N (log2 N + 1) / 2.
std::int64_t bitonic_sort_stages(std::int64_t n);
/// Element-stages (elements touched summed over the stages) of the bitonic top-k of
/// Shanbhag, Pirk and Madden (SIGMOD 2018) for the k largest of n: sort blocks of K = pow2(k)
/// (N x stages(K)), then log2(N / K) rounds that merge pairs of blocks keeping the top K (one
/// stage over the current E elements) and rebuild the kept blocks (log2 K stages over E / 2);
/// E halves every round. k >= n is a full sort: N x stages(N).
double bitonic_topk_element_stages(std::int64_t n, std::int64_t k);

/// Top-k (k < n) or a full sort (k >= n) of `rows` rows of n keys of `key` dtype, with their
/// i32 indices, on the vector unit: bitonic_topk_element_stages x kCompareExchange vector ops;
/// reads keys once, writes k keys and indices.
OpNode top_k(std::string name, std::int64_t rows, std::int64_t n, std::int64_t k, DType key);

/// A product on the MXU of `batch` [m,k] x [k,n] in `dtype`. An f32 product runs
/// costs.f32_matmul_passes bf16 passes: MatmulShape::batch is multiplied by the passes (each pass
/// is an independent bf16 product: hi x hi, hi x lo, lo x hi, ...), FLOPs stay the useful ones,
/// and the operands are split into bf16 parts on the vector unit (1 op per element and pass).
/// Operands are read and the result written in `dtype`. Owns no weights.
OpNode mxu_product(OpKind kind, std::string name, std::int64_t batch, std::int64_t m,
                   std::int64_t k, std::int64_t n, DType dtype, const DetectionCosts& costs);
/// A gather or selection written as a one-hot matmul (OpKind::OneHotMatmul): the [m,k] one-hot
/// operand is built on the vector unit inside the fusion (kOneHot per element, never written to
/// HBM), then multiplied with the [k,n] table; reads the table and m indices, writes [m,n].
OpNode one_hot_matmul(std::string name, std::int64_t batch, std::int64_t m, std::int64_t k,
                      std::int64_t n, DType dtype, const DetectionCosts& costs);

/// A true gather of `rows` rows of `row_bytes` (OpKind::Gather): every row is its own HBM
/// access of at least costs.hbm_access_bytes (rounded up to whole accesses), plus the i32 indices;
/// the gathered rows (of `dtype` elements) are written densely.
OpNode hbm_gather(std::string name, double rows, double row_bytes, DType dtype,
                  const DetectionCosts& costs);
/// A scatter-add of `rows` rows of `row_bytes` into a table: a read-modify-write of at least one
/// access per row, plus reading the dense updates and the indices.
OpNode hbm_scatter_add(std::string name, double rows, double row_bytes, DType dtype,
                       const DetectionCosts& costs);

/// An element-wise op over `elements` f32 values reading `inputs` f32 tensors of that size and
/// writing one (the large f32 work of detection: box decoding, IoU, f32 batch norm).
OpNode f32_vector_op(OpKind kind, std::string name, double elements, int inputs,
                     double ops_per_element, double bwd_ops_per_element);

/// A device loop: `trip_count` iterations of `body`, each a separate device step (its own launch,
/// hence its own op overhead), chained after `inputs`. Iterations are named NAME.iter<i>;
/// `stop_gradient` as the body's. Returns the last iteration's vertex (the inputs' last when
/// trip_count is 0).
int add_device_loop(OpGraph& g, const OpNode& body, std::int64_t trip_count,
                    const std::vector<int>& inputs);

/// Tiled parallel NMS as the TPU detection code runs it, on `rows` independent problems (images,
/// or images x classes) of `boxes` candidates padded up to whole tiles of `tile`, in f32: an outer
/// device loop over the tiles, where tile i computes the IoU of its boxes against the i earlier
/// tiles and itself ((i + 1) blocks of tile x tile, kBoxIou each, then one suppression pass), and
/// then a self-suppression loop of `self_iterations` (the expected trip count of a
/// data-dependent loop) passes over its own block (kSuppress each). Every iteration of either
/// loop is a device step. Returns the last op's vertex.
int add_tiled_nms(OpGraph& g, const std::string& name, std::int64_t rows, std::int64_t boxes,
                  std::int64_t tile, std::int64_t self_iterations, int input);

}  // namespace tpusim
