// The mesh axes of large-model training (docs/llm.md): fully sharded data parallelism (the
// weights all-gathered over "fsdp" before each use, the gradients reduce-scattered), its 2D form
// with the Megatron "model" axis, the mesh's fit on the torus. Expectations from the dimensions.
#include <catch2/catch.hpp>
#include <map>

#include "core/errors.hpp"
#include "model_study.hpp"
#include "models/memory/memory_model.hpp"
#include "models/parallelism/pipeline_schedule.hpp"
#include "models/parallelism/rules/axis_registry.hpp"

using namespace tpusim;
using tpusim::test::graph_of;
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

// Pipeline parallelism (docs/pipeline.md): the schedules' units and their closed forms, the
// in-flight activations per schedule, the stage program's permutes and the axis's place in the
// mesh. Expectations from the parameters (stages p, microbatches m, chunks v, the dimensions).

namespace {
// A small decoder: d_model 256, 4 heads, d_ff 1024, vocabulary 1024, 128 tokens, 8 layers.
constexpr long long kPipeD = 256, kPipeS = 128, kPipeL = 8;

Config pipelined_lm(const std::string& topology, long long batch, nlohmann::json parallelism,
                    long long microbatches, nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json w{{"model", "decoder_lm"},
                   {"global_batch", batch},
                   {"layers", kPipeL},
                   {"d_model", kPipeD},
                   {"heads", 4},
                   {"d_ff", 1024},
                   {"vocab", 1024},
                   {"seq_len", kPipeS},
                   {"microbatches", microbatches}};
  w.update(extra);
  return load_config({{"topology", topology}, {"workload", w}, {"parallelism", parallelism}});
}

int count_units(const std::vector<ScheduleUnit>& units, bool forward, bool real) {
  int n = 0;
  for (const auto& u : units) n += u.forward == forward && (u.microbatch >= 0) == real;
  return n;
}

double resident_weight_bytes(const Program& p) {
  double s = 0;
  for (const auto& r : p.resident)
    if (r.cls == MemoryClass::WeightCopies) s += r.bytes;
  return s;
}
}  // namespace

TEST_CASE("every schedule runs m v + p - 1 iterations each way, p - 1 of them a bubble") {
  for (const std::string schedule : {"gpipe", "1f1b", "interleaved"})
    for (int p : {2, 4, 8})
      for (int m : {4, 8, 16}) {
        const int v = schedule == "interleaved" ? 2 : 1;
        if (schedule == "interleaved" && m % p != 0) continue;
        const auto units = pipeline_units(schedule, p, m, v);
        CAPTURE(schedule, p, m, v);
        CHECK(count_units(units, true, true) == m * v);
        CHECK(count_units(units, false, true) == m * v);
        CHECK(count_units(units, true, false) == p - 1);
        CHECK(count_units(units, false, false) == p - 1);
        // A chunk's backward comes after its forward; every (microbatch, chunk) once each way.
        std::map<std::pair<int, int>, int> seen;
        for (const auto& u : units) {
          if (u.microbatch < 0) continue;
          auto& state = seen[{u.microbatch, u.chunk}];
          CHECK(state == (u.forward ? 0 : 1));
          ++state;
        }
        CHECK(seen.size() == static_cast<std::size_t>(m * v));
      }
}

TEST_CASE("activations in flight: GPipe all m microbatches, 1F1B at most p") {
  for (int p : {2, 4, 8})
    for (int m : {1, 4, 16, 32}) {
      CAPTURE(p, m);
      CHECK(max_units_in_flight(pipeline_units("gpipe", p, m, 1)) == m);
      CHECK(max_units_in_flight(pipeline_units("1f1b", p, m, 1)) == std::min(p, m));
    }
  // Interleaved, v chunks of 1/v of the layers: Megatron's warm-up, (v - 1) p + 2 (p - 1) + 1
  // chunks, under p + (p - 1) / v microbatches' worth (one more chunk than p v - ... when m > p).
  for (int p : {2, 4})
    for (int v : {2, 4}) {
      const int m = 4 * p;
      const int chunks = max_units_in_flight(pipeline_units("interleaved", p, m, v));
      CAPTURE(p, v, chunks);
      CHECK(chunks == (v - 1) * p + 2 * (p - 1) + 1);
      CHECK(static_cast<double>(chunks) / v < p + 1.0 * p / v);
      CHECK(chunks < m * v);  // fewer than GPipe's
    }
}

