// Error messages of issue 15: one line per problem, naming the value or JSON path and what is
// allowed, without library internals; all problems of a layout at once; a --set of a preset
// really selects that preset.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cli/sweep_fixture.hpp"

namespace {
std::string messages_tmp(const std::string& name) {
  return "/tmp/tpusim_cli_messages_" + std::to_string(::getpid()) + "_" + name;
}
void messages_write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}
}  // namespace

TEST_CASE(
    "a preset given with --set runs the study with that preset, the file's own keys winning") {
  auto v3 = run_tpusim({"run", "configs/studies/bert_large_16.json", "--json"});
  auto v4 =
      run_tpusim({"run", "configs/studies/bert_large_16.json", "--set", "preset=tpu_v4", "--json"});
  INFO(v4.err);
  REQUIRE(v3.exit_code == 0);
  REQUIRE(v4.exit_code == 0);
  const auto a = nlohmann::json::parse(v3.out), b = nlohmann::json::parse(v4.out);
  const auto v4_preset =
      nlohmann::json::parse(slurp(std::string(TPUSIM_SOURCE_DIR) + "/configs/tpu_v4.json"));
  // The v4 preset's values, except what the study file sets itself (its topology).
  CHECK(b["config"]["hardware"]["name"] == v4_preset["hardware"]["name"]);
  CHECK(b["config"]["hardware"]["clock_MHz"] == v4_preset["hardware"]["clock_MHz"]);
  CHECK(b["config"]["hardware"]["ici"]["bandwidth_GBps"] ==
        v4_preset["hardware"]["ici"]["bandwidth_GBps"]);
  CHECK(b["config"]["topology"] == a["config"]["topology"]);
  CHECK(a["config"]["hardware"]["name"] == "tpu_v3");
}

TEST_CASE("a section given as a value is one problem, not one per parameter under it") {
  auto r = run_tpusim({"validate", "configs/studies/bert_large_16.json", "--set", "hardware=1"});
  CHECK(r.exit_code == 2);
  CHECK(r.err_lines() == 1);
  CHECK_THAT(r.err, Catch::Contains("hardware: expected an object"));
}

TEST_CASE("a choice error lists the choices and no numeric range") {
  auto r = run_tpusim(
      {"validate", "configs/studies/bert_large_16.json", "--set", "network.fidelity=flow_x"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("one of flow, message, packet"));
  CHECK_THAT(r.err, !Catch::Contains("1e+300"));
}

TEST_CASE("a directory given as a study is named as such") {
  auto r = run_tpusim({"run", "configs"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("configs: is a directory"));
}

TEST_CASE("a number a double cannot hold is a JSON error with its position") {
  const std::string f = messages_tmp("overflow.json");
  messages_write(f, "{\"preset\": \"tpu_v3\",\n \"hardware\": {\"clock_MHz\": 1e400}}");
  auto r = run_tpusim({"validate", f});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains(f + ":2:"));
  CHECK_THAT(r.err, Catch::Contains("number overflow"));
  CHECK_THAT(r.err, !Catch::Contains("json.exception"));
  std::remove(f.c_str());
}

TEST_CASE("duplicate JSON keys are an error naming the path") {
  const std::string f = messages_tmp("dup.json");
  messages_write(
      f,
      R"({"preset": "tpu_v3", "hardware": {"ici": {"bandwidth_GBps": 50, "bandwidth_GBps": 70}}})");
  auto r = run_tpusim({"validate", f});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("hardware.ici.bandwidth_GBps: duplicate key"));
  std::remove(f.c_str());
}

TEST_CASE("every layout problem is reported at once") {
  // BERT on 2x2 (8 cores) with spatial 2: BERT has no spatial partitioning, and batch 7 does
  // not divide over the 4 data replicas.
  auto r = run_tpusim({"validate", "configs/studies/bert_large_16.json", "--set", "topology=2x2",
                       "--set", "parallelism.spatial=2", "--set", "workload.global_batch=7"});
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("workload.global_batch"));
  CHECK_THAT(r.err, Catch::Contains("parallelism.spatial"));
  CHECK(r.err_lines() >= 2);
}

TEST_CASE("a merge of shards run with different --set names the difference") {
  SweepScratch s;
  s.write("study.json", small_bert_study());
  const std::string sweep = s.write(
      "sweep.json", {{"base", "study.json"},
                     {"axes", {{{"path", "hardware.ici.latency_ns"}, {"values", {100, 200}}}}}});
  auto a = run_tpusim({"sweep", sweep, "--shard", "1/2", "--out", s.path("a")});
  auto b = run_tpusim({"sweep", sweep, "--shard", "2/2", "--out", s.path("b"), "--set",
                       "hardware.onchip.latency_ns=300"});
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  auto m = run_tpusim({"merge", s.path("a"), s.path("b"), "--out", s.path("m")});
  CHECK(m.exit_code == 2);
  CHECK_THAT(m.err, Catch::Contains("--set hardware.onchip.latency_ns=300"));
  CHECK_THAT(m.err, Catch::Contains("no --set"));
}

