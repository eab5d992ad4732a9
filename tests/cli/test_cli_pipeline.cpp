// Pipeline parallelism through the command (docs/pipeline.md): the bubble each stage waited in
// the report, against the closed forms of the schedules; bad pipeline input is one error line
// naming its JSON path, exit 2.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/cli/sweep_fixture.hpp"

namespace {

// A small decoder of 8 layers on 4 TPU v4 chips in megacore mode: 4 pipeline stages.
nlohmann::json pipeline_study(int microbatches, const std::string& schedule, int repeats) {
  return {
      {"preset", "tpu_v4_megacore"},
      {"topology", {{"name", "v4_2x2x1"}, {"dims", {2, 2, 1}}, {"wrap", {false, false, false}}}},
      {"workload",
       {{"model", "decoder_lm"},
        {"layers", 8},
        {"d_model", 512},
        {"heads", 8},
        {"d_ff", 2048},
        {"vocab", 4096},
        {"seq_len", 256},
        {"global_batch", 2 * microbatches},
        {"microbatches", microbatches}}},
      {"parallelism",
       {{"pipeline", 4}, {"pipeline_schedule", schedule}, {"pipeline_repeats", repeats}}}};
}

nlohmann::json run_json(const SweepScratch& s, const nlohmann::json& study) {
  const auto r = run_tpusim({"run", s.write("study.json", study), "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

double mean_wait(const nlohmann::json& j) { return j["pipeline"]["bubble_ms"].get<double>(); }

}  // namespace

TEST_CASE("the bubble: p - 1 iterations each way on every stage, v times smaller interleaved") {
  SweepScratch s;
  const int p = 4;
  const auto gpipe4 = run_json(s, pipeline_study(4, "gpipe", 1));
  const auto gpipe8 = run_json(s, pipeline_study(8, "gpipe", 1));
  const auto ofob8 = run_json(s, pipeline_study(8, "1f1b", 1));
  const auto inter8 = run_json(s, pipeline_study(8, "interleaved", 2));
  for (const auto* j : {&gpipe4, &gpipe8, &ofob8, &inter8}) {
    const auto& pl = (*j)["pipeline"];
    const int m = pl["microbatches"].get<int>(), v = pl["repeats"].get<int>();
    CHECK(pl["stages"].get<int>() == p);
    CHECK(pl["iterations"].get<int>() == m * v + p - 1);
    CHECK(pl["closed_form_bubble_fraction"].get<double>() ==
          Approx(static_cast<double>(p - 1) / (m * v + p - 1)));
    // Every stage waits p - 1 forward and p - 1 backward iterations; the units a stage > 0
    // idles in hold stage 0's embedding and head in the SPMD program, so within 20 %.
    for (const auto& w : pl["stage_wait_ms"])
      CHECK(w.get<double>() == Approx(pl["bubble_ms"].get<double>()).epsilon(0.2));
    CHECK(pl["bubble_fraction"].get<double>() ==
          Approx(pl["bubble_ms"].get<double>() / (*j)["step_time_ms"].get<double>()));
    // One microbatch's activations per permute: 2 sequences x 256 tokens x d_model 512, bf16.
    CHECK(pl["permute_bytes_per_core"].get<double>() == Approx(2.0 * 256 * 512 * 2));
  }
  // The bubble is (p - 1)(t_f + t_b): not a function of m; the same for GPipe and 1F1B; with
  // v = 2 chunks per stage each iteration is half a stage, so the bubble halves.
  CHECK(mean_wait(gpipe8) == Approx(mean_wait(gpipe4)).epsilon(0.03));
  CHECK(mean_wait(ofob8) == Approx(mean_wait(gpipe8)).epsilon(0.03));
  CHECK(mean_wait(inter8) == Approx(mean_wait(gpipe8) / 2).epsilon(0.05));
  // (m + p - 1)(t_f + t_b) for both GPipe and 1F1B: the same step.
  CHECK(ofob8["step_time_ms"].get<double>() ==
        Approx(gpipe8["step_time_ms"].get<double>()).epsilon(0.05));
  // ... and the step grows by one iteration pair per microbatch: (m + p - 1) with p - 1 of them
  // the bubble, so 4 more microbatches add 4 / (p - 1) bubbles' worth of stage work and their
  // embedding and head.
  const double grow = gpipe8["step_time_ms"].get<double>() - gpipe4["step_time_ms"].get<double>();
  CHECK(grow >= 4.0 / (p - 1) * mean_wait(gpipe4) * 0.98);
  // Activations in flight: GPipe holds all 8 microbatches', 1F1B at most p = 4.
  CHECK(ofob8["memory"]["peak_bytes"].get<double>() < gpipe8["memory"]["peak_bytes"].get<double>());
}

TEST_CASE("bad pipeline input: one error line naming the path, exit 2") {
  SweepScratch s;
  const std::string study = s.write("study.json", pipeline_study(4, "gpipe", 1));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"parallelism.pipeline=3", "parallelism.pipeline: "},
      {"workload.layers=6", "parallelism.pipeline: 4: does not divide the 6 layers"},
      {"parallelism.pipeline_schedule=zero", "parallelism.pipeline_schedule: "},
      {"parallelism.pipeline_repeats=4", "parallelism.pipeline_repeats: 4"},
  };
  for (const auto& [set, prefix] : cases) {
    auto r = run_tpusim(with_sets({"validate", study}, {set}));
    INFO(set << "\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("tpusim: error: " + prefix, 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}
