#include "models/parallelism/partitioner.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "models/parallelism/compiler_hints.hpp"
#include "models/parallelism/fsdp_plan.hpp"
#include "models/parallelism/per_core_cost.hpp"
#include "models/parallelism/spatial.hpp"

namespace tpusim {
namespace {

struct Bucket {
  std::vector<int> owners;    ///< forward ops whose parameters the bucket holds
  std::vector<int> done_ops;  ///< program ops that completed those gradients
  double grad_bytes = 0;      ///< per core, in the gradient dtype
  int collective = -1;        ///< program op of the gradient collective (-1: none needed)
};

class Partitioner {
 public:
  Partitioner(const OpGraph& g, const Layout& l)
      : g_(g),
        l_(l),
        result_(g.size(), -1),
        compute_op_(g.size(), -1),
        bucket_of_(g.size(), -1),
        pending_(g.size(), 0),
        optimizer_ops_(g.size()) {
    if (l.fsdp > 1) fsdp_ = plan_fsdp(g);
  }

  Program run() {
    p_.model = g_.model;
    p_.mesh = l_.mesh_axes();
    p_.examples_per_step = g_.replica_batch * g_.microbatches * l_.data;
    p_.infeed_bytes_per_example = g_.infeed_bytes_per_example;
    p_.model_flops = g_.model_flops() * g_.microbatches * l_.data;
    p_.tokens_per_example = g_.tokens_per_example;
    count_contributors();
    for (int v = 0; v < g_.size(); ++v)
      if (g_.node(v).phase == Phase::Optimizer) optimizer_ops_[g_.node(v).param_owner].push_back(v);
    for (int m = 0; m < g_.microbatches; ++m) {
      last_micro_ = m + 1 == g_.microbatches;
      segment_ = -1;
      gathered_.clear();
      for (int v = 0; v < g_.size(); ++v)
        if (g_.node(v).phase != Phase::Optimizer) emit_step_op(v);
      if (!last_micro_) end_early_microbatch();
    }
    close_bucket();
    emit_optimizer();
    set_lifetimes();
    add_resident_buffers();
    p_.has_memory = true;
    return std::move(p_);
  }

 private:
  // Owners whose gradient a weight-gradient op contributes to.
  std::vector<int> owners_of(const OpNode& grad) const {
    std::vector<int> out;
    const OpNode& f = g_.node(grad.forward_of);
    if (f.tied_to >= 0) out.push_back(f.tied_to);
    if (f.params > 0) out.push_back(grad.forward_of);
    return out;
  }

  void count_contributors() {
    for (int v = 0; v < g_.size(); ++v)
      if (g_.node(v).weight_grad)
        for (int o : owners_of(g_.node(v))) ++pending_[o];
  }

  double params_per_core(int owner) const {
    const OpNode& f = g_.node(owner);
    return static_cast<double>(f.params) / (f.params_split_by_model ? l_.model : 1) /
           (f.params_split_by_model2 ? l_.model2 : 1);
  }

  int push(Op op) {
    p_.ops.push_back(std::move(op));
    return static_cast<int>(p_.ops.size()) - 1;
  }

  double shard() const {
    if (l_.weight_update_sharding) return l_.replicas();
    return l_.fsdp;
  }

  // Replica axes with more than one member.
  std::vector<std::string> live_replica_axes() const {
    std::vector<std::string> axes;
    for (const auto& a : l_.replica_axes())
      if (l_.degree(a) > 1) axes.push_back(a);
    return axes;
  }

  // A weight-gradient op whose output only the optimizer reads (a matmul's dW, an embedding's
  // table gradient). Vector ops that own scale and shift (layer and batch norm) output the input
  // gradient, with their small parameter gradients alongside.
  bool only_weight_gradient(int v) const {
    if (!g_.node(v).weight_grad) return false;
    for (const auto& [reader, slot] : g_.consumers(v))
      if (g_.node(reader).phase != Phase::Optimizer) return false;
    return true;
  }

  MemoryClass output_class(int v) const {
    const OpNode& n = g_.node(v);
    if (n.phase == Phase::Forward || n.recompute) return MemoryClass::Activations;
    if (n.phase == Phase::Optimizer) return MemoryClass::OptimizerUpdates;
    return only_weight_gradient(v) ? MemoryClass::WeightGradients
                                   : MemoryClass::ActivationGradients;
  }