TEST_CASE("an error in a trace's recorded hardware names the trace file") {
  const std::string src =
      std::string(TPUSIM_SOURCE_DIR) + "/traces/examples/small_data_model.trace.json";
  auto t = nlohmann::json::parse(slurp(src));
  t["recorded_on"]["hardware"]["clock_MHz"] = -5;
  const std::string f = messages_tmp("bad_recorded.json");
  messages_write(f, t.dump());
  auto r = run_tpusim({"replay", f});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains(f + ": recorded_on.hardware.clock_MHz"));
  std::remove(f.c_str());
}

TEST_CASE("a preset name too long for the file system is an unknown preset, not a crash") {
  // Found by fuzz_study_config (tests/fuzz/regressions/study_config/): std::filesystem threw
  // "File name too long" out of the preset lookup.
  const std::string name(300, 'a');
  auto r =
      run_tpusim({"validate", "configs/studies/bert_large_16.json", "--set", "preset=" + name});
  CHECK(r.exit_code == 2);
  CHECK(r.err_lines() == 1);
  CHECK_THAT(r.err, Catch::Contains("preset"));
}

TEST_CASE("a --set value holds to the limits of a file: unique keys, 256 levels of nesting") {
  auto dup = run_tpusim({"validate", "configs/studies/bert_large_16.json", "--set",
                         R"(network={"fidelity": "flow", "fidelity": "packet"})"});
  CHECK(dup.exit_code == 2);
  CHECK(dup.err_lines() == 1);
  CHECK_THAT(dup.err, Catch::Contains("--set network: fidelity: duplicate key"));
  for (int depth : {300, 21000}) {
    const std::string deep = std::string(depth, '[') + std::string(depth, ']');
    auto r = run_tpusim({"validate", "configs/studies/bert_large_16.json", "--set",
                         "workload.global_batch=" + deep});
    INFO(depth);
    CHECK(r.exit_code == 2);
    CHECK(r.err_lines() == 1);
    CHECK_THAT(r.err, Catch::Contains("--set workload.global_batch: JSON nested deeper than 256"));
  }
}

TEST_CASE("unknown JSON keys, choice values and presets get a did-you-mean") {
  auto key = run_tpusim({"validate", "configs/studies/bert_large_16.json", "--set",
                         "parallelism.weight_update_shardng=true"});
  CHECK(key.exit_code == 2);
  CHECK_THAT(key.err, Catch::Contains("parallelism.weight_update_shardng: unknown key") &&
                          Catch::EndsWith("did you mean 'weight_update_sharding'?\n"));
  auto choice = run_tpusim(
      {"validate", "configs/studies/bert_large_16.json", "--set", "network.fidelity=flw"});
  CHECK(choice.exit_code == 2);
  CHECK_THAT(choice.err, Catch::EndsWith("did you mean 'flow'?\n"));
  auto topology = run_tpusim(
      {"validate", "configs/studies/bert_large_16.json", "--set", "topology=tpu_v3_multipods"});
  CHECK(topology.exit_code == 2);
  CHECK(topology.err_lines() == 1);
  CHECK_THAT(topology.err, Catch::Contains("'tpu_v3_multipods' is not a known topology") &&
                               Catch::EndsWith("did you mean 'tpu_v3_multipod'?\n"));
  // The preset list names presets only: configs/*.json and configs/topologies/*.json, not the
  // studies or the sweep files under configs/studies/sweeps/.
  auto preset =
      run_tpusim({"validate", "configs/studies/bert_large_16.json", "--set", "preset=tpu_v33"});
  CHECK(preset.exit_code == 2);
  CHECK(preset.err_lines() == 1);
  CHECK_THAT(preset.err,
             Catch::Contains("unknown preset 'tpu_v33'") && Catch::Contains("tpu_v3_pod") &&
                 Catch::Contains("tpu_v4") && !Catch::Contains("bert_weak_scaling") &&
                 !Catch::Contains("bert_large_16") && Catch::EndsWith("did you mean 'tpu_v3'?\n"));
  // Far from every name: no guess.
  auto far = run_tpusim(
      {"validate", "configs/studies/bert_large_16.json", "--set", "network.fidelity=zzzzzzzz"});
  CHECK_THAT(far.err, !Catch::Contains("did you mean"));
}

TEST_CASE("a --set that is not UTF-8 is one error line, not an internal error") {
  // Found by fuzz_set_value: the bytes went into the study and failed when it was written out.
  for (const std::string& set :
       {std::string("workload.model=\x8b"), std::string("work\xffload=1")}) {
    auto r = run_tpusim({"validate", "configs/studies/bert_large_16.json", "--set", set});
    CHECK(r.exit_code == 2);
    CHECK(r.err_lines() == 1);
    CHECK_THAT(r.err, Catch::StartsWith("tpusim: error: --set: the ") &&
                          Catch::Contains("is not UTF-8 text"));
  }
}
