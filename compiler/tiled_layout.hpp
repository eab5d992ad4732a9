#pragma once
// Tiled layouts: XLA's TPU backend stores every array in tiles of its two minor dimensions,
// (8, 128) for 32-bit and (16, 128) for bf16 elements, so a dimension that is not a multiple of
// the tile is padded in HBM and in the vector unit's registers.
//
// Layout rule (stated, not fitted): a matmul result {M, N} is row-major (N minor, M second-minor);
// a feature map {N, H, W, C} keeps C minor (XLA's convolution layout) with whichever of N, H, W
// pads least as the second-minor dimension (XLA's layout assignment avoids padding where the
// convolution leaves it free to). A feature map that reaches no MXU op, directly or through
// element-wise ops (a detection head's 3 scores or 12 box deltas per anchor, read by sigmoids,
// losses and gathers), is free of the convolution's constraint: it takes whichever two of its
// dimensions, minor and second-minor, pad least, as layout assignment picks a layout for the
// vector unit's tiles (docs/memory.md).
#include <cstdint>
#include <vector>

#include "models/program.hpp"

namespace tpusim {

/// `x` rounded up to a multiple of `tile`.
double pad_to(std::int64_t x, int tile);

/// Second-minor tile rows of `dtype`: 16 for bf16, 8 for 32-bit types.
int tile_rows(DType dtype);
constexpr int kTileLanes = 128;

/// Elements `shape` occupies once padded to tiles under the layout rule above.
double padded_elements(const std::vector<std::int64_t>& shape, DType dtype, bool feature_map);

/// Elements `shape` occupies in the layout that pads least: any dimension minor (on the 128
/// lanes), any other second-minor (on the tile's rows).
double least_padded_elements(const std::vector<std::int64_t>& shape, DType dtype);

/// Padded over logical elements of an op's output (1 when its shape is unknown); `free_layout`:
/// a feature map no MXU op reads, laid out as least_padded_elements.
double padding_factor(const Op& op, bool free_layout = false);

/// Scales every compute op's output bytes, HBM writes and vector work by its padding factor,
/// and every read of a padded output by the producer's factor; records the added bytes in
/// Op::padding_bytes.
void apply_tiled_layouts(Program& program);

}  // namespace tpusim
