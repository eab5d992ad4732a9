// Partitioning rules: per-core costs, gradient collectives, Megatron splits, weight-update
// sharding and layout errors. Expectations come from the graphs' totals and the layout.
#include <catch2/catch.hpp>

#include "core/errors.hpp"
#include "model_study.hpp"
#include "models/parallelism/rules/sharding_rule.hpp"

using namespace tpusim;
using tpusim::test::graph_of;
using tpusim::test::model_study;
using tpusim::test::program_of;
using tpusim::test::sum_flops;

namespace {
std::vector<const Op*> collectives(const Program& p, CollectiveKind kind, const std::string& axis) {
  std::vector<const Op*> out;
  for (const auto& op : p.ops)
    if (op.is_collective && op.collective.kind == kind &&
        std::find(op.collective.axes.begin(), op.collective.axes.end(), axis) !=
            op.collective.axes.end())
      out.push_back(&op);
  return out;
}
double total_bytes(const std::vector<const Op*>& ops) {
  double s = 0;
  for (const auto* op : ops) s += op->collective.bytes;
  return s;
}
double optimizer_elements(const Program& p) {
  double s = 0;
  for (const auto& op : p.ops)
    if (!op.is_collective && op.phase == Phase::Optimizer) s += op.compute.vpu_elements;
  return s;
}
}  // namespace

TEST_CASE("data parallel: per-core FLOPs x cores equal the global batch's training FLOPs") {
  // 4x4 chips = 32 cores, one sequence per core.
  auto cfg = model_study("bert_large", "4x4", 32);
  auto p = program_of(cfg);
  CHECK(p.examples_per_step == 32);
  REQUIRE(p.mesh.size() == 2);
  CHECK(p.mesh[0].name == "data");
  CHECK(p.mesh[0].size == 32);
  CHECK(p.mesh[1].name == "model");
  CHECK(p.mesh[1].size == 1);
  CHECK(sum_flops(p) * 32 == Approx(graph_of(cfg, 1).total_flops() * 32).epsilon(1e-12));
}

TEST_CASE("data parallel: the gradient all-reduces carry the parameter bytes in the chosen dtype") {
  for (const auto& [dtype, bytes] : {std::pair<std::string, int>{"bf16", 2}, {"f32", 4}}) {
    auto cfg = model_study("bert_large", "4x4", 64, {{"grad_dtype", dtype}});
    const double params = static_cast<double>(graph_of(cfg, 2).total_params());
    auto p = program_of(cfg);
    auto grads = collectives(p, CollectiveKind::AllReduce, "data");
    CHECK(total_bytes(grads) == params * bytes);
    for (const auto* op : grads)
      CHECK(op->collective.dtype == (bytes == 2 ? DType::BF16 : DType::F32));
  }
}

TEST_CASE("gradient buckets fill to the configured size and follow the op that completes them") {
  auto cfg = model_study("bert_large", "4x4", 32, {{"grad_bucket_MiB", 16}});
  auto p = program_of(cfg);
  auto grads = collectives(p, CollectiveKind::AllReduce, "data");
  const double params = static_cast<double>(graph_of(cfg, 1).total_params());
  const double cap = 16.0 * 1048576;
  REQUIRE(grads.size() >= 2);
  CHECK(grads.size() <= static_cast<std::size_t>(params * 2 / cap) + 1);
  for (std::size_t i = 0; i + 1 < grads.size(); ++i) CHECK(grads[i]->collective.bytes >= cap);
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    if (!op.is_collective || op.phase != Phase::Backward) continue;
    // Placed right after the backward op it waits for, before the backward pass goes on.
    CHECK(op.deps.back() == static_cast<int>(i) - 1);
  }
  // The first bucket is issued during backward, not after it.
  std::size_t first = 0, last_backward = 0;
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    if (p.ops[i].name.rfind("grad.bucket.0.", 0) == 0) first = i;
    if (!p.ops[i].is_collective && p.ops[i].phase == Phase::Backward) last_backward = i;
  }
  CHECK(first < last_backward);
  // Every optimizer op waits for a gradient collective (directly or through its update op).
  for (const auto& op : p.ops) {
    if (op.is_collective || op.phase != Phase::Optimizer) continue;
    const Op& dep = p.ops[op.deps.front()];
    CHECK((dep.is_collective || dep.phase == Phase::Optimizer));
  }
}

