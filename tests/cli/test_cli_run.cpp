#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "tests/cli/bad_input.hpp"

namespace {
const char* kCliRunStudy = "configs/studies/bert_large_16.json";

void check_bad_run(const std::vector<std::string>& sets, const std::string& named) {
  check_bad_input(run_tpusim(with_sets({"run", kCliRunStudy}, sets)), named);
}
}  // namespace

TEST_CASE("tpusim run --json reports a step whose parts add up") {
  auto r = run_tpusim({"run", kCliRunStudy, "--json"});
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  for (const char* key :
       {"schema_version", "tpusim_version", "step_time_ms", "compute_ms", "communication_ms",
        "exposed_communication_ms", "comm_share", "mxu_utilization", "examples_per_s", "config"})
    CHECK(j.contains(key));
  const double step = j["step_time_ms"].get<double>();
  CHECK(j["comm_share"].get<double>() == Approx(j["communication_ms"].get<double>() / step));
  CHECK(j["examples_per_s"].get<double>() == Approx(32 / (step * 1e-3)));
  // Cores wait for their collectives (tpu_v3 default): compute and communication fill the step.
  CHECK(j["compute_ms"].get<double>() + j["exposed_communication_ms"].get<double>() ==
        Approx(step).epsilon(1e-6));
  CHECK(j["mxu_utilization"].get<double>() > 0);
  CHECK(j["mxu_utilization"].get<double>() < 1);
  CHECK(j["config"]["topology"]["dims"] == nlohmann::json::array({4, 4}));
  CHECK(j["chips"] == 16);
}

TEST_CASE("tpusim validate checks a study without simulating it") {
  auto r = run_tpusim({"validate", kCliRunStudy});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::StartsWith("ok: "));
}

TEST_CASE("run with a timeline writes a Chrome trace with a track per core and link counters") {
  const std::string path = "/tmp/tpusim_timeline_test.json";
  std::remove(path.c_str());
  // Two of the 24 encoder layers: every kind of event in a twelfth of the timeline.
  auto r = run_tpusim({"run", kCliRunStudy, "--set", "workload.layers=2", "--timeline", path});
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(slurp(path));
  std::set<int> tids;
  bool compute = false, collective = false, counter = false;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") {
      tids.insert(e["tid"].get<int>());
      compute |= e["cat"] == "matmul";
      collective |= e["cat"].get<std::string>().rfind("collective:", 0) == 0;
      CHECK(e["dur"].get<double>() >= 0);
    }
    counter |= e["ph"] == "C";
  }
  CHECK(tids.size() == 32);  // 16 chips x 2 cores: all cores of a small slice
  CHECK(compute);
  CHECK(collective);
  CHECK(counter);
  std::remove(path.c_str());
}

TEST_CASE("bad studies are one error line naming the JSON path with exit code 2") {
  check_bad_run({"workload.global_batch=33"}, "workload.global_batch");
  check_bad_run({"parallelism.model=3"}, "parallelism.model");
  check_bad_run({"workload.model=gpt3"}, "workload.model");
  check_bad_run({"topology=0x4"}, "topology");
  check_bad_run({"topology=64x64"}, "workload.global_batch");  // 32 sequences over 8192 cores
  check_bad_run({"parallelism.model=32", "workload.vocab=30528"}, "parallelism.model");  // 16 heads
  // Several problems at once: one line each, all reported before anything runs.
  auto several = run_tpusim({"run", kCliRunStudy, "--set", "workload.global_batch=x", "--set",
                             "hardware.clock_MHz=-1", "--set", "network.speed=3"});
  CHECK(several.exit_code == 2);
  CHECK(several.err_lines() == 3);
  CHECK_THAT(several.err, Catch::Contains("workload.global_batch") &&
                              Catch::Contains("hardware.clock_MHz") &&
                              Catch::Contains("network.speed"));
  auto huge = run_tpusim({"run", "tests/data/huge_number.json"});
  CHECK(huge.exit_code == 2);
  CHECK(huge.err_lines() == 1);
  CHECK_THAT(huge.err, Catch::Contains("huge_number.json"));
  auto missing = run_tpusim({"run", "no/such/study.json"});
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err, Catch::Contains("no/such/study.json"));
}