  double output_bytes(int v, const ComputeCost& cost, double shard) const {
    const OpNode& n = g_.node(v);
    // An optimizer op updates weights and slots in place (resident buffers); what it keeps for
    // its next phase is its update direction and its partial norms.
    if (n.phase == Phase::Optimizer)
      return params_per_core(n.param_owner) / shard * n.out_bytes_per_param + n.partial_bytes;
    if (!only_weight_gradient(v)) return cost.bytes_written;
    // Summed in place into the resident accumulators (with FSDP, after the reduce-scatter).
    if (g_.microbatches > 1 && !sync_each_microbatch()) return 0;
    double params = 0;  // the gradient of every parameter the op owns, biases included
    for (int o : owners_of(n)) params += params_per_core(o);
    return params * dtype_bytes(n.out_dtype);
  }

  int emit_compute(int v, std::vector<int> deps, double shard = 1) {
    const OpNode& n = g_.node(v);
    Op op;
    op.name = n.name;
    op.kind = to_string(n.kind);
    op.phase = n.phase;
    op.compute = per_core_cost(n, l_, shard);
    op.dtype = n.dtype;
    op.shapes = n.shapes;
    op.deps = std::move(deps);
    op.output.dtype = n.out_dtype;
    op.output.cls = output_class(v);
    op.output.bytes = output_bytes(v, op.compute, shard);
    add_compiler_hints(v, op);
    compute_op_[v] = push(std::move(op));
    return compute_op_[v];
  }

  // For compiler/: the operands read from earlier ops (each at most its producer's output, in
  // total at most the op's HBM reads), the fusion role and the per-core output shape.
  void add_compiler_hints(int v, Op& op) const {
    const OpNode& n = g_.node(v);
    double left = op.compute.bytes_read;
    // Sharded activations: the gathered operands are read in place of their shards.
    std::vector<int> gathered;
    for (std::size_t i = 0; i < input_gathers_now_.size(); ++i) {
      const int gather = input_gathers_now_[i];
      if (gather < 0) continue;
      // A sum of statistics is read beside the operand, a gathered operand in place of it.
      if (n.gathers[i].kind == CollectiveKind::AllGather) {
        const auto from = gather_sources(v, n.gathers[i]);
        gathered.insert(gathered.end(), from.begin(), from.end());
      }
      const double bytes = std::min(left, p_.ops[gather].output.bytes);
      if (bytes > 0) op.reads.push_back({gather, bytes});
      left -= bytes;
    }
    for (int u : g_.inputs(v)) {
      if (result_[u] < 0 || left <= 0) continue;
      if (std::find(gathered.begin(), gathered.end(), u) != gathered.end()) continue;
      const double bytes = std::min(left, p_.ops[result_[u]].output.bytes);
      if (bytes > 0) op.reads.push_back({result_[u], bytes});
      left -= bytes;
    }
    op.fusion_role = fusion_role_of(n);
    op.out_shape = per_core_out_shape(n, l_, op.compute.matmul, &op.feature_map);
  }

  int emit_collective(std::string name, CollectiveKind kind, Phase phase, double bytes, DType dtype,
                      std::vector<std::string> axes, std::vector<int> deps) {
    Op op;
    op.name = std::move(name);
    op.kind = to_string(kind);
    op.phase = phase;
    op.is_collective = true;
    op.collective.kind = kind;
    op.collective.bytes = bytes;
    op.collective.dtype = dtype;
    op.collective.axes = std::move(axes);
    op.dtype = dtype;
    op.deps = std::move(deps);
    op.output = {bytes, dtype, MemoryClass::CollectiveBuffers, -1};
    return push(std::move(op));
  }

  std::vector<int> input_deps(int v) const {
    std::vector<int> deps;
    for (int u : g_.inputs(v))
      if (result_[u] >= 0 && std::find(deps.begin(), deps.end(), result_[u]) == deps.end())
        deps.push_back(result_[u]);
    return deps;
  }

