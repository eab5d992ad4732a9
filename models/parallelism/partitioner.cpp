#include "models/parallelism/partitioner.hpp"

#include <algorithm>
#include <map>

#include "models/parallelism/compiler_hints.hpp"
#include "models/parallelism/operand_gathers.hpp"
#include "models/parallelism/per_core_cost.hpp"
#include "models/parallelism/pipeline_schedule.hpp"
#include "models/parallelism/rules/sharding_rule.hpp"

namespace tpusim {
namespace {

// The driver: walks the graph in order and asks the layout's live sharding rules
// (models/parallelism/rules/) what each op needs.
class Partitioner {
 public:
  Partitioner(const OpGraph& g, const Layout& l)
      : g_(g),
        l_(l),
        rules_(l),
        s_(g, l, rules_),
        compute_op_(g.size(), -1),
        bucket_of_(g.size(), -1),
        pending_(g.size(), 0),
        optimizer_ops_(g.size()) {
    for (const auto& e : rules_.rules()) e.rule->start(s_);
  }

  Program run() {
    Program& p = s_.program;
    p.model = g_.model;
    p.mesh = l_.mesh_axes();
    p.examples_per_step = g_.replica_batch * g_.microbatches * l_.batch_shards();
    p.infeed_bytes_per_example = g_.infeed_bytes_per_example;
    p.model_flops = g_.model_flops() * g_.microbatches * l_.batch_shards();
    p.tokens_per_example = g_.tokens_per_example;
    count_contributors();
    contributions_ = pending_;
    for (int v = 0; v < g_.size(); ++v)
      if (g_.node(v).phase == Phase::Optimizer) optimizer_ops_[g_.node(v).param_owner].push_back(v);
    if (pipelined())
      emit_pipeline();
    else
      for (int m = 0; m < g_.microbatches; ++m) {
        s_.last_microbatch = m + 1 == g_.microbatches;
        for (const auto& e : rules_.rules()) e.rule->begin_microbatch(s_);
        for (int v = 0; v < g_.size(); ++v)
          if (g_.node(v).phase != Phase::Optimizer) emit_step_op(v);
        if (!s_.last_microbatch) end_early_microbatch();
      }
    close_bucket();
    emit_optimizer();
    set_lifetimes();
    add_resident_buffers();
    p.has_memory = true;
    return std::move(p);
  }

 private:
  Op& op_at(int i) { return s_.program.ops[i]; }

  void count_contributors() {
    for (int v = 0; v < g_.size(); ++v)
      if (g_.node(v).weight_grad)
        for (int o : s_.owners_of(g_.node(v))) ++pending_[o];
  }

  // With a rule that syncs every microbatch (FSDP) each microbatch's gradients are synced;
  // otherwise they are summed in place and synced once.
  bool sync_each_microbatch() const {
    return rules_.sync() && rules_.sync()->sync_each_microbatch();
  }

