#pragma once
// Forward OpNodes of convolutional models (docs/cnn.md lists the rules):
//  - a convolution is lowered to MXU matmuls over groups of kernel taps: for each group an
//    [N*Ho*Wo, taps_in_group*Cin] x [taps_in_group*Cin, Cout] product accumulates into the
//    output. With Cin >= the array side (128) a group is one tap (input channels padded to the
//    array); with fewer channels floor(128 / Cin) taps share the array's rows (XLA packs the
//    kernel window into the contraction), i.e. k = Kh*Kw*Cin padded per group. The MXU model
//    pads k and n to the array, so small channel counts waste it (Cout 64 uses half the
//    columns; a 1x1 conv from 64 channels half the rows);
//  - HBM traffic is what a fused conv moves (input + weights read, output written), not the
//    im2col matrix;
//  - batch norm is two vector ops: statistics (a partial sum per channel, reduced over the
//    spatial partition and the BN group) and apply (normalise, scale, shift, fused ReLU and
//    residual add);
//  - pooling and upsampling on the vector unit.
// Every op on a feature map carries its ConvShape so the spatial partitioner knows its rows.
#include <cstdint>
#include <string>

#include "models/op_graph.hpp"

namespace tpusim {

namespace vpu_ops {
constexpr double kBnStats = 3;      ///< x, x^2 accumulated (f32)
constexpr double kBnStatsGrad = 4;  ///< sum(dy), sum(dy * x_hat)
constexpr double kBnApply = 4;      ///< subtract mean, times rsqrt(var), gamma, beta
constexpr double kBnApplyGrad = 5;  ///< dy * gamma * rsigma - mean terms
constexpr double kResidualAdd = 1;
constexpr double kUpsampleAdd = 1;  ///< nearest-neighbour 2x upsample fused into the add
constexpr double kSmoothL1 = 5;     ///< difference, abs, compare, select, sum
constexpr double kSmoothL1Grad = 3;
constexpr double kSigmoidCrossEntropy = 6;
constexpr double kSigmoidCrossEntropyGrad = 3;
constexpr double kBilinearSample = 16;  ///< ROI align: 4 corners x (weight, multiply, add) + index
}  // namespace vpu_ops

/// An activation of a convolutional net: N images of H x W x C.
struct FeatureMap {
  std::int64_t batch = 1, height = 0, width = 0, channels = 0;
  double elements() const { return static_cast<double>(batch) * height * width * channels; }
};

enum class ConvPadding { Same, Valid };

/// Output size of a convolution or pooling window along one dimension.
std::int64_t conv_out_size(std::int64_t in, int kernel, int stride, ConvPadding pad);

/// Kernel taps lowered into one MXU pass for `in_channels` inputs on an array of `array_dim`.
std::int64_t taps_per_pass(std::int64_t in_channels, std::int64_t taps, int array_dim);

/// A convolution of `in` with a kernel x kernel window and `out_channels` filters (no bias
/// unless `bias`) for an MXU of `array_dim`; owns its weights. Sets op.conv and the lowered
/// op.matmul.
OpNode conv2d(std::string name, const FeatureMap& in, std::int64_t out_channels, int kernel,
              int stride, int array_dim, ConvPadding pad = ConvPadding::Same, bool bias = false);

/// The output feature map of a conv2d or pooling node.
FeatureMap output_of(const OpNode& conv_or_pool);

/// The geometry of an elementwise op on `map` (kernel 1, input = output).
ConvShape map_geometry(const FeatureMap& map);

/// Batch-norm statistics of `map` (fused with its producer: no HBM read), 2 x C f32 partial
/// sums. Its partial_bytes are those sums: the cross-replica BN all-reduce.
OpNode batch_norm_stats(std::string name, const FeatureMap& map);
/// Normalise + gamma/beta (+ `inputs`-1 residual adds) (+ ReLU); owns gamma and beta.
OpNode batch_norm_apply(std::string name, const FeatureMap& map, bool relu, int inputs = 1);
/// Max pool with a kernel x kernel window.
OpNode max_pool(std::string name, const FeatureMap& in, int kernel, int stride,
                ConvPadding pad = ConvPadding::Same);
/// An elementwise op over `map` reading `inputs` maps of that size.
OpNode map_op(OpKind kind, std::string name, const FeatureMap& map, int inputs,
              double ops_per_element, double bwd_ops_per_element);

/// After derive_training_graph: gives every backward op of a convolution the HBM traffic of a
/// fused conv (the generic matmul rule would charge the im2col matrix) and copies the feature
/// map geometry onto the backward ops of vector ops, so spatial partitioning sees their rows.
void finish_conv_training_graph(OpGraph& g);

}  // namespace tpusim