  // FSDP: at the start of each segment, the all-gathers of its weights and of the next
  // segment's (one segment ahead, so that they overlap compute where collectives are
  // asynchronous); returns the gather op `v` reads, or -1.
  int fsdp_gather_for(int v) {
    if (l_.fsdp <= 1) return -1;
    const int seg = fsdp_.segment[v];
    if (seg != segment_) {
      segment_ = seg;
      emit_gathers(seg);
      emit_gathers(seg + 1);
    }
    const int owner = fsdp_.owner_read[v];
    return owner < 0 ? -1 : gathered_.at({owner, seg});
  }

  // One all-gather per segment for all the weights it reads, as XLA's all-gather combiner
  // merges the gathers of a layer.
  void emit_gathers(int seg) {
    if (seg >= static_cast<int>(fsdp_.owners_of_segment.size())) return;
    const auto& owners = fsdp_.owners_of_segment[seg];
    if (owners.empty() || gathered_.count({owners.front(), seg})) return;
    const Phase phase = fsdp_.segment_phase[seg];
    double bytes = 0;
    for (int owner : owners) bytes += params_per_core(owner) * dtype_bytes(DType::BF16);
    const int first = owners.front();
    const int op =
        emit_collective(g_.node(first).name +
                            (phase == Phase::Forward ? ".weights" : ".weights.bwd") + ".all-gather",
                        CollectiveKind::AllGather, phase, bytes, DType::BF16, {"fsdp"}, {});
    p_.ops[op].output.cls = MemoryClass::WeightCopies;
    for (int owner : owners) gathered_[{owner, seg}] = op;
  }

  std::vector<int> gather_sources(int v, const OperandGather& gather) const {
    if (!gather.from.empty()) return gather.from;
    const auto ins = g_.inputs(v);
    if (static_cast<std::size_t>(gather.slot) < ins.size()) return {ins[gather.slot]};
    return ins;
  }

  double product_of_degrees(const std::vector<std::string>& axes) const {
    double p = 1;
    for (const auto& a : axes) p *= l_.degree(a);
    return p;
  }

  // Sharded activations: the all-gather (over gather.axes) of an operand `v` needs whole (made of
  // the outputs of gather.from, or of its input gather.slot); ops of one pass gathering the same
  // operand (a parallel block's Q/K/V and MLP reading one layer norm, the input and weight
  // gradients of a row-split matmul reading one dY) share it, and a kept gather (K and V over
  // the sequence axis) is shared by both passes. Returns the op, or -1.
  int gather_input(int v, const OperandGather& gather) {
    const OpNode& n = g_.node(v);
    if (gather.bytes <= 0 || product_of_degrees(gather.axes) <= 1) return -1;
    const std::vector<int> from = gather_sources(v, gather);
    std::vector<int> deps;
    for (int u : from)
      if (result_[u] >= 0) deps.push_back(result_[u]);
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    const bool forward = gather.keep || n.phase == Phase::Forward;
    const double bytes = gather.bytes / product_of_degrees(gather.divisors);
    InputGatherKey key{forward, deps, bytes, gather.axes, gather.name};
    if (auto it = input_gathers_.find(key); it != input_gathers_.end()) return it->second;
    const OpNode& src = g_.node(from.front());
    const bool activation = src.phase == Phase::Forward || src.recompute;
    const std::string what = gather.name.empty() ? "input" : gather.name;
    const int op = emit_collective(n.name + "." + what + "." + to_string(gather.kind), gather.kind,
                                   n.phase, bytes, gather.dtype, gather.axes, deps);
    p_.ops[op].output.cls =
        activation ? MemoryClass::Activations : MemoryClass::ActivationGradients;
    input_gathers_[key] = op;
    return op;
  }

  // A resharding op (OpNode::all_to_all_axes): one all-to-all of its input's bytes per core.
  void emit_all_to_all(int v, std::vector<int> deps) {
    const OpNode& n = g_.node(v);
    const double bytes = per_core_cost(n, l_).bytes_written;
    const int op = emit_collective(n.name + ".all-to-all", CollectiveKind::AllToAll, n.phase, bytes,
                                   DType::BF16, n.all_to_all_axes, std::move(deps));
    p_.ops[op].output.cls = output_class(v);
    compute_op_[v] = result_[v] = op;
  }

