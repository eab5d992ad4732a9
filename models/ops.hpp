#pragma once
// Constructors of forward OpNodes with their per-replica costs, shared by every builder, so that
// FLOPs, bytes and vector-op counts follow one set of rules (docs/workloads.md lists them).
//
// Vector-op counts per element are estimates of the VPU instructions an XLA fusion issues (one
// op per add/mul/compare/select, a few for a transcendental); they are named constants here so
// every model uses the same ones.
#include <cstdint>
#include <string>

#include "models/op_graph.hpp"

namespace tpusim {

/// Bytes per element of the two dtypes the convolution and detection builders size buffers by.
inline constexpr int kBf16Bytes = 2;
inline constexpr int kF32Bytes = 4;

namespace vpu_ops {
constexpr double kBiasAdd = 1;    ///< matmul epilogue
constexpr double kGelu = 10;      ///< tanh form: x^3, 4 mul/add, tanh, 2 mul/add
constexpr double kGeluGrad = 14;  ///< recomputes tanh, its derivative, chain rule
constexpr double kRelu = 1;
constexpr double kReluGrad = 2;  ///< compare + select
constexpr double kTanh = 4;
constexpr double kTanhGrad = 3;  ///< 1 - y^2, times dy
constexpr double kDropout = 3;   ///< random bits, compare, select-and-scale
/// Residual add + dropout + layer norm as one fusion: add, dropout (3), mean and variance
/// (2 sums, 1 square), subtract, rsqrt-multiply, gamma, beta.
constexpr double kAddDropoutLayerNorm = 12;
constexpr double kAddDropoutLayerNormGrad = 18;
constexpr double kLayerNorm = 8;
constexpr double kLayerNormGrad = 14;
/// Attention softmax with scale, mask add, max, subtract, exp, sum, divide, dropout.
constexpr double kSoftmax = 11;
constexpr double kSoftmaxGrad = 6;  ///< dropout mask, y * (dy - sum(dy * y))
/// Softmax cross-entropy over the classes: max, subtract, exp, sum, log, pick the label
/// (label smoothing adds a mean over classes: 1 more).
constexpr double kCrossEntropy = 6;
constexpr double kCrossEntropyGrad = 4;  ///< softmax - one-hot (smoothed), times the loss scale
constexpr double kGather = 1;            ///< copy through the vector unit
}  // namespace vpu_ops

/// HBM bytes of a matmul: both operands read in `in`, the result written in `out`.
double matmul_bytes_read(const MatmulShape& s, DType in);
double matmul_bytes_written(const MatmulShape& s, DType out);

/// X[m,k] x W[k,n] (+ bias[n] as an epilogue): a layer that owns k*n (+n) parameters.
OpNode weight_matmul(std::string name, std::int64_t m, std::int64_t k, std::int64_t n, bool bias);
/// `batch` products A[m,k] x B[k,n] of two activations (attention scores and context).
OpNode activation_matmul(std::string name, std::int64_t batch, std::int64_t m, std::int64_t k,
                         std::int64_t n);

/// A vector-unit op over `elements` outputs that reads `inputs` tensors of that size.
OpNode vector_op(OpKind kind, std::string name, double elements, int inputs, double ops_per_element,
                 double bwd_ops_per_element);

/// Layer norm over rows of `width` (owns gamma and beta); `inputs` 2 for a fused residual add.
OpNode layer_norm(std::string name, std::int64_t rows, std::int64_t width, int inputs,
                  double ops_per_element, double bwd_ops_per_element);

/// Gathers `rows` rows of a [table_rows, width] table that this op owns.
OpNode embedding_lookup(std::string name, std::int64_t rows, std::int64_t table_rows,
                        std::int64_t width);

/// Softmax cross-entropy of `rows` rows of `classes` logits; writes one f32 loss per row.
OpNode cross_entropy_loss(std::string name, std::int64_t rows, std::int64_t classes);

}  // namespace tpusim