TEST_CASE("a long run shows a progress line on a terminal, and nothing when piped") {
  // The line comes once a second; TPUSIM_PROGRESS_INTERVAL_S=0.05 makes a packet-level
  // all-reduce over a pod (half a second in a Release build) a long run.
  const std::string env = "TPUSIM_PROGRESS_INTERVAL_S=0.05";
  const std::vector<std::string> args = {
      "collective", "--op", "all-reduce", "--bytes", "64MiB", "--topology", "tpu_v3_pod", "--set",
      "network.fidelity=packet", "--set", "network.packet_bytes=2048",
      // every core and every ring step on its own: a symmetric or coalesced run is over too soon
      "--set", "sim.symmetry=off", "--set", "network.coalesce_ring_steps=false"};
  // script(1) runs the command on a pseudo-terminal (stderr a terminal, stdout /dev/null) and
  // returns its exit status; what the terminal showed lands in a file.
  const auto on_terminal = [&args](const std::string& environment, std::string& shown) {
    std::string cmd = "env " + environment + " " + shell_quote(TPUSIM_BIN);
    for (const auto& a : args) cmd += " " + shell_quote(a);
    const std::string tty = "/tmp/tpusim_progress_" + std::to_string(::getpid());
    const int status = std::system(("cd " + shell_quote(TPUSIM_SOURCE_DIR) + " && script -qec " +
                                    shell_quote(cmd + " 2>&1 >/dev/null") + " /dev/null > " + tty)
                                       .c_str());
    shown = slurp(tty);
    std::remove(tty.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  std::string shown;
  CHECK(on_terminal(env, shown) == 0);
  CHECK_THAT(shown, Catch::Contains("tpusim: simulated ") &&
                        Catch::Contains("slowest core at op") && Catch::Contains("\033[K"));
  // The Program is one collective: the lines count the part of its expected time that has
  // passed, so they show a fraction short of the whole and an estimate of what is left (before,
  // a collective in flight counted as done: "op 1 of 1 (100 %), about 0 s left").
  std::vector<int> percents;
  const std::regex percent(R"(of 1 \((\d+) %\))");
  for (auto it = std::sregex_iterator(shown.begin(), shown.end(), percent);
       it != std::sregex_iterator(); ++it)
    percents.push_back(std::stoi((*it)[1].str()));
  INFO(shown);
  REQUIRE_FALSE(percents.empty());
  CHECK(std::any_of(percents.begin(), percents.end(), [](int p) { return p > 0 && p < 100; }));
  CHECK_THAT(shown, Catch::Contains("left"));
  auto piped = run_tpusim_env(env, args);
  CHECK(piped.exit_code == 0);
  CHECK_THAT(piped.err, !Catch::Contains("simulated"));
  // An interval that is not a number of seconds is one error line naming the variable, on a
  // terminal and piped.
  CHECK(on_terminal("TPUSIM_PROGRESS_INTERVAL_S=soon", shown) == 2);
  CHECK_THAT(shown, Catch::Contains("TPUSIM_PROGRESS_INTERVAL_S") && Catch::Contains("'soon'"));
  auto bad = run_tpusim_env("TPUSIM_PROGRESS_INTERVAL_S=0", args);
  CHECK(bad.exit_code == 2);
  CHECK(bad.err_lines() == 1);
  CHECK_THAT(bad.err, Catch::Contains("TPUSIM_PROGRESS_INTERVAL_S") && Catch::Contains("0.01"));
}

TEST_CASE("a whole BERT-Large step on 256 chips agrees within 1 % at the three network levels") {
  // Issue 24 item 4: ring steps travel coalesced at the packet level too (one train per neighbour
  // pair and phase, each step paying its latency and synchronisation), so the packet level plays
  // a whole training step; it must agree with the message and flow levels on it.
  std::map<std::string, nlohmann::json> by_level;
  for (const char* level : {"message", "flow", "packet"}) {
    auto r = run_tpusim({"run", "configs/studies/bert_large_256.json", "--json", "--set",
                         std::string("network.fidelity=") + level});
    INFO(level << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    by_level[level] = nlohmann::json::parse(r.out);
  }
  const auto& m = by_level["message"];
  for (const char* level : {"flow", "packet"}) {
    INFO(level);
    const auto& j = by_level[level];
    CHECK(j["step_time_ms"].get<double>() == Approx(m["step_time_ms"].get<double>()).epsilon(0.01));
    CHECK(j["communication_ms"].get<double>() ==
          Approx(m["communication_ms"].get<double>()).epsilon(0.01));
  }
  // The packet level counts packet hops: far more work items than the message level's messages.
  CHECK(by_level["packet"]["network_work_items"].get<double>() >
        10 * m["network_work_items"].get<double>());
}