  void emit_step_op(int v) {
    const OpNode& n = g_.node(v);
    std::vector<int> deps = input_deps(v);
    if (!n.all_to_all_axes.empty()) {
      fsdp_gather_for(v);  // a segment's weights may be gathered from its first op on
      return emit_all_to_all(v, std::move(deps));
    }
    std::vector<int> inputs;
    for (const OperandGather& g : n.gathers) {
      inputs.push_back(gather_input(v, g));
      if (inputs.back() >= 0) deps.push_back(inputs.back());
    }
    const int gather = fsdp_gather_for(v);
    if (gather >= 0) deps.push_back(gather);
    const std::size_t first_halo = p_.ops.size();
    deps = emit_halos(n, std::move(deps));
    input_gathers_now_ = inputs;
    const int op = emit_compute(v, deps);
    input_gathers_now_.clear();
    if (gather >= 0) p_.ops[gather].output.last_use = std::max(p_.ops[gather].output.last_use, op);
    for (int input : inputs)
      if (input >= 0) p_.ops[input].output.last_use = std::max(p_.ops[input].output.last_use, op);
    for (std::size_t h = first_halo; h < static_cast<std::size_t>(op); ++h)
      p_.ops[h].output.last_use = op;
    result_[v] = op;
    emit_partial_sum(v, op);
    if (!n.weight_grad || (!last_micro_ && !sync_each_microbatch())) return;
    const int done = emit_row_split_param_sum(v, op);
    for (int o : owners_of(n))
      if (--pending_[o] == 0) complete_gradient(o, done);
  }

  // The partial sum of compute op `op` (of vertex v) over the axes splitting its reduced
  // dimension: all-reduced, or reduce-scattered over "model" where its readers take it sharded
  // (OpNode::scatter_partial). Weight gradients are summed over replica axes by the sync.
  void emit_partial_sum(int v, int op) {
    const OpNode& n = g_.node(v);
    std::vector<std::string> axes = partial_axes(n, l_);
    if (n.weight_grad) {
      const auto rep = l_.replica_axes();
      axes.erase(std::remove_if(axes.begin(), axes.end(),
                                [&](const std::string& a) {
                                  return std::find(rep.begin(), rep.end(), a) != rep.end();
                                }),
                 axes.end());
    }
    if (axes.empty()) return;
    // The partial sum is staged for the collective; the reduced tensor is what readers see.
    const bool scatter = n.scatter_partial && std::all_of(axes.begin(), axes.end(), [](auto& a) {
                           return a == "model" || a == "model2" || a == "sequence";
                         });
    const auto kind = scatter ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce;
    const double bytes = partial_result_bytes(n, l_, p_.ops[op].compute);
    result_[v] = emit_collective(n.name + "." + to_string(kind), kind, n.phase, bytes, n.out_dtype,
                                 axes, {op});
    if (scatter) p_.ops[result_[v]].output.bytes = bytes / product_of_degrees(axes);
    p_.ops[result_[v]].output.cls = p_.ops[op].output.cls;
    p_.ops[op].output.cls = MemoryClass::CollectiveBuffers;
    p_.ops[op].output.last_use = result_[v];
  }

  // Sharded activations: a vector op owning weights (a layer norm's scale) whose rows are split
  // over "model" holds partial sums of its weight gradients; they are all-reduced over "model"
  // (f32) before the gradient sync. Returns the op the gradient is complete after.
  int emit_row_split_param_sum(int v, int op) {
    const OpNode& n = g_.node(v);
    if (n.matmul || n.split.model != SplitDim::M || l_.model <= 1) return result_[v];
    double bytes = 0;
    for (int o : owners_of(n))
      if (!g_.node(o).params_split_by_model) bytes += params_per_core(o) * dtype_bytes(DType::F32);
    if (bytes <= 0) return result_[v];
    const int sum = emit_collective(n.name + ".params.all-reduce", CollectiveKind::AllReduce,
                                    n.phase, bytes, DType::F32, {"model"}, {op});
    p_.ops[sum].output.cls = MemoryClass::WeightGradients;
    return sum;
  }