  double optimizer_divisor() const {
    double d = 1;
    for (const auto& e : rules_.rules()) d *= e.rule->optimizer_divisor(l_);
    return d;
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

  // A sum's gradient is dY for every input (a masked sum's selection fuses into each reader): one
  // buffer for its n inputs, where the op's cost writes one per input.
  double shared_gradient_inputs(const OpNode& n) const {
    if (n.phase != Phase::Backward || n.forward_of < 0 || n.weight_grad) return 1;
    if (g_.node(n.forward_of).grad_reads != GradReads::None) return 1;
    return std::max<double>(1, static_cast<double>(g_.inputs(n.forward_of).size()));
  }

  double output_bytes(int v, const ComputeCost& cost, double shard) const {
    const OpNode& n = g_.node(v);
    // An optimizer op updates weights and slots in place (resident buffers); what it keeps for
    // its next phase is its update direction and its partial norms.
    if (n.phase == Phase::Optimizer)
      return s_.params_per_core(n.param_owner) / shard * n.out_bytes_per_param + n.partial_bytes;
    if (!only_weight_gradient(v)) return cost.bytes_written / shared_gradient_inputs(n);
    // Summed in place into the resident accumulators (with FSDP, after the reduce-scatter).
    if (accumulates() && !sync_each_microbatch()) return 0;
    double params = 0;  // the gradient of every parameter the op owns, biases included
    for (int o : s_.owners_of(n)) params += s_.params_per_core(o);
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
    // An offloaded tensor's fetch from host memory (training.cpp) stays an op of its own: the
    // simulation times its PCIe copy (models/memory/host_offload.hpp).
    if (n.recompute && n.recompute_of >= 0 &&
        g_.node(n.recompute_of).remat_action == RematAction::Offload)
      op.fusion_role = FusionRole::Opaque;
    compute_op_[v] = s_.push(std::move(op));
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
        const auto from = OperandGathers::sources(g_, v, n.gathers[i]);
        gathered.insert(gathered.end(), from.begin(), from.end());
      }
      const double bytes = std::min(left, s_.program.ops[gather].output.bytes);
      if (bytes > 0) op.reads.push_back({gather, bytes});
      left -= bytes;
    }
    for (int u : g_.inputs(v)) {
      if (s_.result[u] < 0 || left <= 0) continue;
      if (std::find(gathered.begin(), gathered.end(), u) != gathered.end()) continue;
      const double bytes = std::min(left, s_.program.ops[s_.result[u]].output.bytes);
      if (bytes > 0) op.reads.push_back({s_.result[u], bytes});
      left -= bytes;
    }
    op.fusion_role = fusion_role_of(n);
    op.out_shape = per_core_out_shape(n, l_, op.compute.matmul, &op.feature_map);
  }

  std::vector<int> input_deps(int v) const {
    std::vector<int> deps;
    for (int u : g_.inputs(v))
      if (s_.result[u] >= 0 && std::find(deps.begin(), deps.end(), s_.result[u]) == deps.end())
        deps.push_back(s_.result[u]);
    return deps;
  }

  // A resharding op (OpNode::all_to_all_axes): one all-to-all of its input's bytes per core.
  // The rules still see it first (a segment's FSDP weights may be gathered from its first op on).
  void emit_all_to_all(int v, std::vector<int> deps) {
    const OpNode& n = g_.node(v);
    std::vector<int> unused_deps, unused_reads;
    for (const auto& e : rules_.rules()) e.rule->before_op(s_, v, unused_deps, unused_reads);
    const double bytes = per_core_cost(n, l_).bytes_written;
    const int op = s_.emit_collective(n.name + ".all-to-all", CollectiveKind::AllToAll, n.phase,
                                      bytes, DType::BF16, n.all_to_all_axes, std::move(deps));
    op_at(op).output.cls = output_class(v);
    compute_op_[v] = s_.result[v] = op;
  }

  // One op of a microbatch: the builder's operand gathers, what the rules bring before it, the
  // op, the sum of its partial results, and its part in the gradient sync.
  void emit_step_op(int v) {
    const OpNode& n = g_.node(v);
    std::vector<int> deps = input_deps(v);
    if (!n.all_to_all_axes.empty()) return emit_all_to_all(v, std::move(deps));
    std::vector<int> inputs, reads;
    for (const OperandGather& g : n.gathers) {
      inputs.push_back(gathers_.gather(s_, v, g));
      if (inputs.back() >= 0) deps.push_back(inputs.back());
    }
    for (const auto& e : rules_.rules()) e.rule->before_op(s_, v, deps, reads);
    input_gathers_now_ = inputs;
    const int op = emit_compute(v, deps);
    input_gathers_now_.clear();
    for (int r : reads) op_at(r).output.last_use = std::max(op_at(r).output.last_use, op);
    for (int input : inputs)
      if (input >= 0) op_at(input).output.last_use = std::max(op_at(input).output.last_use, op);
    s_.result[v] = op;
    emit_partial_sum(v, op);
    if (!n.weight_grad || (!s_.last_microbatch && !sync_each_microbatch())) return;
    int done = s_.result[v];
    for (const auto& e : rules_.rules()) done = e.rule->complete_weight_gradient(s_, v, op, done);
    for (int o : s_.owners_of(n))
      if (--pending_[o] == 0) complete_gradient(o, done);
  }

