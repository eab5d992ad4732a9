#pragma once
// Sharding rules: one per mesh axis kind (data, fsdp, bn, spatial, model, model2, sequence) and
// one for weight-update sharding, each registered by name. The partitioner
// (models/parallelism/partitioner.cpp) walks the op graph and asks the rules of the layout's live
// axes, op by op, how the op is sharded along their axis and which collectives that implies:
// what must arrive before it computes (FSDP's weight gathers, spatial halos), whether its result
// is a partial sum along the axis (a split reduced dimension: the partitioner sums the partials
// of all such axes in one collective), how the axis divides the weights, how gradients are
// summed over the replicas and how the optimizer is sharded. GSPMD's sharding propagation in
// miniature: the builders annotate each op's split per axis (OpSplit, OperandGather); the rules
// derive the collectives. Every question has a default that does nothing, so a rule answers only
// where its axis changes something.
//
// Adding an axis is one file with a rule and its registration lines (a sketch:
// OpNode::expert_weights does not exist yet):
//
//   class ExpertAxis final : public ShardingRule {
//     bool live(const Layout& l) const override { return l.registered_degree("expert") > 1; }
//     double weight_divisor(const OpNode& owner, const Layout& l) const override {
//       return owner.expert_weights ? l.registered_degree("expert") : 1;
//     }
//     void before_op(PartitionState& s, int v, std::vector<int>& deps,
//                    std::vector<int>& reads) override { /* the dispatch all-to-all */ }
//   };
//   const ShardingRuleRegistrar kExpertAxisRule{"expert", 90, [] {
//     return std::make_unique<ExpertAxis>(); }};
//
// plus, in the same file, its parameter and its place in the mesh (axis_registry.hpp):
//
//   const Param<std::int64_t> kExpert{{"parallelism.expert", ParamType::Integer, ...}};
//   const AxisRegistrar kExpertAxis{{"expert", &kExpert, 150, true, true}};
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/op_graph.hpp"
#include "models/parallelism/layout.hpp"
#include "models/program.hpp"

namespace tpusim {

class RuleSet;

/// A gradient bucket: parameters whose gradients one collective sums over the replicas.
struct Bucket {
  int index = 0;              ///< its number in the step ("grad.bucket.N")
  std::vector<int> owners;    ///< forward ops whose parameters the bucket holds
  std::vector<int> done_ops;  ///< program ops that completed those gradients
  double grad_bytes = 0;      ///< per core, in the gradient dtype
  /// The replica axes its gradients are summed over (PartitionState::sync_axes of its owners,
  /// the same for every owner of the bucket).
  std::vector<std::string> axes;
  int collective = -1;  ///< program op of the gradient collective (-1: none needed)
};

/// What the rules see of a partitioning in progress: the graph, the layout, the Program so far
/// and where each graph op's result is.
class PartitionState {
 public:
  PartitionState(const OpGraph& g, const Layout& l, const RuleSet& rules);

  const OpGraph& graph;
  const Layout& layout;
  /// layout.replica_axes(), read once (the partitioner asks for them per weight gradient).
  const std::vector<std::string> replica_axes;
  Program program;
  /// Per graph op: the program op holding its finished output (-1: not emitted yet).
  std::vector<int> result;
  /// True while the step's last (or only) microbatch is emitted.
  bool last_microbatch = true;
  /// Per graph op: true when another pipeline stage holds it (the Program is stage 0's and never
  /// emits it; FSDP gathers no weights of it). Empty without a pipeline.
  std::vector<char> off_stage;

  /// Appends a collective (its output a collective buffer of `bytes`); returns its index.
  int emit_collective(std::string name, CollectiveKind kind, Phase phase, double bytes, DType dtype,
                      std::vector<std::string> axes, std::vector<int> deps);
  int push(Op op);
  /// Bucket `b`'s gradient collective of `kind` over the replica axes ("grad.bucket.N.KIND", after
  /// the ops that completed it; its output a gradient bucket, whose last reader is set with the
  /// optimizer): sets b.collective and returns it.
  int emit_bucket_sync(Bucket& b, CollectiveKind kind);
  /// The replica axes over which `owner`'s gradient is summed: all of them but those whose rule
  /// gives each member other weights of it (ShardingRule::owns_weights: the expert axis and the
  /// routed experts).
  std::vector<std::string> sync_axes(int owner) const;
  /// Parameters of forward op `owner` one core holds: params over every axis dividing them.
  double params_per_core(int owner) const;
  /// Owners whose gradient a weight-gradient op contributes to (its forward op, a tied table).
  std::vector<int> owners_of(const OpNode& grad) const;