TEST_CASE("2-way model parallel halves the split matmuls and adds the Megatron all-reduces") {
  auto dp = model_study("transformer_big", "4x4", 32);
  auto mp = model_study("transformer_big", "4x4", 16, {{"model", 2}});
  auto p1 = program_of(dp);
  auto p2 = program_of(mp);
  REQUIRE(p2.mesh[1].name == "model");
  CHECK(p2.mesh[1].size == 2);
  CHECK(p2.mesh[0].size == 16);
  // Same replica batch (1 example): every matmul of the Transformer is split, so a core does half.
  auto matmul_flops = [](const Program& p, const std::string& name) {
    for (const auto& op : p.ops)
      if (op.name == name) return op.compute.flops;
    return -1.0;
  };
  for (const char* name :
       {"encoder.0.attention.qkv", "encoder.0.attention.scores", "encoder.0.attention.output",
        "encoder.0.ffn.in", "encoder.0.ffn.out", "decoder.5.cross_attention.kv", "output.logits",
        "encoder.0.ffn.in.bwd_input", "encoder.0.ffn.out.bwd_weight"}) {
    INFO(name);
    CHECK(matmul_flops(p2, name) == Approx(matmul_flops(p1, name) / 2));
  }
  CHECK(sum_flops(p2) * 32 == Approx(graph_of(mp, 1).total_flops() * 16).epsilon(1e-12));

  // Forward: attention output (6 encoder + 12 decoder), FFN out (12), two embeddings, the loss.
  // Backward: input gradients of the column-split matmuls: qkv (12), cross q and kv (6 + 6),
  // FFN in (12), logits (1).
  auto model_ar = collectives(p2, CollectiveKind::AllReduce, "model");
  int fwd = 0, bwd = 0;
  for (const auto* op : model_ar) (op->phase == Phase::Forward ? fwd : bwd)++;
  CHECK(fwd == 18 + 12 + 2 + 1);
  CHECK(bwd == 12 + 12 + 12 + 1);
  CHECK(collectives(p1, CollectiveKind::AllReduce, "model").empty());
  // The attention output's partial sums: tokens x d_model in bf16.
  for (const auto* op : model_ar)
    if (op->name == "encoder.0.attention.output.all-reduce")
      CHECK(op->collective.bytes == 256.0 * 1024 * 2);
  // Gradient sync of a model-parallel replica: each core reduces its half of the split weights.
  const double params = static_cast<double>(graph_of(mp, 1).total_params());
  const double grad_bytes = total_bytes(collectives(p2, CollectiveKind::AllReduce, "data"));
  CHECK(grad_bytes < params * 2 / 2 * 1.01);
  CHECK(grad_bytes > params * 2 / 2);  // layer norms and row-split biases stay whole
}

TEST_CASE(
    "weight-update sharding: reduce-scatter then optimizer on 1/N of the weights then all-gather") {
  auto plain = model_study("bert_large", "4x4", 32);
  auto wus = model_study("bert_large", "4x4", 32, {{"weight_update_sharding", true}});
  auto p1 = program_of(plain);
  auto p2 = program_of(wus);
  const double params = static_cast<double>(graph_of(wus, 1).total_params());
  CHECK(collectives(p1, CollectiveKind::ReduceScatter, "data").empty());
  CHECK(total_bytes(collectives(p2, CollectiveKind::ReduceScatter, "data")) == params * 2);
  CHECK(total_bytes(collectives(p2, CollectiveKind::AllGather, "data")) == params * 2);
  // The only data all-reduces left are the LAMB norms of the sharded weights: 2 floats a tensor.
  for (const auto* op : collectives(p2, CollectiveKind::AllReduce, "data")) {
    CHECK(op->phase == Phase::Optimizer);
    CHECK(op->collective.bytes < 4096);
  }
  CHECK(optimizer_elements(p2) * 32 == Approx(optimizer_elements(p1)).epsilon(1e-9));
  CHECK(optimizer_elements(p1) == Approx(2 * params));  // LAMB: update and apply over every weight
}

