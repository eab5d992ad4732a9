#pragma once
// What the partitioner records on each Program op for the compiler stage (compiler/): how the
// op may fuse and the per-core shape of its output (for the tiled layouts).
#include <cstdint>
#include <vector>

#include "models/op_graph.hpp"
#include "models/parallelism/layout.hpp"

namespace tpusim {

/// MXU ops (matmuls, convolutions, one-hot matmuls) fuse as roots; vector ops (element-wise,
/// layer norm, softmax, pooling, batch-norm apply and its gradient) as loop members; batch-norm
/// statistics and their gradient sums as reductions; embeddings, gathers, sorting, losses and
/// optimizer updates never fuse.
FusionRole fusion_role_of(const OpNode& n);

/// The per-core output shape of `n` under `layout`: {N, H, W, C} for an op on a feature map (the
/// output map for forward ops, the input map for an input gradient; padded spatial shards),
/// {M, N} for other matmuls, empty otherwise (weight gradients of convolutions, statistics,
/// ops without a shape). `matmul` is the op's per-core matmul, if any.
std::vector<std::int64_t> per_core_out_shape(const OpNode& n, const Layout& layout,
                                             const std::optional<MatmulShape>& matmul,
                                             bool* feature_map);

}  // namespace tpusim