  // Spatial partitioning: per split dimension the two collective-permutes (+d, -d along
  // "spatial") that bring the neighbours' boundary rows or columns before a window op; returns
  // the op's deps plus all of them.
  std::vector<int> emit_halos(const OpNode& n, std::vector<int> deps) {
    std::vector<int> out = deps;
    for (const HaloExchange& h : halo_exchanges(n, l_))
      for (int sign : {+1, -1}) {
        const int p = emit_collective(n.name + ".halo" + h.dim + (sign > 0 ? "+1" : "-1"),
                                      CollectiveKind::CollectivePermute, n.phase, h.bytes_per_side,
                                      DType::BF16, {"spatial"}, deps);
        p_.ops[p].collective.shift = sign * h.stride;
        p_.ops[p].output.cls = MemoryClass::Halos;
        out.push_back(p);
      }
    return out;
  }

  void complete_gradient(int owner, int done_op) {
    Bucket& b = open_bucket();
    b.owners.push_back(owner);
    bucket_of_[owner] = static_cast<int>(buckets_.size()) - 1;
    if (std::find(b.done_ops.begin(), b.done_ops.end(), done_op) == b.done_ops.end())
      b.done_ops.push_back(done_op);
    b.grad_bytes += params_per_core(owner) * dtype_bytes(l_.grad_dtype);
    if (b.grad_bytes >= l_.grad_bucket_bytes) close_bucket();
  }

  Bucket& open_bucket() {
    if (!bucket_open_) {
      buckets_.emplace_back();
      bucket_open_ = true;
    }
    return buckets_.back();
  }

  void close_bucket() {
    if (!bucket_open_) return;
    bucket_open_ = false;
    Bucket& b = buckets_.back();
    if (l_.replicas() <= 1) return;  // nothing to sum: optimizer waits for the gradients
    if (l_.fsdp > 1) return close_fsdp_bucket(b);
    const auto kind =
        l_.weight_update_sharding ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce;
    b.collective = emit_collective(
        "grad.bucket." + std::to_string(buckets_.size() - 1) + "." + to_string(kind), kind,
        Phase::Backward, b.grad_bytes, l_.grad_dtype, l_.replica_axes(), b.done_ops);
    OpOutput& out = p_.ops[b.collective].output;
    out.cls = MemoryClass::GradientBuckets;  // its last reader is set with the optimizer
    if (l_.weight_update_sharding) out.bytes = b.grad_bytes / l_.replicas();
  }

  // With FSDP every microbatch reduce-scatters its gradients (a core accumulates only its
  // shard); otherwise they are summed in place and synced once.
  bool sync_each_microbatch() const { return l_.fsdp > 1; }

  // After a microbatch that is not the last: its tensors' lifetimes (before result_ moves on);
  // with FSDP its gradient buckets, whose reduce-scattered shards are added into the
  // accumulators (so freed at once), are set aside and counting starts again.
  void end_early_microbatch() {
    set_lifetimes();
    if (!sync_each_microbatch()) return;
    close_bucket();
    for (const Bucket& b : buckets_)
      if (b.collective >= 0) p_.ops[b.collective].output.last_use = -1;
    buckets_.clear();
    std::fill(bucket_of_.begin(), bucket_of_.end(), -1);
    std::fill(pending_.begin(), pending_.end(), 0);
    count_contributors();
  }

  // FSDP: the bucket's gradients reduce-scattered over "fsdp" (each core keeps the sum of its
  // shard), then that shard all-reduced over the other replica axes.
  void close_fsdp_bucket(Bucket& b) {
    const std::string name = "grad.bucket." + std::to_string(buckets_.size() - 1);
    b.collective =
        emit_collective(name + ".reduce-scatter", CollectiveKind::ReduceScatter, Phase::Backward,
                        b.grad_bytes, l_.grad_dtype, {"fsdp"}, b.done_ops);
    p_.ops[b.collective].output = {b.grad_bytes / l_.fsdp, l_.grad_dtype,
                                   MemoryClass::GradientBuckets, -1};
    std::vector<std::string> others;
    for (const auto& a : live_replica_axes())
      if (a != "fsdp") others.push_back(a);
    if (others.empty() || !last_micro_) return;  // the shards' sum is all-reduced once
    const int rs = b.collective;
    b.collective = emit_collective(name + ".all-reduce", CollectiveKind::AllReduce, Phase::Backward,
                                   b.grad_bytes / l_.fsdp, l_.grad_dtype, others, {rs});
    p_.ops[b.collective].output.cls = MemoryClass::GradientBuckets;
    p_.ops[rs].output.last_use = b.collective;
  }

