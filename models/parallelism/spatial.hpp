#pragma once
// Spatial partitioning of convolutional models: each image is split along H over the cores of
// the "spatial" mesh axis (consecutive rows per core, neighbouring cores on the mesh).
//
// Rules (docs/cnn.md):
//  - A feature map of H rows gives every core ceil(H / degree) rows; when the degree does not
//    divide H the last cores hold padding, and when H < degree some cores hold only padding
//    (XLA's SPMD partitioner pads uneven shards the same way). Per-core shapes come from the
//    padded rows, so deep, small feature maps waste the cores.
//  - Before a window op (conv or pool with a kernel taller than 1) on a row-split map, each core
//    exchanges halos with its neighbours: two collective-permutes (+1 and -1 along "spatial",
//    open ends) of (kernel_h / 2) rows x W x C x batch elements in bf16 each. Forward: the
//    input's halo; backward input-gradient: dY's halo. The weight gradient reuses the forward's
//    halo'd input, so it exchanges nothing.
//  - Statistics (batch norm), pooled features and per-box losses are partial sums on every core
//    of the axis: the partitioner all-reduces them (OpSplit::spatial = K).
#include <cstdint>
#include <optional>

#include "models/op_graph.hpp"

namespace tpusim {

struct Layout;

/// Rows per core of `rows` rows split `degree` ways (padded).
std::int64_t rows_per_core(std::int64_t rows, int degree);

/// Per-core size of the op dimension `dim` that `degree` cores split: for an op on a feature map
/// (node.conv set) the dimension is proportional to the output rows and follows their padding;
/// otherwise ceil(dim / degree).
std::int64_t spatial_shard(const OpNode& node, std::int64_t dim, int degree);

/// Fraction of a vector op's elements one core holds (padded rows for feature maps, 1/degree
/// otherwise).
double spatial_fraction(const OpNode& node, int degree);

/// Bytes one core sends to one neighbour in a halo exchange of `rows` rows of a
/// batch x width x channels map in `dtype`.
double halo_bytes(std::int64_t rows, std::int64_t width, std::int64_t channels, std::int64_t batch,
                  DType dtype);

struct HaloExchange {
  std::int64_t rows = 0;     ///< rows sent to each neighbour
  double bytes_per_side = 0;
};

/// The halo exchange `node` needs before it runs under `layout` (none when the spatial degree is
/// 1, the node does not split rows, or its window is one row tall).
std::optional<HaloExchange> halo_exchange(const OpNode& node, const Layout& layout);

/// True for ops whose partial result is also summed over the batch-norm group (axis "bn").
bool reduces_over_bn_group(const OpNode& node);

}  // namespace tpusim
