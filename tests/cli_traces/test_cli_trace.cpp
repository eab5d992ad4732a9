// tpusim trace import / info / rescale and replay, run as a user would.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "tests/cli/run_tpusim.hpp"

namespace {
std::string trace_tmp(const std::string& name) {
  return "/tmp/tpusim_cli_trace_" + std::to_string(::getpid()) + "_" + name;
}
const std::string kProfile = "traces/examples/profile_tpu_v3_8.json";
const std::string kExample = "traces/examples/small_data_model.trace.json";
}  // namespace

TEST_CASE("trace import writes a trace that trace info summarises") {
  const std::string out = trace_tmp("import.json.gz");
  auto r = run_tpusim(
      {"trace", "import", kProfile, "--out", out, "--step", "0", "--mesh", "data=2,model=4"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains(
                        "imported 12 ops (6 collectives) from /device:TPU:0; 8 of 8 TPU devices"));
  auto info = run_tpusim({"trace", "info", out, "--json"});
  REQUIRE(info.exit_code == 0);
  const auto s = nlohmann::json::parse(info.out);
  CHECK(s["ops"] == 12);
  CHECK(s["collectives"] == 6);
  CHECK(s["devices"] == 8);
  CHECK(s["collectives_by_kind"]["all-reduce"]["count"] == 2);
  // f32[1024,256] + bf16[2048,1024], per core.
  CHECK(s["collectives_by_kind"]["all-reduce"]["bytes"].get<double>() ==
        1024.0 * 256 * 4 + 2048.0 * 1024 * 2);
  CHECK(s["collectives_by_group"]["model"]["count"] == 1);
  CHECK(s["recorded_on"]["source"] == "tpusim trace import");
  auto text = run_tpusim({"trace", "info", out});
  CHECK_THAT(text.out, Catch::Contains("mesh: data 2 x model 4 (8 devices)"));
  std::remove(out.c_str());
}

TEST_CASE("trace import warns on stderr and without --sizes names the op that needs a size") {
  auto r = run_tpusim({"trace", "import", "traces/examples/profile_needs_sizes.json", "--out",
                       trace_tmp("x.json")});
  CHECK(r.exit_code == 2);
  CHECK(r.err_lines() == 1);
  CHECK_THAT(r.err, Catch::StartsWith("tpusim: error: traces/examples/profile_needs_sizes.json: "
                                      "traceEvents[3] (all-reduce.2): no size"));
  auto ok = run_tpusim({"trace", "import", "traces/examples/profile_needs_sizes.json", "--out",
                        trace_tmp("x.json"), "--sizes",
                        "traces/examples/profile_needs_sizes.sizes.json"});
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.err, Catch::Contains("/device:TPU:1 runs a different op sequence"));
  std::remove(trace_tmp("x.json").c_str());
}

TEST_CASE("trace rescale grows the data axis and refuses groups that follow no axis") {
  auto bad =
      run_tpusim({"trace", "rescale", kExample, "--mesh", "data=8", "--out", trace_tmp("r.json")});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err_lines() == 1);
  CHECK_THAT(bad.err, Catch::StartsWith("tpusim: error: " + kExample +
                                        ": ops[8] (bn.stats): its explicit replica groups"));
  const std::string imported = trace_tmp("imp.json");
  REQUIRE(run_tpusim({"trace", "import", kProfile, "--out", imported, "--step", "0", "--mesh",
                      "data=2,model=4", "--examples-per-step", "16"})
              .exit_code == 0);
  auto ok =
      run_tpusim({"trace", "rescale", imported, "--mesh", "data=64", "--out", trace_tmp("r.json")});
  REQUIRE(ok.exit_code == 0);
  const auto s =
      nlohmann::json::parse(run_tpusim({"trace", "info", trace_tmp("r.json"), "--json"}).out);
  CHECK(s["devices"] == 64 * 4);
  CHECK(s["examples_per_step"] == 16 / 2 * 64);
  CHECK(s["recorded_on"]["rescaled_from"] == "data 2 x model 4");
  CHECK_FALSE(s["recorded_on"].contains("topology"));
  std::remove(imported.c_str());
  std::remove(trace_tmp("r.json").c_str());
}

