#pragma once
// From a forward graph to a training step: backward derived op by op, and the optimizer.
#include "core/config.hpp"
#include "core/param_handle.hpp"
#include "models/op_graph.hpp"

namespace tpusim {

enum class OptimizerKind {
  Adam,  ///< two f32 moments per weight
  Lamb,  ///< Adam moments, then a per-tensor trust ratio ||w|| / ||update||
  Lars,  ///< momentum, per-tensor trust ratio ||w|| / ||g||
  Sgd,   ///< momentum SGD
};
const char* to_string(OptimizerKind k);

/// What the backward pass recomputes instead of keeping from the forward pass.
enum class RematPolicy {
  None,       ///< keep every activation
  Full,       ///< every layer (OpGraph::begin_layer) from its input
  Attention,  ///< the ops of each layer marked OpNode::selective_remat
  Named,      ///< per layer op, its OpNode::remat_action (MaxText's policies, decoder_lm)
};

/// Appends to a forward-only graph, in this order:
///  - the backward ops, walking the forward ops in reverse. A matmul Y = A x B gives dA = dY x B^T
///    and dB = A^T x dY (for a weight, a gradient matmul with f32 output); a vector op gives a
///    vector op over the same elements with its bwd_vpu_ops_per_element; an embedding lookup
///    gives a scatter-add into a dense f32 table gradient. Only inputs that lead back to
///    parameters get gradients. Splits map through (a column split of Y = X W becomes a split of
///    the contracted dimension of dX = dY W^T, hence an all-reduce there).
///  - the optimizer: for every op owning parameters, one update op (LAMB and LARS: an op that
///    computes moments and partial norms, whose norms are reduced over the weight's shards, then
///    an apply op).
/// Returns nothing; the new ops' forward_of / weight_grad / param_owner links say what they are.
///
/// With `rematerialize`, every layer (OpGraph::begin_layer) is recomputed from its inputs right
/// before its backward ops, which then read the recomputed tensors: the forward pass keeps only
/// the tensors crossing layer boundaries, at the cost of a second forward pass of each layer.
void derive_training_graph(OpGraph& g, OptimizerKind optimizer, bool rematerialize = false);
/// The same with a policy: Full is `rematerialize`; Attention recomputes, per layer, only the ops
/// marked OpNode::selective_remat (from the kept tensors they read); Named recomputes the layer
/// ops whose remat_action is Recompute and fetches those it offloads (a copy from host memory,
/// `NAME.fetch`, that writes the tensor back into HBM right before the layer's backward ops).
void derive_training_graph(OpGraph& g, OptimizerKind optimizer, RematPolicy remat);
/// The same, with rematerialize read from the study's workload.rematerialize.
void derive_training_graph(OpGraph& g, OptimizerKind optimizer, const Config& cfg);

/// workload.rematerialize (every model's; decoder_lm refuses it for its workload.remat).
extern const Param<bool> kRematerialize;

/// Vector ops per weight element and HBM bytes per weight of one optimizer op.
struct OptimizerOpCost {
  double ops_per_element = 0;
  double bytes_read_per_param = 0;
  double bytes_written_per_param = 0;
  double out_bytes_per_param = 0;  ///< of those, the output the next phase reads (not in place)
};

/// f32 state slots per weight: momentum 1 (SGD, LARS), Adam and LAMB 2 moments.
int optimizer_slots(OptimizerKind k);

}  // namespace tpusim