  // Axes over which an optimizer op's weights are sharded (its norms are partial over them).
  std::vector<std::string> shard_axes(int owner) const {
    std::vector<std::string> axes;
    if (l_.weight_update_sharding && l_.replicas() > 1) axes = l_.replica_axes();
    if (l_.fsdp > 1) axes.push_back("fsdp");
    if (g_.node(owner).params_split_by_model && l_.model > 1) axes.push_back("model");
    if (g_.node(owner).params_split_by_model2 && l_.model2 > 1) axes.push_back("model2");
    return axes;
  }

  // Optimizer, bucket by bucket: the first (or only) op of every owner waits for its bucket's
  // gradient collective. Two-phase optimizers (LAMB, LARS) need the norms of sharded weights
  // summed over the shards; like XLA's all-reduce combiner, tpusim sums all of them in one small
  // all-reduce per set of axes (a few bytes per tensor, so latency-bound: one, not one per
  // bucket), then runs the apply ops. With weight-update sharding each bucket ends with an
  // all-gather of its bf16 weights.
  void emit_optimizer() {
    const double shard = this->shard();
    std::map<std::vector<std::string>, std::pair<double, std::vector<int>>> norms;
    for (const Bucket& b : buckets_) {
      const std::vector<int> gate = b.collective >= 0 ? std::vector<int>{b.collective} : b.done_ops;
      for (int owner : b.owners) {
        const int v = optimizer_ops_[owner].front();
        result_[v] = emit_compute(v, gate, shard);
        if (b.collective >= 0) p_.ops[b.collective].output.last_use = result_[v];
        if (g_.node(v).partial_bytes > 0 && !shard_axes(owner).empty()) {
          auto& [bytes, deps] = norms[shard_axes(owner)];
          bytes += g_.node(v).partial_bytes;
          deps.push_back(result_[v]);
        }
      }
      if (!two_phase()) emit_all_gather(b);
    }
    if (!two_phase()) return;
    std::map<std::vector<std::string>, int> norm_op;
    int k = 0;
    for (auto& [axes, entry] : norms)
      norm_op[axes] = emit_collective("opt.norms." + std::to_string(k++) + ".all-reduce",
                                      CollectiveKind::AllReduce, Phase::Optimizer, entry.first,
                                      DType::F32, axes, entry.second);
    for (const Bucket& b : buckets_) {
      for (int owner : b.owners) {
        const auto& ops = optimizer_ops_[owner];
        for (std::size_t j = 1; j < ops.size(); ++j) {
          std::vector<int> deps{result_[ops[j - 1]]};
          auto it = norm_op.find(shard_axes(owner));
          if (it != norm_op.end()) deps.push_back(it->second);
          result_[ops[j]] = emit_compute(ops[j], deps, shard);
          p_.ops[result_[ops[j - 1]]].output.last_use = result_[ops[j]];
          if (it != norm_op.end()) p_.ops[it->second].output.last_use = result_[ops[j]];
        }
      }
      emit_all_gather(b);
    }
  }

  bool two_phase() const {
    for (const auto& ops : optimizer_ops_)
      if (ops.size() > 1) return true;
    return false;
  }

  void emit_all_gather(const Bucket& b) {
    if (!l_.weight_update_sharding || l_.replicas() <= 1) return;
    double weight_bytes = 0;
    std::vector<int> deps;
    for (int o : b.owners) {
      weight_bytes += params_per_core(o) * dtype_bytes(DType::BF16);
      deps.push_back(result_[optimizer_ops_[o].back()]);
    }
    const auto index = static_cast<std::size_t>(&b - buckets_.data());
    const int gather = emit_collective("opt.bucket." + std::to_string(index) + ".all-gather",
                                       CollectiveKind::AllGather, Phase::Optimizer, weight_bytes,
                                       DType::BF16, l_.replica_axes(), deps);
    p_.ops[gather].output.bytes = 0;  // gathers into the resident bf16 copies
  }

