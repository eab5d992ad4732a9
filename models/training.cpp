#include "models/training.hpp"

#include <algorithm>
#include <cassert>

#include "core/param_handle.hpp"
#include "models/ops.hpp"

namespace tpusim {

const char* to_string(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::Adam:
      return "adam";
    case OptimizerKind::Lamb:
      return "lamb";
    case OptimizerKind::Lars:
      return "lars";
    case OptimizerKind::Sgd:
      return "sgd";
  }
  return "?";
}

const Param<bool> kRematerialize{
    {"workload.rematerialize", ParamType::Boolean, "", false,
     "recompute each layer's activations in the backward pass instead of keeping them from the "
     "forward pass (less memory, a second forward pass of every layer)"}};

int optimizer_slots(OptimizerKind k) {
  return k == OptimizerKind::Adam || k == OptimizerKind::Lamb ? 2 : 1;
}

namespace {

// How a split of a forward matmul maps onto its gradient matmuls. The gradient's dimensions are
// permutations of the forward's, so a split follows its dimension.
//   dA = dY x B^T:  {batch, M, N, K}      dB = A^T x dY: {batch, K, M, N}
//   dW = X^T x dY:  {1, K, batch*M, N}    (shared weights: the batch folds into the contraction)
SplitDim map_split_input_a(SplitDim d) {
  switch (d) {
    case SplitDim::K:
      return SplitDim::N;
    case SplitDim::N:
      return SplitDim::K;
    default:
      return d;
  }
}
SplitDim map_split_input_b(SplitDim d) {
  switch (d) {
    case SplitDim::K:
      return SplitDim::M;
    case SplitDim::M:
      return SplitDim::K;
    default:
      return d;
  }
}
SplitDim map_split_weight(SplitDim d) {
  switch (d) {
    case SplitDim::Batch:
    case SplitDim::M:
      return SplitDim::K;
    case SplitDim::K:
      return SplitDim::M;
    default:
      return d;
  }
}
OpSplit map_split(const OpSplit& s, SplitDim (*f)(SplitDim)) {
  return {f(s.model), f(s.spatial), f(s.model2), f(s.sequence)};
}

// A vector op's gradient divides its elements the same way, but holds no partial result.
SplitDim divided(SplitDim d) { return d == SplitDim::K ? SplitDim::N : d; }
OpSplit divided(const OpSplit& s) {
  return {divided(s.model), divided(s.spatial), divided(s.model2), divided(s.sequence)};
}

// The gather of dY (of `bytes` per replica) that an op's gradient needs when the op's partial
// sums were reduce-scattered: over the model axes that split its reduced dimension, the other
// axes splitting its output dividing it.
OperandGather dy_gather(const OpSplit& f, double bytes, std::vector<int> from) {
  OperandGather g;
  g.bytes = bytes;
  g.from = std::move(from);
  for (const auto& [axis, d] : tensor_splits(f)) {
    if (d == SplitDim::K && axis != "sequence") g.axes.push_back(axis);
    if (d != SplitDim::K && d != SplitDim::None) g.divisors.push_back(axis);
  }
  return g;
}

const OperandGather* gather_of_slot(const OpNode& f, int slot) {
  for (const auto& g : f.gathers)
    if (g.slot == slot) return &g;
  return nullptr;
}

// Bytes of a matmul's output [batch, m, n] in bf16: the dY its gradients read.
double output_bytes_bf16(const MatmulShape& s) {
  return static_cast<double>(s.batch) * s.m * s.n * dtype_bytes(DType::BF16);
}

// The weight gradient of a matmul: one per product (the routed experts' grouped matmul, one
// weight per expert) or one for all of them.
MatmulShape weight_gradient_shape(const OpNode& f, const MatmulShape& s) {
  return f.expert_weights ? MatmulShape{s.batch, s.k, s.m, s.n}
                          : MatmulShape{1, s.k, s.batch * s.m, s.n};
}

OpNode gradient_matmul(const OpNode& f, const std::string& suffix, MatmulShape s, DType out,
                       OpSplit split) {
  OpNode op;
  op.name = f.name + suffix;
  op.kind = f.kind;
  op.phase = Phase::Backward;
  op.out_dtype = out;
  op.matmul = s;
  // A permutation of the forward's dimensions: the same useful FLOPs (MatmulShape::batch may
  // also count the bf16 passes of an f32 product, models/detection_ops.hpp).
  op.flops = f.flops;
  op.model_flops_share = f.model_flops_share;
  op.dtype = f.dtype;
  op.mxu_dtype = f.mxu_dtype;  // quantized training: both backward matmuls too
  op.bytes_read = matmul_bytes_read(s, f.dtype);
  op.bytes_written = matmul_bytes_written(s, out);
  op.split = split;
  op.shapes = {{s.batch, s.m, s.k}, {s.batch, s.k, s.n}, {s.batch, s.m, s.n}};
  return op;
}

class Deriver {
 public:
  Deriver(OpGraph& g, OptimizerKind opt, RematPolicy remat)
      : g_(g),
        opt_(opt),
        remat_(remat),
        forward_ops_(g.size()),
        dy_sources_(forward_ops_),
        weight_grads_(forward_ops_),
        recomputed_(forward_ops_, -1) {}

