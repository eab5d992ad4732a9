// Pipeline parallelism (docs/pipeline.md): the schedules' units and their closed forms, the
// in-flight activations per schedule, the stage program's permutes and the axis's place in the
// mesh. Expectations from the parameters (stages p, microbatches m, chunks v, the dimensions).
#include <catch2/catch.hpp>
#include <map>

#include "core/errors.hpp"
#include "model_study.hpp"
#include "models/parallelism/pipeline_schedule.hpp"
#include "models/parallelism/rules/axis_registry.hpp"

using namespace tpusim;
using tpusim::test::program_of;

namespace {
// A small decoder: d_model 256, 4 heads, d_ff 1024, vocabulary 1024, 128 tokens, 8 layers.
constexpr long long d = 256, S = 128, L = 8;

Config pipelined_lm(const std::string& topology, long long batch, nlohmann::json parallelism,
                    long long microbatches) {
  nlohmann::json w{{"model", "decoder_lm"},
                   {"global_batch", batch},
                   {"layers", L},
                   {"d_model", d},
                   {"heads", 4},
                   {"d_ff", 1024},
                   {"vocab", 1024},
                   {"seq_len", S},
                   {"microbatches", microbatches}};
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
  // Each permute sends one microbatch's activations (or their gradients): 1 x S x d bf16.
  int permutes = 0;
  for (const auto& op : prog.ops)
    if (op.is_collective && op.collective.kind == CollectiveKind::CollectivePermute) {
      ++permutes;
      CHECK(op.collective.axes == std::vector<std::string>{"pipeline"});
      CHECK(op.collective.bytes == Approx(1.0 * S * d * 2));
      CHECK(std::abs(op.collective.shift) == 1);
      CHECK_FALSE(op.collective.wrap);
    }
  CHECK(permutes == 2 * (m + p - 1));
  // A stage holds L / p of the layers' weights (plus the embedding, on every stage).
  const Program whole = program_of(pipelined_lm("2x2", 16, nlohmann::json::object(), 1));
  const double embed = 1024.0 * d * 2 + S * d * 2;  // token and position tables, bf16
  const double layers_whole = resident_weight_bytes(whole) - embed;
  CHECK(resident_weight_bytes(prog) - embed == Approx(layers_whole / p).epsilon(0.01));
  // The step's model FLOPs are the whole model's, as without the pipeline.
  CHECK(prog.model_flops == Approx(whole.model_flops));
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
