// Multipod-scale runs whose checks are of outputs (a result where a limit could have refused,
// the schedule of a shipped 4096-chip study, a linear parse): in the Release run of the test
// command only, with the optimised binary users run. Under the sanitizers they took 5 to 10 times
// as long (an 8192-core replay 84 s); the same code runs there at small sizes in the other files.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/run_tpusim.hpp"
#include "tests/cli/trace_text.hpp"

namespace {
std::string scale_tmp(const std::string& name) {
  return "/tmp/tpusim_cli_scale_" + std::to_string(::getpid()) + "_" + name;
}
}  // namespace

TEST_CASE("an all-to-all over the Multipod runs per dimension") {
  // auto exchanges along each dimension's lines (128 and 32 chips, then the 2 cores): a result
  // (direct is refused: tests/cli/test_limits.cpp).
  const auto r = run_tpusim(
      {"collective", "--op", "all-to-all", "--bytes", "1", "--topology", "tpu_v3_multipod"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("per_dimension"));
}

TEST_CASE("the example profile rescaled to the Multipod replays") {
  // Its all-to-all spans every device and runs per dimension (direct is refused:
  // tests/cli/test_limits.cpp).
  const auto r = run_tpusim({"replay", "traces/examples/profile_tpu_v3_8.trace.json", "--topology",
                             "tpu_v3_multipod", "--mesh", "data=2048,model=4", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["cores"] == 8192);
  CHECK(j["collectives"]["all-to-all"]["count"] == 1);
  CHECK(j["step_time_ms"].get<double>() > j["communication_ms"].get<double>());
}

TEST_CASE("a 1 GiB all-reduce in 16-byte packets travels as packet trains") {
  // A record per train, not per packet: a result where 2^26 packets one by one would pass
  // kMaxPackets (tests/cli/test_limits.cpp).
  const auto r =
      run_tpusim({"collective", "--op", "all-reduce", "--bytes", "1GiB", "--topology", "2x2",
                  "--set", "network.fidelity=packet", "--set", "network.packet_bytes=16"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
}

TEST_CASE("a trace of 200k ops is read in seconds") {
  // The parse is linear: no per-value callback (the depth limit and unique keys are checked by
  // the parser's own handler). 60 s leaves room for the sanitizer build; Release takes ~1 s.
  std::string ops;
  for (int i = 0; i < 200000; ++i)
    ops +=
        std::string(i ? "," : "") +
        R"({"name": "a", "kind": "k", "phase": "forward", "dtype": "bf16", "compute": {"flops": )" +
        std::to_string(i + 1) + R"(, "bytes_read": 1, "bytes_written": 1}})";
  const std::string f = scale_tmp("big.json");
  std::ofstream(f, std::ios::binary) << trace_with(ops);
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_tpusim({"trace", "info", f, "--json"});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.out)["ops"] == 200000);
  CHECK(s < 60);
  std::remove(f.c_str());
}

TEST_CASE("tpusim train bert_large_4096 --json: time to train from the study's facts alone") {
  auto r = run_tpusim({"train", "configs/studies/bert_large_4096.json", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schedule"]["target_steps"] == 496);
  CHECK(j["schedule"]["evaluations"] == 8);
  CHECK(j["hosts"] == 512);  // 4096 chips, 4x2 per host
  // 496 training steps of the simulated step, 8 evaluations of 2 eval steps, nothing input-bound
  // with the default hosts: the total is those plus the start-up and the 8 loop round trips.
  const auto& p = j["per_step"];
  const double predicted =
      j["breakdown"]["startup_s"].get<double>() +
      1e-3 * (p["first_train_step_ms"].get<double>() +
              7 * p["loop_first_train_step_ms"].get<double>() +
              8 * 61 * p["train_step_ms"].get<double>() + 8 * 2 * p["eval_step_ms"].get<double>()) +
      8 * 1e-6 * j["config"]["train"]["loop_round_trip_us"].get<double>();
  CHECK(j["breakdown"]["input_stall_s"].get<double>() == 0);
  CHECK(j["time_to_train_s"].get<double>() == Approx(predicted).epsilon(1e-9));
  CHECK(j["time_to_train_s"].get<double>() > 496 * p["train_step_ms"].get<double>() * 1e-3);
}