  void run() {
    mark_requires_grad();
    // The layers in the order their backward runs (the first met in a reverse sweep first).
    std::vector<int> order;
    std::vector<bool> layer_done(static_cast<std::size_t>(g_.layers()), false);
    for (int v = forward_ops_ - 1; v >= 0; --v) {
      const int layer = g_.node(v).layer;
      if (layer >= 0 && !layer_done[layer]) {
        layer_done[layer] = true;
        order.push_back(layer);
      }
    }
    std::fill(layer_done.begin(), layer_done.end(), false);
    std::size_t next = 0;  // index in `order` of the next layer whose backward starts
    std::vector<bool> needed, needed_next;  // needed_in_backward of that layer and the one after
    for (int v = forward_ops_ - 1; v >= 0; --v) {
      const int layer = g_.node(v).layer;
      if (remat_ != RematPolicy::None && layer >= 0 && !layer_done[layer]) {
        layer_done[layer] = true;
        // Offloaded tensors are fetched one layer ahead: at the start of a layer's backward, the
        // next layer's copies from host memory begin (and the first layer's own).
        if (next == 0) {
          needed = needed_in_backward(layer);
          fetch_layer(layer, needed);
        } else {
          needed.swap(needed_next);
        }
        if (next + 1 < order.size()) {
          needed_next = needed_in_backward(order[next + 1]);
          fetch_layer(order[next + 1], needed_next);
        }
        ++next;
        recompute_layer(layer, needed);
      }
      backward_of(v);
    }
    add_optimizer();
  }

 private:
  void mark_requires_grad() {
    requires_grad_.assign(forward_ops_, false);
    for (int v = 0; v < forward_ops_; ++v) {
      const OpNode& f = g_.node(v);
      bool rg = f.params > 0 || f.tied_to >= 0;
      for (int u : g_.inputs(v)) rg = rg || requires_grad_[u];
      requires_grad_[v] = rg && !f.stop_gradient;
    }
  }

  int owner_of(int v) const { return g_.node(v).tied_to >= 0 ? g_.node(v).tied_to : v; }

  // A forward tensor as the backward pass reads it: its recomputed copy, if there is one.
  int saved(int v) const { return v < forward_ops_ && recomputed_[v] >= 0 ? recomputed_[v] : v; }

  // Copies of the layer's forward ops (all of them, or the selective ones), in forward order,
  // reading the recomputed copies of their inputs and the kept tensors otherwise. They own no
  // weights.
  // A copy nothing reads (`needed`, from needed_in_backward) is not made, and what it would read
  // is not kept for it: JAX saves and recomputes only the residuals the backward pass reads, and
  // XLA removes dead code. Offloaded outputs are fetched (fetch_layer), not copied.
  void recompute_layer(int layer, const std::vector<bool>& needed) {
    for (int v = 0; v < forward_ops_; ++v) {
      if (g_.node(v).layer != layer || !needed[v] || !copied(v) || offloaded(v)) continue;
      OpNode copy = g_.node(v);
      copy.name += ".remat";
      copy.phase = Phase::Backward;
      copy.recompute = true;
      copy.recompute_of = v;
      copy.params = 0;
      copy.tied_to = -1;
      copy.params_split_by_model = false;
      copy.params_split_by_model2 = false;
      std::vector<int> inputs;
      for (int u : g_.inputs(v)) inputs.push_back(saved(u));
      recomputed_[v] = g_.add(std::move(copy), inputs);
    }
  }

