// Language-model reports end to end (docs/llm.md): model and hardware FLOPs utilisation against
// the MXU's efficiency on a compute-bound toy, tokens per second, communication by mesh axis.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/cli/run_tpusim.hpp"
#include "tests/cli/sweep_fixture.hpp"

namespace {
using json = nlohmann::json;

// One chip in megacore mode (one core, no collectives); every dimension a multiple of the
// 128 x 128 MXU tiles and of its 8 arrays; no fill and drain, no launch cost, a vector unit and
// HBM so fast that only the MXU takes time.
const std::vector<std::string> kToy = {"run",   "configs/studies/decoder_1b_16.json",
                                       "--set", "topology=1x1",
                                       "--set", "parallelism.model=1",
                                       "--set", "parallelism.fsdp=1",
                                       "--set", "workload.global_batch=1",
                                       "--set", "workload.layers=2",
                                       "--set", "workload.d_model=1024",
                                       "--set", "workload.heads=8",
                                       "--set", "workload.d_ff=4096",
                                       "--set", "workload.vocab=8192",
                                       "--set", "workload.seq_len=512",
                                       "--set", "hardware.calibration.op_overhead_ns=0",
                                       "--set", "hardware.mxu.fill_drain_cycles=0",
                                       "--set", "hardware.vpu.lanes=4096",
                                       "--set", "hardware.vpu.sublanes=1024",
                                       "--set", "hardware.hbm.bandwidth_GBps_per_core=1e6",
                                       "--set", "hardware.hbm.latency_ns=0",
                                       "--json"};

json llm_json(std::vector<std::string> args, const std::vector<std::string>& extra = {}) {
  args.insert(args.end(), extra.begin(), extra.end());
  const TpusimResult r = run_tpusim(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}
}  // namespace

TEST_CASE("MFU of a compute-bound toy model equals the MXU efficiency, and HFU counts recompute") {
  const json none = llm_json(kToy);
  const double eff = none["config"]["hardware"]["calibration"]["mxu_efficiency"];
  CHECK(none["mfu"].get<double>() == Approx(eff).epsilon(2e-3));
  CHECK(none["hfu"].get<double>() == Approx(eff).epsilon(2e-3));

  // Full rematerialisation recomputes each layer's forward: per token 2 x (the layer's weights
  // 4 d^2 + 2 d F) + 4 s d of attention. The model's FLOPs per token: 6N + 12 L s d.
  const json full = llm_json(kToy, {"--set", "workload.remat=full"});
  const double d = 1024, F = 4096, V = 8192, s = 512, L = 2;
  const double N = L * (4 * d * d + 2 * d * F) + V * d;
  const double model = 6 * N + 12 * L * s * d;
  const double recompute = L * (2 * (4 * d * d + 2 * d * F) + 4 * s * d);
  CHECK(full["hfu"].get<double>() == Approx(eff).epsilon(2e-3));
  CHECK(full["mfu"].get<double>() == Approx(eff * model / (model + recompute)).epsilon(2e-3));
  CHECK(full["tokens_per_step"].get<double>() == s);
  CHECK(full["tokens_per_s_per_chip"].get<double>() ==
        Approx(s / (full["step_time_ms"].get<double>() * 1e-3)));
}

TEST_CASE("the communication of a sharded decoder is reported by mesh axis") {
  const TpusimResult r = run_tpusim(
      {"run", "configs/studies/decoder_1b_16.json", "--set", "workload.layers=2", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  REQUIRE(j.contains("collectives_by_axis"));
  CHECK(j["collectives_by_axis"].contains("fsdp"));
  CHECK(j["collectives_by_axis"].contains("model"));
  CHECK(j["collectives_by_axis"]["fsdp"]["bytes_per_core"].get<double>() > 0);
  const TpusimResult text =
      run_tpusim({"run", "configs/studies/decoder_1b_16.json", "--set", "workload.layers=2"});
  CHECK(text.out.find("model FLOPs utilisation") != std::string::npos);
  CHECK(text.out.find("communication by mesh axis") != std::string::npos);
}

TEST_CASE("a language-model layout that does not fit is one line naming the path, exit 2") {
  const TpusimResult r =
      run_tpusim({"run", "configs/studies/decoder_1b_16.json", "--set", "parallelism.fsdp=3"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("parallelism.fsdp") != std::string::npos);
  CHECK(r.err_lines() == 1);
  const TpusimResult off = run_tpusim(
      {"run", "configs/studies/decoder_1b_16.json", "--set", "topology=8x6", "--set",
       "parallelism.fsdp=1", "--set", "workload.heads=12", "--set", "workload.d_model=3072",
       "--set", "parallelism.model=12", "--set", "workload.d_ff=12288"});
  CHECK(off.exit_code == 2);
  CHECK(off.err.find("parallelism.model") != std::string::npos);
  CHECK(off.err.find("does not map onto the torus") != std::string::npos);
}

TEST_CASE("2D and sequence-axis layouts run - a degree that does not divide is one line, exit 2") {
  const std::vector<std::string> small = {"run",   "configs/studies/decoder_1b_16.json",
                                          "--set", "workload.layers=2",
                                          "--set", "workload.seq_len=256",
                                          "--set", "parallelism.fsdp=2",
                                          "--set", "parallelism.shard_activations=true",
                                          "--json"};
  const json j =
      llm_json(small, {"--set", "parallelism.model2=2", "--set", "parallelism.sequence=2"});
  for (const char* axis : {"model", "model2", "sequence", "fsdp"})
    CHECK(j["collectives_by_axis"][axis]["bytes_per_core"].get<double>() > 0);
  const json a2a = llm_json(small, {"--set", "parallelism.sequence=2", "--set",
                                    "parallelism.sequence_attention=all_to_all"});
  CHECK(a2a["collectives"]["all-to-all"]["count"].get<double>() > 0);
  // The model FLOPs of the step (MFU x step time x the same cores' peak) do not depend on the
  // layout.
  const json plain = llm_json(small);
  const double flops_2d = j["mfu"].get<double>() * j["step_time_ms"].get<double>();
  CHECK(flops_2d == Approx(plain["mfu"].get<double>() * plain["step_time_ms"].get<double>()));

  auto refused = [](std::vector<std::string> sets, const std::string& path) {
    std::vector<std::string> args = {"run", "configs/studies/decoder_1b_16.json"};
    for (const auto& s : sets) args.insert(args.end(), {"--set", s});
    const TpusimResult r = run_tpusim(args);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(path) != std::string::npos);
    CHECK(r.err_lines() == 1);
    return r.err;
  };
  // model2 without sharded activations.
  refused({"parallelism.fsdp=1", "parallelism.model2=2"}, "parallelism.model2");
  // d_model 2052 over model2 8 (4 heads of 513).
  CHECK(refused({"parallelism.fsdp=1", "parallelism.model2=8", "parallelism.shard_activations=true",
                 "workload.d_model=2052", "workload.heads=4"},
                "parallelism.model2")
            .find("workload.d_model") != std::string::npos);
  // 250 tokens over sequence 4.
  CHECK(refused({"parallelism.fsdp=1", "parallelism.sequence=4", "workload.seq_len=250"},
                "parallelism.sequence")
            .find("workload.seq_len") != std::string::npos);
  // 4 sequences over the 4 replicas of model 2 x model2 2 leave 1 per replica, which the
  // attention cannot split over model2.
  refused({"parallelism.fsdp=1", "parallelism.model2=2", "parallelism.shard_activations=true",
           "workload.global_batch=4"},
          "parallelism.model2");
  // 4 heads over model 2 leave 2 per model core, which all-to-all over sequence 8 cannot split.
  refused({"parallelism.fsdp=1", "parallelism.sequence=8", "workload.heads=4",
           "parallelism.sequence_attention=all_to_all"},
          "parallelism.sequence");
  // On 8 x 6 chips model2 6 outside model 2 is no sub-grid (4 chips of X left).
  CHECK(refused({"topology=8x6", "parallelism.fsdp=1", "parallelism.model2=6",
                 "parallelism.shard_activations=true", "workload.global_batch=24",
                 "workload.d_model=3072"},
                "parallelism.model2")
            .find("does not map onto the torus") != std::string::npos);
}

// Pipeline parallelism through the command (docs/pipeline.md): the bubble each stage waited in
// the report, against the closed forms of the schedules; bad pipeline input is one error line
// naming its JSON path, exit 2.
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
