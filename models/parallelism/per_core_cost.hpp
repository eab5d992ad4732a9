#pragma once
// What one op costs on one core once the model and spatial axes have split it.
#include <string>
#include <vector>

#include "models/op_graph.hpp"
#include "models/parallelism/layout.hpp"

namespace tpusim {

/// Per-core cost of `node`: a matmul has the split dimension of its MatmulShape divided by the
/// axis degree (rounded up: padding) and its bytes, FLOPs and epilogue scaled with its operands;
/// a vector op has its elements and bytes divided by every axis that splits it. An embedding
/// split on the vocabulary still writes its full (partial, masked) output on every core.
/// `shard` further divides the op (weight-update sharding of optimizer ops).
ComputeCost per_core_cost(const OpNode& node, const Layout& layout, double shard = 1);

/// Bytes per core of the partial result `node` holds where an axis splits a reduced dimension (the
/// all-reduce that completes it; the sharding rules, models/parallelism/rules/, say which axes).
double partial_result_bytes(const OpNode& node, const Layout& layout, const ComputeCost& cost);

}  // namespace tpusim