  // Whether op v's output goes to host memory in the forward pass and comes back for the backward.
  bool offloaded(int v) const {
    return remat_ == RematPolicy::Named && g_.node(v).remat_action == RematAction::Offload;
  }

  // The fetches of the layer's offloaded tensors that its backward reads (`needed`, from
  // needed_in_backward), in forward order: each a copy from host memory into HBM (host_fetch),
  // which the layer's ops then read.
  void fetch_layer(int layer, const std::vector<bool>& needed) {
    if (remat_ != RematPolicy::Named) return;
    for (int v = 0; v < forward_ops_; ++v)
      if (g_.node(v).layer == layer && needed[v] && offloaded(v))
        recomputed_[v] = g_.add(host_fetch(g_.node(v), v));
  }

  // Whether the backward pass takes op v's output from a copy (recomputed or fetched from host
  // memory) rather than from the forward pass.
  bool copied(int v) const {
    if (remat_ == RematPolicy::Attention) return g_.node(v).selective_remat;
    return remat_ != RematPolicy::Named || g_.node(v).remat_action != RematAction::Keep;
  }

  // The forward tensors backward_of(v) reads besides dY (before saved() maps them to copies).
  std::vector<int> backward_reads(int v) const {
    const OpNode& f = g_.node(v);
    const std::vector<int> ins = g_.inputs(v);
    std::vector<int> reads;
    if (!f.flash_attention && f.matmul &&
        (f.kind == OpKind::Matmul || f.kind == OpKind::Conv || f.kind == OpKind::OneHotMatmul)) {
      for (std::size_t slot = 0; slot < ins.size() && slot < 2; ++slot)
        if (requires_grad_[ins[slot]]) reads.push_back(ins.size() > 1 ? ins[1 - slot] : ins[slot]);
      if ((f.params > 0 || f.tied_to >= 0) && !ins.empty()) reads.push_back(ins[0]);
      return reads;
    }
    const GradReads r = f.flash_attention ? GradReads::InputsAndOutput : f.grad_reads;
    if (r == GradReads::InputsAndOutput || r == GradReads::Inputs) reads = ins;
    if (r == GradReads::InputsAndOutput || r == GradReads::Output) reads.push_back(v);
    return reads;
  }

  // Per forward op: whether layer `layer`'s backward reads its output, directly or through the
  // copies that recompute what it reads (a reverse sweep: readers come after what they read).
  std::vector<bool> needed_in_backward(int layer) const {
    std::vector<bool> needed(forward_ops_, false);
    for (int v = forward_ops_ - 1; v >= 0; --v) {
      if (g_.node(v).layer != layer) continue;
      if (requires_grad_[v])
        for (int t : backward_reads(v)) needed[t] = true;
      if (needed[v] && copied(v) && !offloaded(v))
        for (int u : g_.inputs(v)) needed[u] = true;
    }
    return needed;
  }

  // An offloaded output (RematAction::Offload) fetched back from host memory before the layer's
  // backward: it writes the forward op's per-core output into HBM (the PCIe copies themselves
  // overlap compute, docs/llm.md). A matmul's partial sum was completed before it was saved:
  // divided only where its output is split (or reduce-scattered).
  static OpNode host_fetch(const OpNode& f, int v) {
    OpNode op;
    op.name = f.name + ".fetch";
    op.kind = OpKind::Elementwise;
    op.phase = Phase::Backward;
    op.dtype = op.out_dtype = f.out_dtype;
    op.bytes_written = f.bytes_written;
    op.shapes = f.shapes;
    op.layer = f.layer;
    op.recompute = true;
    op.recompute_of = v;
    auto out = [&](SplitDim d) {
      if (d == SplitDim::K) return f.scatter_partial ? SplitDim::N : SplitDim::None;
      return d == SplitDim::None ? d : SplitDim::N;
    };
    op.split = {out(f.split.model), out(f.split.spatial), out(f.split.model2),
                out(f.split.sequence)};
    return op;
  }