  // The partial sum of compute op `op` (of vertex v) over the axes whose rules find it partial:
  // all-reduced, or reduce-scattered where its readers take it sharded (OpNode::scatter_partial)
  // and every such rule allows it. Weight gradients are summed over replica axes by the sync.
  void emit_partial_sum(int v, int op) {
    const OpNode& n = g_.node(v);
    std::vector<std::string> axes = rules_.partial_axes(n, l_);
    if (n.weight_grad) {
      const std::vector<std::string>& rep = s_.replica_axes;
      axes.erase(std::remove_if(axes.begin(), axes.end(),
                                [&](const std::string& a) {
                                  return std::find(rep.begin(), rep.end(), a) != rep.end();
                                }),
                 axes.end());
    }
    if (axes.empty()) return;
    // The partial sum is staged for the collective; the reduced tensor is what readers see.
    const bool scatter = n.scatter_partial && rules_.all_scatter(axes);
    const auto kind = scatter ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce;
    const double bytes = partial_result_bytes(n, l_, op_at(op).compute);
    const int sum = s_.emit_collective(n.name + "." + to_string(kind), kind, n.phase, bytes,
                                       n.out_dtype, axes, {op});
    if (scatter) {
      double degrees = 1;
      for (const auto& a : axes) degrees *= l_.degree(a);
      op_at(sum).output.bytes = bytes / degrees;
    }
    op_at(sum).output.cls = op_at(op).output.cls;
    op_at(op).output.cls = MemoryClass::CollectiveBuffers;
    op_at(op).output.last_use = sum;
    s_.result[v] = sum;
  }

  void complete_gradient(int owner, int done_op) {
    // A bucket sums over one set of axes: an owner synced over others starts a new one.
    std::vector<std::string> axes = s_.sync_axes(owner);
    if (bucket_open_ && !buckets_.back().owners.empty() && buckets_.back().axes != axes)
      close_bucket();
    Bucket& b = open_bucket();
    b.axes = std::move(axes);
    b.owners.push_back(owner);
    bucket_of_[owner] = b.index;
    if (std::find(b.done_ops.begin(), b.done_ops.end(), done_op) == b.done_ops.end())
      b.done_ops.push_back(done_op);
    b.grad_bytes += s_.params_per_core(owner) * dtype_bytes(l_.grad_dtype);
    if (b.grad_bytes >= l_.grad_bucket_bytes) close_bucket();
  }

  Bucket& open_bucket() {
    if (!bucket_open_) {
      buckets_.emplace_back();
      buckets_.back().index = static_cast<int>(buckets_.size()) - 1;
      bucket_open_ = true;
    }
    return buckets_.back();
  }

  // Gradient sync: the bucket's collective(s), by the rule that syncs (none with one replica:
  // the optimizer waits for the gradients).
  void close_bucket() {
    if (!bucket_open_) return;
    bucket_open_ = false;
    if (rules_.sync()) rules_.sync()->sync_bucket(s_, buckets_.back());
  }

  // After a microbatch that is not the last: its tensors' lifetimes (before the results move
  // on); when gradients are synced every microbatch, its buckets, whose reduce-scattered shards
  // are added into the accumulators (so freed at once), are set aside and counting starts again.
  void end_early_microbatch() {
    set_lifetimes();
    if (!sync_each_microbatch()) return;
    close_bucket();
    for (const Bucket& b : buckets_)
      if (b.collective >= 0) op_at(b.collective).output.last_use = -1;
    buckets_.clear();
    std::fill(bucket_of_.begin(), bucket_of_.end(), -1);
    std::fill(pending_.begin(), pending_.end(), 0);
    count_contributors();
  }

  // Axes over which an optimizer op's weights are sharded (its norms are partial over them).
  std::vector<std::string> shard_axes(int owner) const {
    std::vector<std::string> axes;
    for (const auto& e : rules_.rules()) e.rule->optimizer_shard_axes(g_.node(owner), l_, axes);
    return axes;
  }