TEST_CASE("full remat in a pipeline: a stage keeps its layers' inputs per microbatch in flight") {
  // Full remat keeps each layer's input (b x kPipeS x kPipeD bf16 per microbatch of b
  // sequences) and recomputes the rest before the layer's backward. 2x2 chips x 2 cores = 8
  // cores: pipeline 2 x data 4, 4 x m x b sequences (b per microbatch and replica, enough for
  // the activations to set the peak), kPipeL / p layers a stage; rotary positions, so that the
  // token embedding is the first layer's input (a learned position table's backward reads the
  // token lookup too). GPipe keeps all m microbatches' inputs at its first backward, 1F1B at
  // most p: the activations at the peak grow by (kPipeL / p) x that per microbatch with GPipe
  // and not at all with 1F1B, and without remat each microbatch keeps more than its inputs.
  const int p = 2, b = 32;
  const double per_microbatch = b * (kPipeL / p) * kPipeS * kPipeD * 2.0;
  auto activations = [&](const std::string& schedule, int m, const std::string& remat) {
    const Config cfg =
        pipelined_lm("2x2", 4LL * m * b, {{"pipeline", p}, {"pipeline_schedule", schedule}}, m,
                     {{"remat", remat}, {"positions", "rotary"}});
    const MemoryProfile mem = analyze_memory(program_of(cfg), 1e18);
    return mem.bytes_by_class[static_cast<int>(MemoryClass::Activations)];
  };
  CHECK(activations("gpipe", 8, "full") - activations("gpipe", 4, "full") ==
        Approx(4 * per_microbatch));
  CHECK(activations("1f1b", 8, "full") == Approx(activations("1f1b", 4, "full")));
  // 1F1B keeps at most p microbatches (fewer at its peak, where the one in its backward has
  // freed some of its inputs), GPipe all m.
  CHECK(activations("gpipe", 8, "full") - activations("1f1b", 8, "full") >=
        (8 - p) * per_microbatch);
  CHECK(activations("gpipe", 8, "none") - activations("gpipe", 4, "none") > 4 * per_microbatch);
}

TEST_CASE("the bubble: p - 1 iterations each way on every stage") {
  PipelineInfo info;
  info.stages = 4;
  info.microbatches = 6;
  info.repeats = 2;
  const int iterations = 6 * 2 + 4 - 1;
  for (int s = 0; s < 4; ++s) {
    int f = 0, b = 0;
    for (int it = 0; it < iterations; ++it) {
      f += info.bubble(true, it, s);
      b += info.bubble(false, it, s);
    }
    CHECK(f == 3);
    CHECK(b == 3);
  }
  CHECK(info.bubble(true, iterations - 1, 0));  // stage 0 idles at the end of the forwards
  CHECK(info.bubble(false, 0, 0));              // and at the start of the backwards
  CHECK(info.bubble(true, 0, 3));               // the last stage at the start
}

TEST_CASE("the pipeline axis is registered, outermost, weights divided, batch not split") {
  const auto axes = registered_axes();
  const auto it = std::find_if(axes.begin(), axes.end(),
                               [](const AxisSpec& a) { return a.name == "pipeline"; });
  REQUIRE(it != axes.end());
  CHECK(it->degree->path() == "parallelism.pipeline");
  CHECK_FALSE(it->replica);
  CHECK_FALSE(it->splits_batch);
  CHECK(it->place < kPlaceData);
}

TEST_CASE("a pipelined decoder: mesh, units, permute bytes, stage weights") {
  const int p = 4, m = 8;
  // 2x2 chips x 2 cores = 8 cores: pipeline 4 x data 2; 16 sequences, 8 per replica, 1 per mb.
  const Config cfg = pipelined_lm("2x2", 16, {{"pipeline", p}}, m);
  const Program prog = program_of(cfg);
  REQUIRE(prog.mesh.size() >= 2);
  CHECK(prog.mesh.front().name == "pipeline");
  CHECK(prog.mesh.front().size == p);
  CHECK(prog.examples_per_step == 16);
  REQUIRE(prog.pipeline.stages == p);
  CHECK(prog.pipeline.units.size() == static_cast<std::size_t>(2 * (m + p - 1)));
  // Each permute sends one microbatch's activations (or their gradients): 1 x kPipeS x kPipeD bf16.
  int permutes = 0;
  for (const auto& op : prog.ops)
    if (op.is_collective && op.collective.kind == CollectiveKind::CollectivePermute) {
      ++permutes;
      CHECK(op.collective.axes == std::vector<std::string>{"pipeline"});
      CHECK(op.collective.bytes == Approx(1.0 * kPipeS * kPipeD * 2));
      CHECK(std::abs(op.collective.shift) == 1);
      CHECK_FALSE(op.collective.wrap);
    }
  CHECK(permutes == 2 * (m + p - 1));
  // A stage holds kPipeL / p of the layers' weights (plus the embedding, on every stage).
  const Program whole = program_of(pipelined_lm("2x2", 16, nlohmann::json::object(), 1));
  const double embed =
      1024.0 * kPipeD * 2 + kPipeS * kPipeD * 2;  // token and position tables, bf16
  const double layers_whole = resident_weight_bytes(whole) - embed;
  CHECK(resident_weight_bytes(prog) - embed == Approx(layers_whole / p).epsilon(0.01));
  // The step's model FLOPs are the whole model's, as without the pipeline.
  CHECK(prog.model_flops == Approx(whole.model_flops));
}

