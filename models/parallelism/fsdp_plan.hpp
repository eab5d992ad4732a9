#pragma once
// Where fully sharded data parallelism gathers weights: which owner's whole (gathered) weights
// each op of the step reads, and the segments of the program (runs of ops of one layer, or
// outside the layers) that the partitioner gathers for in one all-gather each, one segment ahead
// (models/parallelism/rules/fsdp_axis.cpp, docs/llm.md).
#include <vector>

#include "models/op_graph.hpp"

namespace tpusim {

struct FsdpPlan {
  std::vector<int> owner_read;  ///< per graph op: the owner whose weights it reads, or -1
  std::vector<int> segment;     ///< per graph op of the step: its segment (-1: optimizer op)
  std::vector<std::vector<int>> owners_of_segment;  ///< owners each segment reads, first use first
  std::vector<Phase> segment_phase;
};

/// The plan of `g`'s step ops in graph order. Weights are read by forward ops that own them (or
/// are tied to them), their recomputed copies, and backward ops other than pure weight
/// gradients (a matmul's input gradient reads W; a layer norm's gradient reads its scale).
FsdpPlan plan_fsdp(const OpGraph& g);

}  // namespace tpusim