TEST_CASE("bad layouts are ConfigErrors that name the JSON path") {
  auto message = [](const Config& cfg) {
    try {
      program_of(cfg);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  // 4x4 = 32 cores.
  CHECK_THAT(message(model_study("bert_large", "4x4", 33)),
             Catch::StartsWith("workload.global_batch: 33 examples"));
  CHECK_THAT(message(model_study("bert_large", "4x4", 32, {{"model", 3}})),
             Catch::StartsWith("parallelism.model: 3 does not divide the 32 cores"));
  CHECK_THAT(message(model_study("bert_large", "4x4", 1, {{"model", 32}})),
             Catch::Contains("workload.heads = 16"));
  CHECK_THAT(message(model_study("bert_large", "4x4", 8, {{"model", 4}})),
             Catch::Contains("workload.vocab = 30522"));
  CHECK_THAT(message(model_study("bert_large", "4x4", 32, {{"model", 64}})),
             Catch::StartsWith("parallelism: one replica needs"));
  CHECK_THAT(message(model_study("transformer_big", "4x4", 16, {{"spatial", 2}})),
             Catch::StartsWith("parallelism.spatial: 2: transformer_big has no spatial"));
  // (resnet50 now has a builder: branch cnn; every declared model has one.)
  CHECK(message(model_study("resnet50", "4x4", 32)) == "(no error)");
  CHECK_THROWS_WITH(
      model_study("gpt", "4x4", 32),
      Catch::Contains("workload.model: \"gpt\" is not allowed; expected one of bert_large"));
  CHECK_THROWS_WITH(model_study("bert_large", "4x4", 32, {{"grad_dtype", "f16"}}),
                    Catch::StartsWith("parallelism.grad_dtype:"));
}

TEST_CASE("the Program stays small: hundreds to a few thousand ops and no per-core copies") {
  auto p = program_of(
      model_study("bert_large", "tpu_v3_multipod", 8192, {{"weight_update_sharding", true}}));
  CHECK(p.mesh[0].size == 8192);
  CHECK(p.ops.size() > 500);
  CHECK(p.ops.size() < 3000);
  CHECK_NOTHROW(p.validate());
}

namespace {
std::vector<std::string> live_rules(const RuleSet& rules) {
  std::vector<std::string> names;
  for (const auto& e : rules.rules()) names.push_back(e.name);
  return names;
}

// The name of the rule that syncs the gradients, or "".
std::string sync_rule(const RuleSet& rules) {
  for (const auto& e : rules.rules())
    if (e.rule.get() == rules.sync()) return e.name;
  return "";
}
}  // namespace

TEST_CASE("sharding rules: registered by name in order, live where their axis has members") {
  CHECK(registered_sharding_rules() == std::vector<std::string>{"data", "weight_update_sharding",
                                                                "fsdp", "bn", "spatial", "model",
                                                                "model2", "sequence", "expert"});
  // One core: no rule has anything to do, nothing syncs.
  CHECK(live_rules(RuleSet(Layout{})).empty());
  CHECK(sync_rule(RuleSet(Layout{})).empty());

  Layout wus;  // 4 data replicas x model 2, weight-update sharding: it refines the data sync
  wus.data = 4;
  wus.model = 2;
  wus.weight_update_sharding = true;
  const RuleSet w(wus);
  CHECK(live_rules(w) == std::vector<std::string>{"data", "weight_update_sharding", "model"});
  CHECK(sync_rule(w) == "weight_update_sharding");
  CHECK_FALSE(w.sync()->sync_each_microbatch());

  Layout fsdp;  // 8 data replicas, 4 of them sharding the weights: FSDP syncs every microbatch
  fsdp.data = 8;
  fsdp.fsdp = 4;
  const RuleSet f(fsdp);
  CHECK(live_rules(f) == std::vector<std::string>{"data", "fsdp"});
  CHECK(sync_rule(f) == "fsdp");
  CHECK(f.sync()->sync_each_microbatch());

  // A partial sum is reduced over the axes in rule order; a reduce-scatter only where every one
  // of them allows it (model does, spatial does not).
  Layout ms;
  ms.data = 2;
  ms.model = 2;
  ms.spatial = 2;
  const RuleSet r(ms);
  OpNode n;
  n.split.model = SplitDim::K;
  n.split.spatial = SplitDim::K;
  CHECK(r.partial_axes(n, ms) == std::vector<std::string>{"spatial", "model"});
  CHECK_FALSE(r.all_scatter({"spatial", "model"}));
  CHECK(r.all_scatter({"model"}));
  n.split.spatial = SplitDim::M;
  CHECK(r.partial_axes(n, ms) == std::vector<std::string>{"model"});
}
