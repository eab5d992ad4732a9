// The routed experts of a mixture-of-experts decoder layer (docs/experts.md), as MaxText's
// MoE block (MaxText/layers/moe.py) runs them on TPUs:
//
//   router      [T, d_model] x [d_model, E], softmax and top-k on the vector unit;
//   dropless    (moe_dispatch = dropless, MaxText's megablox / sparse_matmul): the T x k
//               assignments sorted by expert, the tokens permuted into that order, one grouped
//               matmul over ragged groups per expert matrix, the outputs unpermuted and summed
//               with their router weights; nothing padded, nothing dropped;
//   capacity    (moe_dispatch = capacity, GShard's einsums with capacity_factor): a one-hot
//               [T, E x C] dispatch tensor, an einsum that gathers each expert's C rows, the
//               experts on [E, C, d_model], a combine tensor of router weights and an einsum
//               back; tokens past an expert's capacity are dropped (they keep the residual).
//
// An expert axis (parallelism.expert = e) holds E / e experts per device: the tokens travel to
// their experts by an all-to-all over "expert" before the expert MLP and back by another after
// it; the backward pass runs both again, reversed (models/training.cpp). The experts' matrices
// split over the model axis as the dense MLP's do (d_ff).
#include <algorithm>
#include <cmath>

#include "models/builders/decoder_blocks.hpp"
#include "models/builders/transformer_blocks.hpp"
#include "models/detection_ops.hpp"
#include "models/ops.hpp"