  // Flash attention's backward (splash, FlashAttention-2's schedule): per block on or below the
  // diagonal, the scores recomputed (Q K^T), dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q:
  // five block products where the forward ran two; the model FLOPs are the backward's four of the
  // full square (twice the forward's), the recomputed one counts in HFU only. One op writes dQ,
  // dK and dV for every input that needs a gradient.
  void flash_backward(int v, const OpNode& f, const std::vector<int>& ins) {
    OpNode op;
    op.name = f.name + ".bwd";
    op.kind = f.kind;
    op.phase = Phase::Backward;
    op.flash_attention = true;
    MatmulShape s = *f.matmul;
    s.batch = s.batch / 2 * 5;
    op.matmul = s;
    op.flops = 2 * f.flops;
    op.vpu_elements = f.vpu_elements;
    op.vpu_ops_per_element = f.bwd_vpu_ops_per_element;
    op.bytes_read = f.bytes_read + 2 * f.bytes_written;  // Q, K, V blocks; O, dO, the lse
    op.bytes_written = f.bytes_read;                     // dQ, dK, dV
    op.split = divided(f.split);
    op.shapes = f.shapes;
    // K and V gathered over "sequence" (MaxText's context parallelism): read whole again (the
    // forward's kept gathers, or the recomputed forward's), and dK, dV, partial sums over the
    // sequence axis's queries, reduce-scattered back to their owners; dQ stays local.
    for (const OperandGather& g : f.gathers) {
      if (g.slot != 1 || ins.size() < 2) continue;
      OperandGather again = g;
      again.from = {saved(ins[1])};
      op.gathers.push_back(std::move(again));
      op.scatter_partial = true;  // over "sequence" (sequence_axis.cpp)
      op.scatter_bytes += g.bytes;
      op.scatter_divisors = g.divisors;
    }
    std::vector<int> saved = ins;
    saved.push_back(v);
    const int b = add_backward(std::move(op), v, saved, false);
    for (int u : ins)
      if (requires_grad_[u] &&
          std::find(dy_sources_[u].begin(), dy_sources_[u].end(), b) == dy_sources_[u].end())
        dy_sources_[u].push_back(b);
  }

  // Sharded activations: the gradient op of matmul v (shape s) reads dY whole, gathered from the
  // ops that produce it.
  void gather_dy(OpNode& op, int v, const OpNode& f, const MatmulShape& s) const {
    op.gathers.push_back(dy_gather(f.split, output_bytes_bf16(s), dy_sources_[v]));
  }

  // The forward's gather of input `slot` again, for a gradient op reading that input whole
  // (from its saved copy; a kept gather is shared with the forward).
  void gather_saved(OpNode& op, const OpNode& f, int slot, const std::vector<int>& ins) const {
    const OperandGather* g = gather_of_slot(f, slot);
    if (!g || slot < 0 || static_cast<std::size_t>(slot) >= ins.size()) return;
    OperandGather again = *g;
    again.from = {saved(ins[slot])};
    op.gathers.push_back(std::move(again));
  }

  // Adds a backward op that waits for the gradient of v's output and for `saved` forward tensors.
  int add_backward(OpNode op, int v, const std::vector<int>& saved, bool weight_grad) {
    op.forward_of = v;
    op.weight_grad = weight_grad;
    std::vector<int> deps = dy_sources_[v];
    for (int t : saved) {
      const int s = this->saved(t);
      if (std::find(deps.begin(), deps.end(), s) == deps.end()) deps.push_back(s);
    }
    const int b = g_.add(std::move(op), deps);
    if (weight_grad) {
      weight_grads_[owner_of(v)].push_back(b);
      // A tied op may also own parameters of its own (the MLM decoder's output bias).
      if (g_.node(v).tied_to >= 0 && g_.node(v).params > 0) weight_grads_[v].push_back(b);
    }
    return b;
  }