  bool two_phase() const {
    for (const auto& ops : optimizer_ops_)
      if (ops.size() > 1) return true;
    return false;
  }

  void after_bucket_update(const Bucket& b) {
    std::vector<int> last_ops;
    for (int o : b.owners) last_ops.push_back(s_.result[optimizer_ops_[o].back()]);
    for (const auto& e : rules_.rules()) e.rule->after_bucket_update(s_, b, last_ops);
  }

  using Norms = std::map<std::vector<std::string>, std::pair<double, std::vector<int>>>;

  // Optimizer, bucket by bucket: the first (or only) op of every owner waits for its bucket's
  // gradient collective; its partial norms over sharded weights are collected per set of axes.
  void emit_first_phase(const Bucket& b, double shard, Norms& norms) {
    const std::vector<int> gate = b.collective >= 0 ? std::vector<int>{b.collective} : b.done_ops;
    for (int owner : b.owners) {
      const int v = optimizer_ops_[owner].front();
      s_.result[v] = emit_compute(v, gate, shard);
      if (b.collective >= 0) op_at(b.collective).output.last_use = s_.result[v];
      if (g_.node(v).partial_bytes > 0 && !shard_axes(owner).empty()) {
        auto& [bytes, deps] = norms[shard_axes(owner)];
        bytes += g_.node(v).partial_bytes;
        deps.push_back(s_.result[v]);
      }
    }
  }

  // Two-phase optimizers (LAMB, LARS) need the norms of sharded weights summed over the shards;
  // like XLA's all-reduce combiner, tpusim sums all of them in one small all-reduce per set of
  // axes (a few bytes per tensor, so latency-bound: one, not one per bucket), then runs the
  // apply ops. After each bucket's update the rules may act (weight-update sharding's
  // all-gather of the bf16 weights).
  void emit_optimizer() {
    const double shard = optimizer_divisor();
    Norms norms;
    for (const Bucket& b : buckets_) {
      emit_first_phase(b, shard, norms);
      if (!two_phase()) after_bucket_update(b);
    }
    if (!two_phase()) return;
    std::map<std::vector<std::string>, int> norm_op;
    int k = 0;
    for (auto& [axes, entry] : norms)
      norm_op[axes] = s_.emit_collective("opt.norms." + std::to_string(k++) + ".all-reduce",
                                         CollectiveKind::AllReduce, Phase::Optimizer, entry.first,
                                         DType::F32, axes, entry.second);
    for (const Bucket& b : buckets_) {
      for (int owner : b.owners) {
        const auto& ops = optimizer_ops_[owner];
        for (std::size_t j = 1; j < ops.size(); ++j) {
          std::vector<int> deps{s_.result[ops[j - 1]]};
          auto it = norm_op.find(shard_axes(owner));
          if (it != norm_op.end()) deps.push_back(it->second);
          s_.result[ops[j]] = emit_compute(ops[j], deps, shard);
          op_at(s_.result[ops[j - 1]]).output.last_use = s_.result[ops[j]];
          if (it != norm_op.end()) op_at(it->second).output.last_use = s_.result[ops[j]];
        }
      }
      after_bucket_update(b);
    }
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
      if (s_.result[v] < 0 || g_.node(v).phase == Phase::Optimizer) continue;
      int last = -1;
      const bool to_optimizer = only_weight_gradient(v);
      for (const auto& [reader, slot] : g_.consumers(v))
        if (to_optimizer || g_.node(reader).phase != Phase::Optimizer)
          last = std::max(last, reader_of(v, reader));
      if (last > s_.result[v]) op_at(s_.result[v]).output.last_use = last;
    }
  }

  double product(double (ShardingRule::*divisor)(const Layout&) const) const {
    double d = 1;
    for (const auto& e : rules_.rules()) d *= (e.rule.get()->*divisor)(l_);
    return d;
  }

