#pragma once
// OpGraph + Layout -> the SPMD Program every core runs.
//
// The partitioner is the driver: it walks the graph (each microbatch's forward and backward ops
// in graph order, then the optimizer) and asks the sharding rules of the layout's live axes
// (models/parallelism/rules/: data, weight_update_sharding, fsdp, bn, spatial, model, model2,
// sequence; each registered by name) what each op's sharding along their axis implies. Rules
// (docs/workloads.md and docs/llm.md have the reasoning):
//  - Compute ops keep the graph's order (forward, backward in reverse, optimizer) with per-core
//    costs from per_core_cost(). Before an op: the builder's operand gathers (operand_gathers.hpp),
//    then what each rule brings (FSDP's weight all-gathers, spatial halos).
//  - An op whose result is partial along some axes (their rules say so: a split reduced
//    dimension, e.g. row-split matmuls, the vocabulary-split embedding and loss, batch-norm
//    statistics over the bn group) is followed by one all-reduce over those axes, in rule order
//    (a reduce-scatter when the op's readers take it sharded and every such rule allows it); its
//    consumers wait for it. Weight gradients are the exception: their sum over replica axes is
//    the gradient sync.
//  - Gradient sync: parameters are put in buckets in the order their gradients complete; a
//    bucket is closed once it holds grad_bucket_bytes, and its collective(s), by the last live
//    rule that syncs gradients (data: all-reduce over the replica axes; weight-update sharding:
//    reduce-scatter; fsdp: reduce-scatter over "fsdp" every microbatch, then all-reduce over the
//    other replica axes), are placed right after the backward op that completed it, so they
//    overlap with the rest of the backward pass.
//  - Optimizer ops wait for their bucket, on the share of the weights the rules leave them
//    (1/replicas with weight-update sharding, 1/fsdp with FSDP); after each bucket's update the
//    rules may act (weight-update sharding all-gathers its bf16 weights). LAMB/LARS norms of
//    sharded weights are completed by one small all-reduce per set of shard axes, combined over
//    all buckets.
#include "models/op_graph.hpp"
#include "models/parallelism/layout.hpp"
#include "models/program.hpp"

namespace tpusim {

/// Partitions `graph` (one replica's training step) for `layout`. The Program's mesh is
/// layout.mesh_axes(); examples_per_step is replica_batch x data replicas.
Program partition(const OpGraph& graph, const Layout& layout);

}  // namespace tpusim
