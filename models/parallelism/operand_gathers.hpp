#pragma once
// Sharded activations (decoder_lm's model2, sequence and shard_activations layouts; docs/llm.md):
// the operands a builder marks as needed whole (OpNode::gathers, over the axes it names) are
// all-gathered before the op, and a resharding op (OpNode::all_to_all_axes) is one all-to-all.
// Ops of one pass gathering the same operand share one all-gather (a parallel block's Q/K/V and
// MLP reading one layer norm, the input and weight gradients of a row-split matmul reading one
// dY); a kept gather (K and V over the sequence axis) is shared by both passes.
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "models/parallelism/rules/sharding_rule.hpp"

namespace tpusim {

class OperandGathers {
 public:
  /// The all-gather (or sum of statistics) `gather` of op `v` needs, emitted or shared; -1 when
  /// its axes have one member or it has no bytes.
  int gather(PartitionState& s, int v, const OperandGather& gather);
  /// The graph ops whose outputs make up the gathered operand.
  static std::vector<int> sources(const OpGraph& g, int v, const OperandGather& gather);

 private:
  /// (forward pass or kept, the gathered tensors' ops, bytes per core, axes, name) -> the op.
  using Key = std::tuple<bool, std::vector<int>, double, std::vector<std::string>, std::string>;
  std::map<Key, int> emitted_;
};

}  // namespace tpusim