  // Per core, for the whole step: every parameter-owning op's f32 master weights and optimizer
  // slots (divided as the optimizer is) and its bf16 copy (and gradient accumulator, with
  // microbatches; divided as the rules divide the copies); the double-buffered infeed batch
  // (each example divided as the rules divide it).
  void add_resident_buffers() {
    auto& resident = s_.program.resident;
    const double copies = product(&ShardingRule::weight_copy_divisor);
    for (int o = 0; o < g_.size(); ++o) {
      const OpNode& f = g_.node(o);
      if (f.params <= 0 || f.phase != Phase::Forward || off_stage(o)) continue;
      const double n = s_.params_per_core(o);
      const double sharded = n / (optimizer_ops_[o].empty() ? 1 : optimizer_divisor());
      if (!g_.serving)
        resident.push_back({f.name + " master weights", MemoryClass::MasterWeights, DType::F32,
                            sharded * dtype_bytes(DType::F32)});
      // A quantized owner's copy is stored in its 8-bit dtype (workload.quantization).
      const DType copy = is_8bit(f.mxu_dtype) ? f.mxu_dtype : DType::BF16;
      resident.push_back({f.name + " " + to_string(copy) + " copy", MemoryClass::WeightCopies, copy,
                          n / copies * f.weight_copy_bytes()});
      if (accumulates() && !optimizer_ops_[o].empty())
        resident.push_back({f.name + " gradient accumulator", MemoryClass::WeightGradients,
                            DType::F32, n / copies * dtype_bytes(DType::F32)});
      if (!optimizer_ops_[o].empty() && g_.optimizer_slots > 0)
        resident.push_back({f.name + " " + g_.optimizer + " slots", MemoryClass::OptimizerState,
                            DType::F32, sharded * g_.optimizer_slots * dtype_bytes(DType::F32)});
    }
    if (g_.infeed_bytes_per_example > 0)
      resident.push_back({"infeed (2 batches)", MemoryClass::Infeed, g_.infeed_dtype,
                          2.0 * g_.replica_batch * g_.microbatches * g_.infeed_bytes_per_example /
                              product(&ShardingRule::example_divisor)});
    resident.insert(resident.end(), g_.resident_per_core.begin(), g_.resident_per_core.end());
  }

  // ---- Pipeline parallelism (models/parallelism/pipeline_schedule.hpp, docs/pipeline.md) ----

  bool pipelined() const { return l_.pipeline_stages() > 1; }
  // Weight gradients are summed in place over microbatches (or a pipeline's units).
  bool accumulates() const { return g_.microbatches > 1 || pipelined(); }

  // The layer's model chunk on stage 0, or -1 if another stage holds it: with p stages and v
  // chunks per stage, virtual stage j = layer / (layers / (p v)) is on stage j mod p (circular).
  int stage0_chunk(int layer) const {
    const int p = l_.pipeline_stages(), per = g_.layers() / (p * l_.pipeline_repeats);
    const int j = layer / per;
    return j % p == 0 ? j / p : -1;
  }
  int layer_of(int v) const {
    const OpNode& n = g_.node(v);
    if (n.layer >= 0 || n.forward_of < 0) return n.layer;
    return g_.node(n.forward_of).layer;
  }
  bool off_stage(int v) const {
    return pipelined() && layer_of(v) >= 0 && stage0_chunk(layer_of(v)) < 0;
  }

  // The step ops in groups: each chunk's forward and backward ops; outside the layers, the
  // forward ops before them (embeddings), those after them with their backward (the head and
  // loss), and the backward ops of the embeddings.
  struct PipelineGroups {
    std::vector<std::vector<int>> fwd, bwd;
    std::vector<int> pre, post, pre_bwd;
    std::vector<int> chunk_in, chunk_out;   ///< per chunk: the residual stream in and out
    std::vector<std::vector<int>> grad_in;  ///< per chunk: gradients arriving from outside
  };