  // The program op whose output a reader of graph op v's result is: v's compute op, or the
  // bucket collective that sums a weight gradient for the optimizer.
  int reader_of(int v, int reader) const {
    const OpNode& r = g_.node(reader);
    if (r.phase == Phase::Optimizer && g_.node(v).weight_grad) {
      const int b = bucket_of_[r.param_owner];
      if (b >= 0 && buckets_[b].collective >= 0) return buckets_[b].collective;
    }
    return compute_op_[reader];
  }

  // Each step op's result lives until its last reader in the graph (forward tensors saved for
  // backward live until the backward op that reads them).
  void set_lifetimes() {
    for (int v = 0; v < g_.size(); ++v) {
      if (result_[v] < 0 || g_.node(v).phase == Phase::Optimizer) continue;
      int last = -1;
      const bool to_optimizer = only_weight_gradient(v);
      for (const auto& [reader, slot] : g_.consumers(v))
        if (to_optimizer || g_.node(reader).phase != Phase::Optimizer)
          last = std::max(last, reader_of(v, reader));
      if (last > result_[v]) p_.ops[result_[v]].output.last_use = last;
    }
  }

  // Per core, for the whole step: every parameter-owning op's f32 master weights and optimizer
  // slots (divided over the replicas with weight-update sharding) and its bf16 copy; the
  // double-buffered infeed batch (divided over the spatial cores).
  void add_resident_buffers() {
    for (int o = 0; o < g_.size(); ++o) {
      const OpNode& f = g_.node(o);
      if (f.params <= 0 || f.phase != Phase::Forward) continue;
      const double n = params_per_core(o);
      const double sharded = n / (optimizer_ops_[o].empty() ? 1 : shard());
      p_.resident.push_back({f.name + " master weights", MemoryClass::MasterWeights, DType::F32,
                             sharded * dtype_bytes(DType::F32)});
      p_.resident.push_back({f.name + " bf16 copy", MemoryClass::WeightCopies, DType::BF16,
                             n / l_.fsdp * dtype_bytes(DType::BF16)});
      if (g_.microbatches > 1 && !optimizer_ops_[o].empty())
        p_.resident.push_back({f.name + " gradient accumulator", MemoryClass::WeightGradients,
                               DType::F32, n / l_.fsdp * dtype_bytes(DType::F32)});
      if (!optimizer_ops_[o].empty() && g_.optimizer_slots > 0)
        p_.resident.push_back({f.name + " " + g_.optimizer + " slots", MemoryClass::OptimizerState,
                               DType::F32, sharded * g_.optimizer_slots * dtype_bytes(DType::F32)});
    }
    if (g_.infeed_bytes_per_example > 0)
      p_.resident.push_back(
          {"infeed (2 batches)", MemoryClass::Infeed, g_.infeed_dtype,
           2.0 * g_.replica_batch * g_.microbatches * g_.infeed_bytes_per_example / l_.spatial});
  }

  const OpGraph& g_;
  const Layout& l_;
  Program p_;
  std::vector<int> result_;      ///< program op holding each graph op's finished output
  std::vector<int> compute_op_;  ///< program compute op of each graph op
  std::vector<int> bucket_of_;   ///< per owner: index of its gradient bucket
  std::vector<int> pending_;     ///< per owner: gradient contributions not yet emitted
  std::vector<std::vector<int>> optimizer_ops_;  ///< per owner, in graph order
  std::vector<Bucket> buckets_;
  bool bucket_open_ = false;
  FsdpPlan fsdp_;                                ///< with parallelism.fsdp > 1
  int segment_ = -1;                             ///< FSDP segment of the op being emitted
  bool last_micro_ = true;                       ///< emitting the step's last microbatch
  std::map<std::pair<int, int>, int> gathered_;  ///< (owner, segment) -> its all-gather op
  /// Sharded activations: (forward pass or kept, the gathered tensors' ops, bytes per core, axes,
  /// name) -> the all-gather.
  using InputGatherKey =
      std::tuple<bool, std::vector<int>, double, std::vector<std::string>, std::string>;
  std::map<InputGatherKey, int> input_gathers_;
  std::vector<int> input_gathers_now_;  ///< per gather of the op being emitted: its op, or -1
};

}  // namespace

Program partition(const OpGraph& graph, const Layout& layout) {
  return Partitioner(graph, layout).run();
}

}  // namespace tpusim
