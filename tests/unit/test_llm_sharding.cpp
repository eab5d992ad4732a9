// The mesh axes of large-model training (docs/llm.md): fully sharded data parallelism (the
// weights all-gathered over "fsdp" before each use, the gradients reduce-scattered), its 2D form
// with the Megatron "model" axis, the mesh's fit on the torus. Expectations from the dimensions.
#include <catch2/catch.hpp>

#include "core/errors.hpp"
#include "model_study.hpp"

using namespace tpusim;
using tpusim::test::op_named;
using tpusim::test::program_of;

namespace {
// A small decoder: d_model 256, 4 heads, d_ff 1024, vocabulary 1024, 128 tokens, 2 layers.
constexpr double d = 256, F = 1024, V = 1024, S = 128, L = 2;

Config small_lm(const std::string& topology, long long batch, nlohmann::json parallelism,
                nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json w{{"model", "decoder_lm"},
                   {"global_batch", batch},
                   {"layers", L},
                   {"d_model", d},
                   {"heads", 4},
                   {"d_ff", F},
                   {"vocab", V},
                   {"seq_len", S}};
  w.update(extra);
  return load_config({{"topology", topology}, {"workload", w}, {"parallelism", parallelism}});
}

bool has_op(const Program& p, const std::string& name) {
  for (const auto& op : p.ops)
    if (op.name == name) return true;
  return false;
}

double bytes_of(const Program& p, CollectiveKind kind, const std::string& axis) {
  double s = 0;
  for (const auto& op : p.ops)
    if (op.is_collective && op.collective.kind == kind && op.collective.axes.size() == 1 &&
        op.collective.axes[0] == axis)
      s += op.collective.bytes;
  return s;
}
}  // namespace

/// The all-gather op `name` waits for.
const Op& gather_before(const Program& p, const std::string& name) {
  for (int dep : op_named(p, name).deps)
    if (p.ops[dep].is_collective && p.ops[dep].collective.kind == CollectiveKind::AllGather)
      return p.ops[dep];
  FAIL("no all-gather before " << name);
  return p.ops.front();
}

// One layer's parameters: two layer norms (scale and bias), Q K V, the attention output and the
// GELU MLP, with biases; `model` divides the matmuls' (bias included, as the partitioner counts
// a split op's parameters), not the layer norms'.
double layer_params(double model) {
  const double matmuls = (d * 3 * d + 3 * d) + (d * d + d) + (d * F + F) + (F * d + d);
  return 2 * 2 * d + matmuls / model;
}

TEST_CASE(
    "FSDP: a layer's weights are all-gathered before forward and backward, its gradient "
    "reduce-scattered") {
  // 2x2 chips = 8 cores, all on the fsdp axis; one sequence per core.
  const Program p = program_of(small_lm("2x2", 8, {{"fsdp", 8}}));
  // One all-gather per layer and pass (XLA's combiner), bf16, over fsdp.
  for (const char* op : {"decoder.0.mlp.in", "decoder.0.mlp.in.bwd_input"}) {
    const Op& g = gather_before(p, op);
    CHECK(g.collective.axes == std::vector<std::string>{"fsdp"});
    CHECK(g.collective.bytes == layer_params(1) * 2);
  }
  CHECK(&gather_before(p, "decoder.0.mlp.in") == &gather_before(p, "decoder.0.attention.qkv"));
  CHECK(&gather_before(p, "decoder.0.mlp.in") != &gather_before(p, "decoder.1.mlp.in"));
  // The gradients: every parameter once, in bf16, over fsdp; each core keeps 1/8 of the sum.
  double params = 0;
  for (const auto& r : p.resident)
    if (r.cls == MemoryClass::MasterWeights) params += r.bytes / 4;
  CHECK(bytes_of(p, CollectiveKind::ReduceScatter, "fsdp") == Approx(params * 8 * 2));
  CHECK(bytes_of(p, CollectiveKind::AllReduce, "data") == 0);
  // Master weights, Adam slots and the bf16 copy are 1/8 per core.
  for (const auto& r : p.resident)
    if (r.name == "decoder.0.mlp.in master weights") CHECK(r.bytes == (d * F + F) / 8 * 4);
}

TEST_CASE(
    "FSDP with data replicas: reduce-scatter over fsdp, then the shard all-reduced over "
    "data") {
  const Program p = program_of(small_lm("2x2", 8, {{"fsdp", 4}}));
  const double rs = bytes_of(p, CollectiveKind::ReduceScatter, "fsdp");
  CHECK(rs > 0);
  CHECK(bytes_of(p, CollectiveKind::AllReduce, "data") == Approx(rs / 4));
}

TEST_CASE("2D sharding (model x fsdp): each matmul's collectives on each mesh axis") {
  // 8 cores = fsdp 4 x model 2; 4 sequences per step, one per fsdp member.
  const Program p = program_of(small_lm("2x2", 4, {{"fsdp", 4}, {"model", 2}}));
  const double tokens = S;  // per core
  // The layer's weights gathered over fsdp: the model-split matmuls' halves, whole layer norms.
  CHECK(gather_before(p, "decoder.0.mlp.in").collective.bytes == layer_params(2) * 2);
  CHECK(gather_before(p, "decoder.0.mlp.in").collective.axes == std::vector<std::string>{"fsdp"});
  // MLP in: columns split over model: no partial sum forward.
  CHECK_FALSE(has_op(p, "decoder.0.mlp.in.all-reduce"));
  // Its input gradient contracts over the split columns: a partial sum all-reduced over model.
  const Op& in_grad = op_named(p, "decoder.0.mlp.in.bwd_input.all-reduce");
  CHECK(in_grad.collective.axes == std::vector<std::string>{"model"});
  CHECK(in_grad.collective.bytes == tokens * d * 2);
  // MLP out: rows split over model: the forward output is a partial sum over model.
  const Op& out = op_named(p, "decoder.0.mlp.out.all-reduce");
  CHECK(out.collective.axes == std::vector<std::string>{"model"});
  CHECK(out.collective.bytes == tokens * d * 2);
  CHECK(p.mesh.size() == 3);
}

TEST_CASE("a sharding that does not divide is an error naming it - every mesh finds a place") {
  // fsdp 8 does not divide d_model 260.
  CHECK_THROWS_WITH(program_of(small_lm("2x2", 8, {{"fsdp", 8}}, {{"d_model", 260}})),
                    Catch::Contains("parallelism.fsdp") && Catch::Contains("workload.d_model"));
  CHECK_THROWS_WITH(program_of(small_lm("2x2", 8, {{"fsdp", 3}})),
                    Catch::Contains("parallelism.fsdp"));
  // A 6-way model axis on 8x6 chips of 2 cores: the 2 cores, then the 3 of the 6 along Y that
  // JAX's device mesh gives it (the row-major mesh before refused it: 3 does not divide X's 8).
  const Program p = program_of(
      small_lm("8x6", 16, {{"model", 6}}, {{"heads", 6}, {"d_ff", 1200}, {"d_model", 240}}));
  CHECK(p.mesh.back().name == "model");
  CHECK(p.mesh.back().size == 6);
}