namespace tpusim {
namespace {

// The dispatch tensor's entries: the position of each assignment in its expert's queue (a
// cumulative sum), the compare with the capacity, the one-hot select.
constexpr double kDispatchMask = 2 + vpu_ops::kOneHot;
// The combine tensor: the dispatch mask times the router weight, and its gradient.
constexpr double kCombineWeights = 1;
// Unpermute and combine: each assignment's row times its router weight, summed over the top-k.
constexpr double kWeightedSum = 2;

double bf16(double elements) { return elements * dtype_bytes(DType::BF16); }

// E products [m, k] x [k, n], each with its own [k, n] weight: the routed experts' matrices.
OpNode grouped_matmul(std::string name, std::int64_t experts, std::int64_t m, std::int64_t k,
                      std::int64_t n) {
  OpNode op = weight_matmul(std::move(name), m, k, n, false);
  const MatmulShape s{experts, m, k, n};
  op.matmul = s;
  op.flops = s.flops();
  op.bytes_read = matmul_bytes_read(s, DType::BF16);
  op.bytes_written = matmul_bytes_written(s, DType::BF16);
  op.params = experts * k * n;
  op.expert_weights = true;
  op.shapes = {{experts, m, k}, {experts, k, n}, {experts, m, n}};
  return op;
}

// A row gather or scatter of `rows` rows of d_model (the permutation into expert order and back):
// the rows read and written once, with their i32 indices.
OpNode row_permute(std::string name, double rows, const DecoderDims& d) {
  OpNode op;
  op.name = std::move(name);
  op.kind = OpKind::Gather;
  op.vpu_elements = rows * d.d_model;
  op.vpu_ops_per_element = vpu_ops::kGather;
  op.bwd_vpu_ops_per_element = vpu_ops::kGather;
  op.bytes_read = rows * (bf16(d.d_model) + dtype_bytes(DType::I32));
  op.bytes_written = bf16(rows * d.d_model);
  op.shapes = {{static_cast<std::int64_t>(rows), d.d_model}};
  return op;
}

// The all-to-all over "expert" that moves `rows` rows of d_model between the tokens' devices and
// their experts' (forward; the backward pass runs the reverse one).
int add_expert_all_to_all(OpGraph& g, const std::string& name, double rows, const DecoderDims& d,
                          int x) {
  if (d.expert_degree <= 1) return x;
  OpNode r;
  r.name = name;
  r.kind = OpKind::Elementwise;
  r.bytes_read = r.bytes_written = bf16(rows * d.d_model);
  r.shapes = {{static_cast<std::int64_t>(rows), d.d_model},
              {static_cast<std::int64_t>(rows), d.d_model}};
  r.all_to_all_axes = {"expert"};
  return g.add(std::move(r), {x});
}

// Rows per expert the grouped matmuls run, and the share of them the model counts.
struct ExpertRows {
  std::int64_t per_expert = 0;
  double model_share = 1;
  /// The share of the experts whose weights are read: dropless, the expected share that the T
  /// tokens' top-k choices touch under uniform routing, 1 - (1 - k / E)^T (a ragged group with
  /// no rows loads no weights; near 1 but for a few tokens, as in a decode step); the capacity
  /// einsums read every expert.
  double weights_read = 1;
};

ExpertRows expert_rows(const DecoderDims& d) {
  const double mean = static_cast<double>(d.tokens()) * d.experts_per_token / d.experts;
  ExpertRows r;
  if (d.capacity_dispatch) {  // every expert padded to its capacity; the kept tokens count
    r.per_expert = static_cast<std::int64_t>(std::ceil(d.capacity_factor * mean));
    const double kept =
        mean * d.experts *
        (1 - moe_dropped_fraction(d.experts, d.capacity_factor, d.expert_imbalance));
    r.model_share = kept / (static_cast<double>(r.per_expert) * d.experts);
    return r;
  }
  // Dropless: every core waits for the busiest device of the expert axis.
  // An expert axis that does not divide the experts is refused by the layout's check
  // (rules/expert_axis.cpp), after this graph is built: at least one expert a device until then.
  const double busiest = moe_device_imbalance(
      d.experts, std::max<std::int64_t>(1, d.experts / d.expert_degree), d.expert_imbalance);
  r.per_expert = static_cast<std::int64_t>(std::ceil(mean * busiest));
  r.model_share = mean / static_cast<double>(r.per_expert);
  r.weights_read = 1 - std::pow(1 - static_cast<double>(d.experts_per_token) / d.experts,
                                static_cast<double>(d.tokens()));
  return r;
}

// The experts' gated MLPs on `rows.per_expert` rows each: in (gate and up), activation, down.
int add_expert_mlps(OpGraph& g, const std::string& p, int x, const DecoderDims& d,
                    const ExpertRows& rows) {
  const std::int64_t width = d.swiglu ? 2 * d.expert_d_ff : d.expert_d_ff;
  OpNode in = grouped_matmul(p + "moe.experts.in", d.experts, rows.per_expert, d.d_model, width);
  in.model_flops_share = rows.model_share;
  in.checkpoint_name = "mlpwi";  // MaxText's moe.py names its expert matmuls as the dense MLP's
  split_columns(in);
  quantize_weights(in, d, rows.weights_read);  // as the dense MLP's, of the experts touched
  const int i = g.add(std::move(in), {x});
  const double elements = static_cast<double>(d.experts) * rows.per_expert * d.expert_d_ff;
  OpNode act = d.swiglu ? vector_op(OpKind::Elementwise, p + "moe.experts.swiglu", elements, 2,
                                    kSwiglu, kSwigluGrad)
                        : vector_op(OpKind::Elementwise, p + "moe.experts.gelu", elements, 1,
                                    vpu_ops::kGelu, vpu_ops::kGeluGrad);
  act.grad_reads = GradReads::Inputs;  // gelu'(x), swish'(gate) and up: not the output
  act.split.model = SplitDim::N;
  const int a = g.add(std::move(act), {i});
  OpNode out =
      grouped_matmul(p + "moe.experts.out", d.experts, rows.per_expert, d.expert_d_ff, d.d_model);
  out.model_flops_share = rows.model_share;
  out.checkpoint_name = "mlpwo";
  split_rows(out);
  quantize_weights(out, d, rows.weights_read);
  return g.add(std::move(out), {a});
}

// Dropless: sort the assignments by expert, permute the tokens, experts, unpermute and combine.
int add_dropless(OpGraph& g, const std::string& p, int x, int route, const DecoderDims& d,
                 const ExpertRows& rows) {
  const double assigned = static_cast<double>(d.tokens()) * d.experts_per_token;
  const auto n = static_cast<std::int64_t>(assigned);
  OpNode sort = top_k(p + "moe.sort", 1, n, n, DType::I32);  // argsort of the expert ids
  sort.stop_gradient = true;
  const int order = g.add(std::move(sort), {route});
  const int permuted = g.add(row_permute(p + "moe.permute", assigned, d), {x, order});
  const int there = add_expert_all_to_all(g, p + "moe.dispatch", assigned, d, permuted);
  const int y = add_expert_mlps(g, p, there, d, rows);
  const int back = add_expert_all_to_all(g, p + "moe.combine", assigned, d, y);
  OpNode unpermute = row_permute(p + "moe.unpermute", assigned, d);
  unpermute.vpu_ops_per_element = unpermute.bwd_vpu_ops_per_element = kWeightedSum;
  unpermute.bytes_written = bf16(static_cast<double>(d.tokens()) * d.d_model);
  return g.add(std::move(unpermute), {back, route});
}

// Capacity: one-hot dispatch einsum, experts on [E, C, d_model], combine einsum.
int add_capacity(OpGraph& g, const std::string& p, int x, int route, const DecoderDims& d,
                 const ExpertRows& rows) {
  const std::int64_t tokens = d.tokens(), slots = d.experts * rows.per_expert;
  const double entries = static_cast<double>(tokens) * slots;  // of a [T, E x C] tensor
  OpNode mask =
      vector_op(OpKind::Elementwise, p + "moe.dispatch_mask", entries, 0, kDispatchMask, 0);
  mask.bytes_read = static_cast<double>(tokens) * d.experts_per_token * dtype_bytes(DType::I32);
  mask.stop_gradient = true;
  mask.shapes = {{tokens, slots}};
  const int m = g.add(std::move(mask), {route});
  // [E x C, T] x [T, d_model]: each expert's capacity rows gathered as an einsum.
  OpNode dispatch = activation_matmul(p + "moe.dispatch_einsum", 1, slots, tokens, d.d_model);
  dispatch.kind = OpKind::OneHotMatmul;
  dispatch.model_flops_share = 0;
  const int gathered = g.add(std::move(dispatch), {m, x});
  const int there =
      add_expert_all_to_all(g, p + "moe.dispatch", static_cast<double>(slots), d, gathered);
  const int y = add_expert_mlps(g, p, there, d, rows);
  const int back = add_expert_all_to_all(g, p + "moe.combine", static_cast<double>(slots), d, y);
  OpNode weights = vector_op(OpKind::Elementwise, p + "moe.combine_weights", entries, 1,
                             kCombineWeights, kCombineWeights);
  weights.shapes = {{tokens, slots}};
  const int w = g.add(std::move(weights), {m, route});
  // [T, E x C] x [E x C, d_model]: the router-weighted sum of each token's expert rows.
  OpNode combine = activation_matmul(p + "moe.combine_einsum", 1, tokens, slots, d.d_model);
  combine.kind = OpKind::OneHotMatmul;
  combine.model_flops_share = 0;
  return g.add(std::move(combine), {w, back});
}

}  // namespace

double moe_dropped_fraction(std::int64_t experts, double capacity_factor, double imbalance) {
  if (experts <= 1) return std::max(0.0, 1 - capacity_factor);
  const double rest = (experts - imbalance) / (experts - 1);  // each other expert, over the mean
  const double over = std::max(0.0, imbalance - capacity_factor) +
                      (experts - 1) * std::max(0.0, rest - capacity_factor);
  return over / experts;
}

double moe_device_imbalance(std::int64_t experts, std::int64_t per_device, double imbalance) {
  if (experts <= 1 || per_device >= experts) return 1;
  const double rest = (experts - imbalance) / (experts - 1);
  return (imbalance + (per_device - 1) * rest) / per_device;
}

int add_moe_experts(OpGraph& g, const std::string& p, int x, const DecoderDims& d) {
  const std::int64_t tokens = d.tokens();
  const int logits =
      g.add(weight_matmul(p + "moe.router", tokens, d.d_model, d.experts, false), {x});
  const int probs = g.add(
      vector_op(OpKind::Softmax, p + "moe.router_softmax", static_cast<double>(tokens) * d.experts,
                1, vpu_ops::kSoftmax - vpu_ops::kDropout, vpu_ops::kSoftmaxGrad - 1),
      {logits});
  OpNode pick = top_k(p + "moe.top_k", tokens, d.experts, d.experts_per_token, DType::F32);
  pick.bwd_vpu_ops_per_element = 1;  // the k weights' gradients scattered back to the E
  const int route = g.add(std::move(pick), {probs});
  const ExpertRows rows = expert_rows(d);
  return d.capacity_dispatch ? add_capacity(g, p, x, route, d, rows)
                             : add_dropless(g, p, x, route, d, rows);
}

}  // namespace tpusim