TEST_CASE("bad trace input is one error line naming the file and place with exit code 2") {
  const std::string path = trace_tmp("bad.json");
  std::FILE* f = std::fopen(path.c_str(), "w");
  std::fputs(
      R"({"format": "tpusim-trace", "version": 7, "model": "m", "examples_per_step": 0, "mesh": [], "ops": []})",
      f);
  std::fclose(f);
  auto r = run_tpusim({"trace", "info", path});
  CHECK(r.exit_code == 2);
  CHECK(r.err_lines() == 1);
  CHECK(r.err ==
        "tpusim: error: " + path + ": version: 7 is not a version this tpusim reads; expected 1\n");
  auto missing = run_tpusim({"trace", "info", trace_tmp("does-not-exist.json")});
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err, Catch::Contains("cannot open file"));
  auto mesh = run_tpusim(
      {"trace", "import", kProfile, "--out", trace_tmp("m.json"), "--mesh", "data=three"});
  CHECK(mesh.exit_code == 2);
  CHECK_THAT(mesh.err, Catch::StartsWith("tpusim: error: --mesh: 'data=three': size must be"));
  std::remove(path.c_str());
}

TEST_CASE("replay plays a trace on its recorded topology and prints the run report") {
  auto r = run_tpusim({"replay", kExample, "--json"});
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["chips"] == 4);  // recorded_on.topology: 2x2 chips
  CHECK(j["cores"] == 8);
  CHECK(j["global_batch"] == 32);
  CHECK(j["step_time_ms"].get<double>() > 0);
  CHECK(j["collective_ops"] == 5);
  CHECK(j["trace"]["recorded_mesh"] == "data 4 x model 2");
  auto text = run_tpusim({"replay", kExample});
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::Contains("step time"));
}

TEST_CASE("replay uses measured durations for compute unless told to use the hardware model") {
  // Every core runs the same ops, so the compute time of the last core is the sum of the
  // measured durations of TPU:0 in step 0 of the profile: 120.5 + 80.25 + 60 + 15.75 + 10 + 30 us.
  const double measured_ms = (120.5 + 80.25 + 60 + 15.75 + 10 + 30) * 1e-3;
  const std::string t = "traces/examples/profile_tpu_v3_8.trace.json";
  auto m = run_tpusim({"replay", t, "--topology", "2x2", "--json"});
  REQUIRE(m.exit_code == 0);
  const auto jm = nlohmann::json::parse(m.out);
  CHECK(jm["compute_ms"].get<double>() == Approx(measured_ms).epsilon(1e-9));
  CHECK(jm["step_time_ms"].get<double>() >= measured_ms);
  auto h = run_tpusim({"replay", t, "--topology", "2x2", "--durations", "model", "--json"});
  REQUIRE(h.exit_code == 0);
  CHECK(nlohmann::json::parse(h.out)["compute_ms"].get<double>() != Approx(measured_ms));
  CHECK(nlohmann::json::parse(h.out)["trace"]["durations"] == "model");
}

TEST_CASE("replay with --mesh rescales and needs a topology that fits the new mesh") {
  const std::string t = "traces/examples/profile_tpu_v3_8.trace.json";
  auto r = run_tpusim({"replay", t, "--topology", "4x4", "--mesh", "data=8", "--json"});
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["cores"] == 32);
  CHECK(j["global_batch"] == 16 / 2 * 8);
  CHECK(j["trace"]["replayed_mesh"] == "data 8 x model 4");
  auto no_fit = run_tpusim({"replay", t, "--topology", "4x4"});
  CHECK(no_fit.exit_code == 2);
  CHECK(no_fit.err_lines() == 1);
  CHECK_THAT(no_fit.err,
             Catch::Contains("the trace's mesh (data 2 x model 4 = 8 cores) does not fit"));
  auto no_topology = run_tpusim({"replay", t});
  CHECK(no_topology.exit_code == 2);
  CHECK_THAT(no_topology.err, Catch::Contains("--topology: the trace records no topology"));
  auto not_rescalable = run_tpusim({"replay", kExample, "--topology", "4x2", "--mesh", "data=8"});
  CHECK(not_rescalable.exit_code == 2);
  CHECK_THAT(not_rescalable.err, Catch::Contains(kExample + ": ops[8] (bn.stats)"));
}

TEST_CASE("replaying a recorded run on the same machine reproduces its step time exactly") {
  const std::string trace = trace_tmp("bert16.json.gz");
  auto run =
      run_tpusim({"run", "configs/studies/bert_large_16.json", "--record-trace", trace, "--json"});
  REQUIRE(run.exit_code == 0);
  auto replay = run_tpusim({"replay", trace, "--json"});
  REQUIRE(replay.exit_code == 0);
  const auto a = nlohmann::json::parse(run.out);
  const auto b = nlohmann::json::parse(replay.out);
  CHECK(b["step_time_ms"].get<double>() == a["step_time_ms"].get<double>());
  CHECK(b["communication_ms"].get<double>() == a["communication_ms"].get<double>());
  CHECK(b["ops"] == a["ops"]);
  CHECK(b["chips"] == a["chips"]);
  CHECK(b["layout"] == a["layout"]);
  // Rescaled to twice the replicas on twice the chips, the per-core compute stays.
  auto bigger =
      run_tpusim({"replay", trace, "--topology", "tpu_v3_8x8", "--mesh", "data=128", "--json"});
  REQUIRE(bigger.exit_code == 0);
  const auto c = nlohmann::json::parse(bigger.out);
  CHECK(c["chips"] == 64);
  CHECK(c["global_batch"] == a["global_batch"].get<int>() * 4);
  CHECK(c["compute_ms"].get<double>() == Approx(a["compute_ms"].get<double>()));
  std::remove(trace.c_str());
}

