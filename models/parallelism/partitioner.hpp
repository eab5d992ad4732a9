#pragma once
// OpGraph + Layout -> the SPMD Program every core runs.
//
// Rules (docs/workloads.md has the reasoning):
//  - Compute ops keep the graph's order (forward, backward in reverse, optimizer) with per-core
//    costs from per_core_cost().
//  - An op holding a partial result (a split reduced dimension: row-split matmuls, the
//    vocabulary-split embedding and loss, the contraction of a column-split matmul's input
//    gradient) is followed by an all-reduce over the splitting axis; its consumers wait for it.
//    Weight gradients are the exception: their sum over replica axes is the gradient sync.
//  - Gradient sync: parameters are put in buckets in the order their gradients complete; a
//    bucket is closed once it holds grad_bucket_bytes, and its all-reduce (or reduce-scatter with
//    weight-update sharding) over the replica axes is placed right after the backward op that
//    completed it, so it overlaps with the rest of the backward pass.
//  - Optimizer ops wait for their bucket. With weight-update sharding they work on 1/replicas of
//    the weights and each bucket ends with an all-gather of its bf16 weights. LAMB/LARS norms of
//    sharded weights are completed by one small all-reduce combined over all buckets.
#include "models/op_graph.hpp"
#include "models/parallelism/layout.hpp"
#include "models/program.hpp"

namespace tpusim {

/// Partitions `graph` (one replica's training step) for `layout`. The Program's mesh is
/// layout.mesh_axes(); examples_per_step is replica_batch x data replicas.
Program partition(const OpGraph& graph, const Layout& layout);

}  // namespace tpusim
