#pragma once
// Building blocks shared by the convolutional builders (ResNet-50, SSD's ResNet-34 backbone,
// Mask R-CNN's ResNet-50-FPN): conv + batch norm + ReLU, bottleneck and basic residual blocks,
// the (space-to-depth) stem. Every op on a feature map is annotated for spatial partitioning:
// rows split (OpSplit::spatial = M), batch-norm statistics partial (K).
#include <cstdint>
#include <string>
#include <vector>

#include "models/conv_ops.hpp"
#include "models/op_graph.hpp"

namespace tpusim {

/// A feature map in the graph: the op producing it (-1: the input from the host) and its shape.
struct MapRef {
  int op = -1;
  FeatureMap map;
};

enum class BatchNormMode {
  CrossReplica,  ///< statistics of the batch (all-reduced over the BN group), gamma/beta trained
  /// Fixed statistics and affine parameters folded into the convolution's weights and bias
  /// (Mask R-CNN): no batch-norm op; a residual add (+ ReLU) is one element-wise op.
  Frozen,
};

class CnnBlocks {
 public:
  /// `array_dim`: the MXU side (hardware.mxu.dim) the convolutions are lowered for.
  CnnBlocks(OpGraph& g, BatchNormMode bn, int array_dim) : g_(g), bn_(bn), array_dim_(array_dim) {}

  /// Adds `op` with its rows split over the spatial axis (M); inputs < 0 (host data) are
  /// skipped. Returns its vertex.
  int add_rows(OpNode op, const std::vector<int>& inputs);

  /// conv (no bias) -> batch norm -> (+ residual) -> (ReLU).
  MapRef conv_bn(const std::string& name, const MapRef& x, std::int64_t out_channels, int kernel,
                 int stride, bool relu, ConvPadding pad = ConvPadding::Same,
                 const MapRef* residual = nullptr);
  /// A conv with bias and no norm (detection heads, FPN).
  MapRef conv(const std::string& name, const MapRef& x, std::int64_t out_channels, int kernel,
              int stride, ConvPadding pad = ConvPadding::Same);
  MapRef max_pool(const std::string& name, const MapRef& x, int kernel, int stride);
  /// An elementwise op over `map` reading the maps of `inputs`.
  MapRef elementwise(const std::string& name, const std::vector<int>& inputs, const FeatureMap& map,
                     double ops_per_element, double bwd_ops_per_element);

  /// Input normalisation, then the ResNet stem: 7x7/2 conv 64 + BN + ReLU, then 3x3/2 max pool.
  /// With `space_to_depth_block` b > 1 the host delivers the image as (H/b) x (W/b) x (C*b*b) (the
  /// TPU submissions' input pipeline) and the 7x7/2 conv becomes a ceil(7/b) x ceil(7/b) conv of
  /// stride 2/b on it.
  MapRef stem(const FeatureMap& image, int space_to_depth_block);
  /// ResNet v1.5 bottleneck: 1x1 width, 3x3 width (stride here), 1x1 4*width, projection
  /// shortcut when the shape changes; residual add and ReLU fused into the last BN.
  MapRef bottleneck(const std::string& name, const MapRef& x, std::int64_t width, int stride);
  /// ResNet-34 basic block: 3x3, 3x3, projection shortcut when the shape changes.
  MapRef basic_block(const std::string& name, const MapRef& x, std::int64_t width, int stride);

  int array_dim() const { return array_dim_; }

 private:
  OpGraph& g_;
  BatchNormMode bn_;
  int array_dim_;
};

}  // namespace tpusim
