#pragma once
// Spatial partitioning of convolutional models: each image is split over the cores of the
// "spatial" mesh axis, along H, or along H and W (parallelism.spatial_w of them split W; the
// spatial group is then an (S / spatial_w) x spatial_w grid, W fastest, so W neighbours are the
// next cores and H neighbours spatial_w cores away).
//
// Rules (docs/cnn.md):
//  - A feature map of H x W gives every core ceil(H / S_h) x ceil(W / S_w) pixels; when a degree
//    does not divide the map the last cores hold padding, and when the map is smaller than the
//    degree some cores hold only padding (XLA's SPMD partitioner pads uneven shards the same
//    way). Per-core shapes come from the padded shards, so deep, small maps waste the cores.
//  - Before a window op (conv or pool with a kernel larger than 1) each core exchanges halos with
//    its neighbours: per split dimension two collective-permutes along "spatial" (shifts +d and
//    -d, d = spatial_w for H and 1 for W, open ends) of (kernel / 2) rows (or columns) of its
//    shard x C x images in bf16. Forward: the input's halo; backward input-gradient: dY's halo.
//    The weight gradient reuses the forward's halo'd input, so it exchanges nothing. (With a W
//    split, the W permute of the last core of a grid row goes to the first core of the next row:
//    one extra message per row, an over-estimate of 1 / spatial_w of the W halo traffic.)
//  - Statistics (batch norm), pooled features and per-box losses are partial sums on every core
//    of the axis: the partitioner all-reduces them (OpSplit::spatial = K).
#include <cstdint>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/param_handle.hpp"
#include "models/op_graph.hpp"

namespace tpusim {

struct Layout;

/// Rows (or columns) per core of `rows` split `degree` ways (padded).
std::int64_t rows_per_core(std::int64_t rows, int degree);

/// Per-core size of the op dimension `dim` that the spatial axis splits (`degree` cores of which
/// `degree_w` split W): for an op on a feature map (node.conv set) the dimension is proportional
/// to the output pixels and follows the padded shards; otherwise ceil(dim / degree).
std::int64_t spatial_shard(const OpNode& node, std::int64_t dim, int degree, int degree_w = 1);

/// Fraction of a vector op's elements one core holds (padded shards for feature maps,
/// 1/degree otherwise).
double spatial_fraction(const OpNode& node, int degree, int degree_w = 1);

/// Bytes one core sends to one neighbour in a halo exchange of `rows` rows of a
/// batch x width x channels map in `dtype`.
double halo_bytes(std::int64_t rows, std::int64_t width, std::int64_t channels, std::int64_t batch,
                  DType dtype);

struct HaloExchange {
  std::string dim;        ///< "" for H (ops named NAME.halo+1), "_w" for W (NAME.halo_w+1)
  int stride = 1;         ///< distance to the neighbour along the spatial axis
  std::int64_t rows = 0;  ///< rows (or columns) sent to each neighbour
  double bytes_per_side = 0;
};

/// The halo exchanges `node` needs before it runs under `layout` (none when the spatial degree
/// is 1, the node does not split a feature map, or its window is 1 along the split dimensions).
std::vector<HaloExchange> halo_exchanges(const OpNode& node, const Layout& layout);

/// True for ops whose partial result is also summed over the batch-norm group (axis "bn").
bool reduces_over_bn_group(const OpNode& node);

/// Reads parallelism.spatial_w for `layout` (spatial set): 1 when the model has no such
/// parameter. Throws ConfigError naming it when it does not divide parallelism.spatial.
int read_spatial_w(const Config& cfg, const Layout& layout);
/// parallelism.spatial_w, declared for every model whose registration names the feature
/// "spatial_w" (ModelInfo::features).
const ParamFamily<std::int64_t>& spatial_w_param();

}  // namespace tpusim