TEST_CASE("a profile given where a trace is expected says to import it") {
  auto r = run_tpusim({"trace", "info", kProfile});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "tpusim: error: " + kProfile +
                     ": is a Chrome trace event file (a profile), not a tpusim trace; convert it "
                     "with tpusim trace import\n");
}

TEST_CASE("replay: FLOPs past the matmul shape are refused, past the peak counted at peak") {
  // TPU-v3 core peak: 2 MXUs of 128 x 128 multiply-adds at 940 MHz (configs/tpu_v3.json).
  const double peak = 2.0 * 128 * 128 * 2 * 940e6;
  nlohmann::json t = nlohmann::json::parse(slurp(TPUSIM_SOURCE_DIR "/" + kExample));
  REQUIRE(t["ops"][1]["name"] == "mlp.gelu.fwd");
  const double measured_s = t["ops"][1]["compute"]["measured_ns"].get<double>() * 1e-9;
  const std::string path = trace_tmp("flops.json");
  auto replay_with = [&](double flops, const std::string& durations) {
    t["ops"][1]["compute"]["flops"] = flops;
    std::ofstream(path) << t.dump();
    return run_tpusim({"replay", path, "--durations", durations, "--json"});
  };
  auto fits = replay_with(0.5 * peak * measured_s, "measured");
  INFO(fits.err);
  CHECK(fits.exit_code == 0);
  CHECK_THAT(fits.err, !Catch::Contains("claim more FLOPs"));
  // A measured duration that cannot hold the op's FLOPs (the issue's trace claimed 1e13 times
  // the peak): replayed, named in a warning, and counted at peak, so the utilization stays a
  // fraction.
  auto over = replay_with(1e13 * peak * measured_s, "measured");
  CHECK(over.exit_code == 0);
  CHECK_THAT(over.err, Catch::Contains(path + ": 1 op(s) claim more FLOPs") &&
                           Catch::Contains("ops[1] (mlp.gelu.fwd)") &&
                           Catch::Contains("in 850.5 ns"));
  const double utilization = nlohmann::json::parse(over.out)["mxu_utilization"].get<double>();
  CHECK(utilization > 0);
  CHECK(utilization <= 1.0);
  // Modelled from the hardware, the op (vector work on 16384 elements, no matmul shape) takes far
  // less than the millisecond these FLOPs would need at peak: counted at peak too.
  auto model = replay_with(peak * 1e-3, "model");
  CHECK(model.exit_code == 0);
  CHECK_THAT(model.err, Catch::Contains("ops[1] (mlp.gelu.fwd)"));
  // It says why, in one sentence: the model times an op without a matmul shape by its vector
  // and HBM work, not by the FLOPs the trace counts.
  CHECK_THAT(model.err, Catch::Contains("Why: with --durations model an op without a matmul "
                                        "shape is timed by its vector-unit and HBM work alone"));
  CHECK_THAT(over.err, Catch::Contains("Why: the measured duration is shorter than these FLOPs "
                                       "take at this chip's peak"));
  CHECK(nlohmann::json::parse(model.out)["mxu_utilization"].get<double>() <= 1.0);
  // More FLOPs than the matmul shape of ops[0] holds (2 x 1 x 8 x 1024 x 2048): refused.
  t["ops"][1]["compute"]["flops"] = 0;
  REQUIRE(t["ops"][0]["compute"]["matmul"]["k"] == 1024);
  t["ops"][0]["compute"]["flops"] = 2 * 2.0 * 8 * 1024 * 2048;
  std::ofstream(path) << t.dump();
  for (const char* durations : {"measured", "model"}) {
    auto shape = run_tpusim({"replay", path, "--durations", durations});
    CHECK(shape.exit_code == 2);
    CHECK(shape.err_lines() == 1);
    CHECK_THAT(shape.err,
               Catch::Contains(path + ": ops[0] (mlp.in.fwd): claims 67108864 FLOPs, "
                                      "more than its matmul shape holds (2 x 1 x 8 x 1024 x "
                                      "2048 = 33554432)"));
  }
  std::remove(path.c_str());
}