  PipelineGroups pipeline_groups() const {
    const int v_chunks = l_.pipeline_repeats;
    PipelineGroups pg;
    pg.fwd.resize(v_chunks);
    pg.bwd.resize(v_chunks);
    pg.chunk_in.assign(v_chunks, -1);
    pg.chunk_out.assign(v_chunks, -1);
    pg.grad_in.resize(v_chunks);
    int first_layer_op = g_.size();
    for (int v = 0; v < g_.size(); ++v)
      if (g_.node(v).layer >= 0) first_layer_op = std::min(first_layer_op, v);
    std::vector<int> group(g_.size(), -1);  // chunk of a backward op
    for (int v = 0; v < g_.size(); ++v) {
      const OpNode& n = g_.node(v);
      if (n.phase == Phase::Optimizer) continue;
      const int layer = layer_of(v);
      const bool fwd = n.phase == Phase::Forward && !n.recompute;
      if (layer >= 0) {
        const int c = stage0_chunk(layer);
        if (c < 0) continue;
        if (fwd) {
          if (pg.chunk_in[c] < 0 && !g_.inputs(v).empty()) pg.chunk_in[c] = g_.inputs(v).front();
          pg.fwd[c].push_back(v);
          pg.chunk_out[c] = v;
        } else {
          pg.bwd[c].push_back(v);
          group[v] = c;
        }
        continue;
      }
      const int of = fwd ? v : n.forward_of;
      if (of >= 0 && of < first_layer_op)
        (fwd ? pg.pre : pg.pre_bwd).push_back(v);
      else
        pg.post.push_back(v);
    }
    for (int c = 0; c < v_chunks; ++c)
      for (int v : pg.bwd[c])
        for (int u : g_.inputs(v))
          if (g_.node(u).phase == Phase::Backward && !g_.node(u).recompute && group[u] != c &&
              std::find(pg.grad_in[c].begin(), pg.grad_in[c].end(), u) == pg.grad_in[c].end())
            pg.grad_in[c].push_back(u);
    return pg;
  }

  // A unit's results kept for its backward: per graph op, its result and its compute op. Both
  // come back with the microbatch, so that the lifetimes of its forward tensors are set by its
  // own readers, not by those of the microbatches emitted since (which would keep every kept
  // forward tensor, the ones remat drops too, alive until the latest forward unit).
  struct Kept {
    int op, result, compute;
  };
  using Snapshot = std::vector<Kept>;
  Snapshot snapshot(const std::vector<int>& ops) const {
    Snapshot out;
    for (int v : ops) out.push_back({v, s_.result[v], compute_op_[v]});
    return out;
  }
  void restore(const Snapshot& snap) {
    for (const Kept& k : snap) {
      s_.result[k.op] = k.result;
      compute_op_[k.op] = k.compute;
    }
  }

  void emit_group(const std::vector<int>& ops, bool last) {
    s_.last_microbatch = last;
    if (!sync_each_microbatch()) {
      for (int v : ops) emit_step_op(v);
      return;
    }
    // FSDP within the stages: every unit reduce-scatters its gradients, as every microbatch does
    // without a pipeline; the last unit's buckets reach the optimizer, the others' shards are
    // summed into the accumulators (freed at once).
    for (int v : ops)
      if (g_.node(v).weight_grad)
        for (int o : s_.owners_of(g_.node(v)))
          if (pending_[o] <= 0) pending_[o] = contributions_[o];
    close_bucket();
    const std::size_t before = buckets_.size();
    for (int v : ops) emit_step_op(v);
    close_bucket();
    if (last) return;
    for (std::size_t b = before; b < buckets_.size(); ++b) {
      if (buckets_[b].collective >= 0) op_at(buckets_[b].collective).output.last_use = -1;
      for (int o : buckets_[b].owners) bucket_of_[o] = -1;
    }
    buckets_.resize(before);
  }