  void backward_of(int v) {
    if (!requires_grad_[v]) return;
    const OpNode f = g_.node(v);  // a copy: adding vertices may move the node storage
    if (dy_sources_[v].empty() && f.kind != OpKind::Loss) return;  // output never reaches a loss
    const std::vector<int> ins = g_.inputs(v);
    const bool owns_weights = f.params > 0 || f.tied_to >= 0;
    if (f.flash_attention) return flash_backward(v, f, ins);
    if (f.matmul &&
        (f.kind == OpKind::Matmul || f.kind == OpKind::Conv || f.kind == OpKind::OneHotMatmul)) {
      const MatmulShape s = *f.matmul;
      for (std::size_t slot = 0; slot < ins.size() && slot < 2; ++slot) {
        if (!requires_grad_[ins[slot]]) continue;
        const int other = ins.size() > 1 ? ins[1 - slot] : ins[slot];
        OpNode op = slot == 0 ? gradient_matmul(f, ".bwd_input", {s.batch, s.m, s.n, s.k}, f.dtype,
                                                map_split(f.split, map_split_input_a))
                              : gradient_matmul(f, ".bwd_input_b", {s.batch, s.k, s.m, s.n},
                                                f.dtype, map_split(f.split, map_split_input_b));
        op.conv = f.conv;
        // Sharded activations: dX of a gathered input goes back sharded (reduce-scattered); dY
        // of a scattered output arrives sharded and is gathered; the other operand, if the
        // forward gathered it, is read whole again.
        if (const OperandGather* g = gather_of_slot(f, static_cast<int>(slot))) {
          op.scatter_partial = true;
          if (slot == 1) {  // dK, dV: the gathered tensor's gradient
            op.scatter_bytes = g->bytes;
            op.scatter_divisors = g->divisors;
          }
        }
        if (f.scatter_partial) gather_dy(op, v, f, s);
        if (ins.size() > 1) gather_saved(op, f, 1 - static_cast<int>(slot), ins);
        dy_sources_[ins[slot]].push_back(add_backward(std::move(op), v, {other}, false));
      }
      if (owns_weights) {
        assert(s.batch == 1 || !ins.empty());
        OpNode op = gradient_matmul(f, ".bwd_weight", weight_gradient_shape(f, s), DType::F32,
                                    map_split(f.split, map_split_weight));
        op.conv = f.conv;
        if (f.scatter_partial) gather_dy(op, v, f, s);
        gather_saved(op, f, 0, ins);       // X again, whole
        op.vpu_elements = f.vpu_elements;  // bias gradient: column sums of dY
        op.vpu_ops_per_element = f.bwd_vpu_ops_per_element;
        add_backward(std::move(op), v, ins.empty() ? std::vector<int>{} : std::vector<int>{ins[0]},
                     true);
      }
      return;
    }

    OpNode op;
    op.name = f.name + ".bwd";
    op.kind = f.kind;
    op.phase = Phase::Backward;
    op.vpu_elements = f.vpu_elements;
    op.vpu_ops_per_element = f.bwd_vpu_ops_per_element;
    op.split = divided(f.split);
    op.shapes = f.shapes;
    if (f.kind == OpKind::Embedding) {
      // Scatter-add of dY into a dense f32 gradient of the table (zero-filled, then added to).
      op.out_dtype = DType::F32;
      op.bytes_read = f.bytes_written;
      op.bytes_written = static_cast<double>(f.params) * dtype_bytes(DType::F32);
    } else {
      // Reads the saved inputs and dY (or the saved output, same size); writes a gradient per
      // input.
      op.bytes_read = f.bytes_read + f.bytes_written;
      op.bytes_written = f.bytes_read;
    }
    if (f.scatter_partial)  // dY arrives sharded
      op.gathers.push_back(dy_gather(f.split, f.bytes_written, dy_sources_[v]));
    for (OperandGather g : f.gathers)  // per-row statistics: their gradient's, from dY
      if (g.kind == CollectiveKind::AllReduce) {
        g.from = dy_sources_[v];
        op.gathers.push_back(std::move(g));
      }
    op.all_to_all_axes = f.all_to_all_axes;  // a resharding's gradient: the reverse all-to-all
    const int b = add_backward(std::move(op), v, backward_reads(v), owns_weights);
    for (int u : ins)
      if (requires_grad_[u] && f.kind != OpKind::Embedding) dy_sources_[u].push_back(b);
  }