TEST_CASE("FSDP within a stage: memory by pipeline x fsdp, the chunk gathered every unit") {
  const int p = 2, f = 2, m = 4;
  // 2x2 chips x 2 cores = 8 cores: pipeline 2 x fsdp 2 x data 2.
  const Program prog = program_of(pipelined_lm("2x2", 16, {{"pipeline", p}, {"fsdp", f}}, m));
  const Program staged = program_of(pipelined_lm("2x2", 16, {{"pipeline", p}}, m));
  // Each core holds 1 / fsdp of its stage's weights, copies, optimizer slots and accumulators.
  auto resident = [](const Program& prog, MemoryClass cls) {
    double s = 0;
    for (const auto& r : prog.resident)
      if (r.cls == cls) s += r.bytes;
    return s;
  };
  for (MemoryClass cls : {MemoryClass::MasterWeights, MemoryClass::WeightCopies,
                          MemoryClass::OptimizerState, MemoryClass::WeightGradients}) {
    INFO(to_string(cls));
    CHECK(resident(prog, cls) > 0);
    CHECK(resident(prog, cls) == Approx(resident(staged, cls) / f));
  }
  // Every forward unit (m + p - 1, bubble units too: SPMD) all-gathers its chunk's weights over
  // "fsdp", the kPipeL / p layers of stage 0 and no layer of another stage: bf16 weights.
  const OpGraph g = graph_of(pipelined_lm("2x2", 16, {{"pipeline", p}, {"fsdp", f}}, m), 1);
  double layer_params = 0;  // one layer's
  for (int v = 0; v < g.size(); ++v)
    if (g.node(v).phase == Phase::Forward && g.node(v).layer == 0)
      layer_params += static_cast<double>(g.node(v).params);
  double gathered = 0;
  for (const auto& op : prog.ops) {
    if (!op.is_collective || op.collective.kind != CollectiveKind::AllGather) continue;
    CHECK(op.collective.axes == std::vector<std::string>{"fsdp"});
    if (op.name.rfind("decoder.", 0) != 0 || op.phase != Phase::Forward) continue;
    CHECK(std::stoi(op.name.substr(8)) < kPipeL / p);
    gathered += op.collective.bytes;
  }
  CHECK(gathered == Approx((m + p - 1) * (kPipeL / p) * layer_params * 2));
  CHECK(prog.model_flops == Approx(staged.model_flops));
}

TEST_CASE("circular stages: permutes wrap, (m v + p - 1) iterations each way") {
  const int p = 2, m = 4, v = 2;
  const Config cfg = pipelined_lm(
      "2x2", 16, {{"pipeline", p}, {"pipeline_repeats", v}, {"pipeline_schedule", "interleaved"}},
      m);
  const Program prog = program_of(cfg);
  CHECK(prog.pipeline.units.size() == static_cast<std::size_t>(2 * (m * v + p - 1)));
  for (const auto& op : prog.ops)
    if (op.is_collective && op.collective.kind == CollectiveKind::CollectivePermute)
      CHECK(op.collective.wrap);
}

TEST_CASE("pipeline errors name their parameter") {
  auto problem = [](const Config& cfg) -> std::string {
    try {
      program_of(cfg);
    } catch (const ConfigError& e) {
      return e.problems().front().where;
    }
    return "";
  };
  CHECK(problem(pipelined_lm("2x2", 16, {{"pipeline", 8}}, 1)) == "");  // 8 layers, 8 stages
  CHECK(problem(pipelined_lm("2x2", 6 * 1, {{"pipeline", 2}}, 1)) == "workload.global_batch");
  CHECK(problem(pipelined_lm("4x2", 16, {{"pipeline", 16}}, 1)) == "parallelism.pipeline");
  CHECK(problem(pipelined_lm(
            "2x2", 16,
            {{"pipeline", 4}, {"pipeline_repeats", 4}, {"pipeline_schedule", "interleaved"}}, 4)) ==
        "parallelism.pipeline_repeats");
  CHECK(problem(pipelined_lm(
            "2x2", 16,
            {{"pipeline", 2}, {"pipeline_repeats", 2}, {"pipeline_schedule", "interleaved"}}, 1)) ==
        "workload.microbatches");
  CHECK(problem(pipelined_lm("2x2", 16, {{"pipeline", 2}, {"pipeline_schedule", "interleaved"}},
                             2)) == "parallelism.pipeline_schedule");
}