 private:
  const RuleSet& rules_;
};

class ShardingRule {
 public:
  virtual ~ShardingRule() = default;

  /// True when the rule has something to do under `l` (its axis has more than one member).
  virtual bool live(const Layout& l) const = 0;

  /// True when each member of this (replica) axis holds other weights of `owner`, so that its
  /// gradient is not summed over the axis (the expert axis and the routed experts).
  virtual bool owns_weights(const OpNode& owner, const Layout& l) const { return false; }
  /// Called once, before the walk.
  virtual void start(PartitionState& s) {}
  /// Called as each microbatch's ops start.
  virtual void begin_microbatch(PartitionState& s) {}
  /// Before step op `v` computes: the collectives that bring its operands into the sharding it
  /// computes in. Each one's index goes to `deps` (v waits for it) and to `reads` when v reads
  /// its output (which then lives until v).
  virtual void before_op(PartitionState& s, int v, std::vector<int>& deps,
                         std::vector<int>& reads) {}
  /// True when the op's result is a partial sum along this axis (it splits a reduced dimension).
  virtual bool partial(const OpNode& n, const Layout& l) const { return false; }
  /// True when a partial sum along this axis may be reduce-scattered (OpNode::scatter_partial).
  virtual bool scatters() const { return false; }
  /// After weight-gradient op `v` (program op `op`): collectives the gradient still needs along
  /// the axis; returns the op after which it is complete (`done` if none).
  virtual int complete_weight_gradient(PartitionState& s, int v, int op, int done) { return done; }

  /// How many ways the axis divides forward op `owner`'s weights.
  virtual double weight_divisor(const OpNode& owner, const Layout& l) const { return 1; }
  /// How many ways it divides the bf16 weight copies and gradient accumulators.
  virtual double weight_copy_divisor(const Layout& l) const { return 1; }
  /// How many ways it divides each example of the infeed batch.
  virtual double example_divisor(const Layout& l) const { return 1; }

  /// True when the rule sums gradients over the replicas; of the live rules that do, the last
  /// registered one does the sync (weight-update sharding and FSDP refine the data axis').
  virtual bool syncs_gradients() const { return false; }
  /// The sync: closes bucket `b` with its collective(s) (sets b.collective).
  virtual void sync_bucket(PartitionState& s, Bucket& b) {}
  /// True when gradients are synced after every microbatch, not summed in place and synced once.
  virtual bool sync_each_microbatch() const { return false; }

  /// How many ways the optimizer's work and state (master weights, slots) are divided.
  virtual double optimizer_divisor(const Layout& l) const { return 1; }
  /// Appends the axes over which `owner`'s optimizer op holds a shard of the weights (its norms
  /// are partial over them).
  virtual void optimizer_shard_axes(const OpNode& owner, const Layout& l,
                                    std::vector<std::string>& axes) const {}
  /// After bucket `b`'s optimizer ops (`last_ops`: the last op of each owner).
  virtual void after_bucket_update(PartitionState& s, const Bucket& b,
                                   const std::vector<int>& last_ops) {}
};

using ShardingRuleFactory = std::function<std::unique_ptr<ShardingRule>()>;

/// Registers a rule under `name` during static initialisation. `order` fixes where it comes
/// among the rules: the order in which they are asked, in which the axes of a partial sum are
/// listed in its collective, and which sync is the last.
struct ShardingRuleRegistrar {
  ShardingRuleRegistrar(const char* name, int order, ShardingRuleFactory make);
};

/// Names of the registered rules, in their order.
std::vector<std::string> registered_sharding_rules();

/// The live rules of a layout, in their order, each with its name.
class RuleSet {
 public:
  explicit RuleSet(const Layout& l);
  struct Entry {
    std::string name;
    std::unique_ptr<ShardingRule> rule;
  };
  const std::vector<Entry>& rules() const { return rules_; }
  /// The rule doing the gradient sync, or nullptr (one replica: nothing to sum).
  ShardingRule* sync() const { return sync_; }

  /// Names of the rules along whose axes `n`'s result is partial, in order.
  std::vector<std::string> partial_axes(const OpNode& n, const Layout& l) const;
  /// True when every named rule's partial may be reduce-scattered.
  bool all_scatter(const std::vector<std::string>& names) const;

 private:
  std::vector<Entry> rules_;
  ShardingRule* sync_ = nullptr;
};

}  // namespace tpusim