  OptimizerOpCost cost(bool apply_phase) const {
    // Per weight: f32 master weight, f32 gradient and f32 moments; every update also writes the
    // bf16 copy the next forward pass reads.
    switch (opt_) {
      case OptimizerKind::Adam:
        return {14, 16, 14};
      case OptimizerKind::Sgd:
        return {4, 12, 10};
      case OptimizerKind::Lamb:  // moments + update + norm partial sums | ratio, step, convert
        // The update phase writes both moments and the f32 update direction the apply reads.
        return apply_phase ? OptimizerOpCost{4, 8, 6} : OptimizerOpCost{16, 16, 12, 4};
      case OptimizerKind::Lars:  // norms of w and g | momentum step with the trust ratio
        return apply_phase ? OptimizerOpCost{8, 12, 10} : OptimizerOpCost{4, 8, 0};
    }
    return {};
  }

  OpNode optimizer_node(int owner, const char* suffix, bool apply_phase, bool partial_norms) const {
    const OpNode& f = g_.node(owner);
    const OptimizerOpCost c = cost(apply_phase);
    OpNode op;
    op.name = f.name + suffix;
    op.kind = OpKind::Optimizer;
    op.phase = Phase::Optimizer;
    op.dtype = DType::F32;
    op.out_dtype = DType::F32;
    const double n = static_cast<double>(f.params);
    op.vpu_elements = n;
    op.vpu_ops_per_element = c.ops_per_element;
    op.bytes_read = n * c.bytes_read_per_param;
    op.bytes_written = n * c.bytes_written_per_param;
    op.out_bytes_per_param = c.out_bytes_per_param;
    op.forward_of = owner;
    op.param_owner = owner;
    // Weights divided over the model axis divide their update; a norm over them is partial.
    const SplitDim d = partial_norms ? SplitDim::K : SplitDim::N;
    op.split.model = f.params_split_by_model ? d : SplitDim::None;
    op.split.model2 = f.params_split_by_model2 ? d : SplitDim::None;
    if (partial_norms) op.partial_bytes = 2 * dtype_bytes(DType::F32);  // ||w||^2 and ||u||^2
    op.shapes = {{f.params}};
    return op;
  }

  void add_optimizer() {
    // In the order the gradients complete, so the partitioner's buckets follow backward.
    std::vector<std::pair<int, int>> owners;  // (last gradient op, owner)
    for (int v = 0; v < forward_ops_; ++v)
      if (g_.node(v).params > 0 && !weight_grads_[v].empty())
        owners.emplace_back(*std::max_element(weight_grads_[v].begin(), weight_grads_[v].end()), v);
    std::sort(owners.begin(), owners.end());
    const bool two_phase = opt_ == OptimizerKind::Lamb || opt_ == OptimizerKind::Lars;
    for (const auto& [last, owner] : owners) {
      const char* name = two_phase ? ".opt.update" : ".opt";
      int u = g_.add(optimizer_node(owner, name, false, two_phase), weight_grads_[owner]);
      if (two_phase) g_.add(optimizer_node(owner, ".opt.apply", true, false), {u});
    }
  }

  OpGraph& g_;
  OptimizerKind opt_;
  RematPolicy remat_;
  int forward_ops_;
  std::vector<bool> requires_grad_;
  std::vector<std::vector<int>> dy_sources_;    ///< ops whose outputs sum into dY of a forward op
  std::vector<std::vector<int>> weight_grads_;  ///< per owner: ops contributing to its gradient
  std::vector<int> recomputed_;                 ///< per forward op: its recomputed copy, or -1
};

}  // namespace

void derive_training_graph(OpGraph& g, OptimizerKind optimizer, RematPolicy remat) {
  g.optimizer = to_string(optimizer);
  g.optimizer_slots = optimizer_slots(optimizer);
  Deriver(g, optimizer, remat).run();
}

void derive_training_graph(OpGraph& g, OptimizerKind optimizer, bool rematerialize) {
  derive_training_graph(g, optimizer, rematerialize ? RematPolicy::Full : RematPolicy::None);
}

void derive_training_graph(OpGraph& g, OptimizerKind optimizer, const Config& cfg) {
  derive_training_graph(g, optimizer, kRematerialize(cfg));
}

}  // namespace tpusim