  // The stage program in stage 0's order: per unit its chunk's ops, then a collective-permute
  // of the microbatch's activations (forward, to the next stage) or of their gradients
  // (backward, to the previous one) over "pipeline"; the next unit of that direction starts
  // from what arrived.
  void emit_pipeline() {
    const int p = l_.pipeline_stages(), v = l_.pipeline_repeats, m = g_.microbatches;
    const auto units = pipeline_units(l_.pipeline_schedule, p, m, v);
    const PipelineGroups pg = pipeline_groups();
    std::vector<int> last_bwd(v, -1);  // index of the last backward unit of each chunk
    for (std::size_t i = 0; i < units.size(); ++i)
      if (!units[i].forward) last_bwd[units[i].chunk] = static_cast<int>(i);
    std::map<std::pair<int, int>, Snapshot> kept;  // (microbatch, chunk): its forward results
    std::vector<Snapshot> pre_kept(m);
    std::vector<double> boundary_bytes(v, 0);
    int arrived[2] = {-1, -1};  // the last permute of each direction
    PipelineInfo& info = s_.program.pipeline;
    info = {p, m, v, l_.pipeline_schedule, {}};
    s_.off_stage.assign(g_.size(), 0);
    for (int op = 0; op < g_.size(); ++op) s_.off_stage[op] = off_stage(op);
    for (std::size_t i = 0; i < units.size(); ++i) {
      const ScheduleUnit& u = units[i];
      const bool real = u.microbatch >= 0;
      for (const auto& e : rules_.rules()) e.rule->begin_microbatch(s_);
      const int first = static_cast<int>(s_.program.ops.size());
      if (u.forward) {
        if (real && u.chunk == 0) {
          emit_group(pg.pre, false);
          pre_kept[u.microbatch] = snapshot(pg.pre);
        }
        if (arrived[0] >= 0 && pg.chunk_in[u.chunk] >= 0)
          s_.result[pg.chunk_in[u.chunk]] = arrived[0];
        emit_group(pg.fwd[u.chunk], false);
        if (real) kept[{u.microbatch, u.chunk}] = snapshot(pg.fwd[u.chunk]);
        boundary_bytes[u.chunk] = op_at(s_.result[pg.chunk_out[u.chunk]]).output.bytes;
      } else {
        if (real) restore(kept.at({u.microbatch, u.chunk}));
        if (real && u.chunk == v - 1) emit_group(pg.post, u.microbatch == m - 1);
        if (arrived[1] >= 0)
          for (int g : pg.grad_in[u.chunk]) s_.result[g] = arrived[1];
        emit_group(pg.bwd[u.chunk], last_bwd[u.chunk] == static_cast<int>(i));
        if (real && u.chunk == 0) {
          restore(pre_kept[u.microbatch]);
          emit_group(pg.pre_bwd, u.microbatch == m - 1);
        }
      }
      const int last = static_cast<int>(s_.program.ops.size()) - 1;
      const int k = u.forward ? 0 : 1;
      arrived[k] = s_.emit_collective(std::string("pipeline.") + (u.forward ? "fwd." : "bwd.") +
                                          std::to_string(u.iteration) + ".collective-permute",
                                      CollectiveKind::CollectivePermute,
                                      u.forward ? Phase::Forward : Phase::Backward,
                                      boundary_bytes[u.chunk], DType::BF16, {"pipeline"}, {last});
      op_at(arrived[k]).collective.shift = u.forward ? 1 : -1;
      op_at(arrived[k]).collective.wrap = v > 1;  // circular: the last stage feeds the first
      op_at(arrived[k]).output.cls =
          u.forward ? MemoryClass::Activations : MemoryClass::ActivationGradients;
      info.units.push_back({first, arrived[k], u.forward, u.iteration});
      set_lifetimes();
    }
    s_.last_microbatch = true;
  }

  const OpGraph& g_;
  const Layout& l_;
  RuleSet rules_;
  PartitionState s_;
  std::vector<int> compute_op_;     ///< program compute op of each graph op
  std::vector<int> bucket_of_;      ///< per owner: index of its gradient bucket
  std::vector<int> pending_;        ///< per owner: gradient contributions not yet emitted
  std::vector<int> contributions_;  ///< per owner: its gradient contributions in one microbatch
  std::vector<std::vector<int>> optimizer_ops_;  ///< per owner, in graph order
  std::vector<Bucket> buckets_;
  bool bucket_open_ = false;
  OperandGathers gathers_;              ///< the builder's operand gathers, shared where equal
  std::vector<int> input_gathers_now_;  ///< per gather of the op being emitted: its op, or -1
};

}  // namespace

Program partition(const OpGraph& graph, const Layout& layout) {
  return Partitioner(graph, layout).run();
}

}  // namespace tpusim
