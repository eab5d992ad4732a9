// The command line as a new user meets it: --version, "did you mean", global options after the
// subcommand, params with ranges, warnings that say what is lost, readable text reports.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "tests/cli/run_tpusim.hpp"

using nlohmann::json;

TEST_CASE("tpusim --version prints the version the reports carry") {
  auto r = run_tpusim({"--version"});
  CHECK(r.exit_code == 0);
  CHECK(r.out == std::string("tpusim ") + TPUSIM_VERSION + "\n");
}

TEST_CASE("a mistyped subcommand or option gets one line naming the closest name") {
  struct Case {
    std::vector<std::string> args;
    std::string hint;
  };
  const std::vector<Case> cases{
      {{"rn", "configs/studies/maskrcnn_512.json"}, "unknown command 'rn': did you mean 'run'?"},
      {{"sweeep", "x.json"}, "unknown command 'sweeep': did you mean 'sweep'?"},
      {{"trace", "imprt", "p.json"}, "unknown command 'imprt': did you mean 'import'?"},
      {{"run", "configs/studies/maskrcnn_512.json", "--jsn"},
       "unknown option '--jsn': did you mean '--json'?"},
      {{"run", "configs/studies/maskrcnn_512.json", "--log-levl", "info"},
       "unknown option '--log-levl': did you mean '--log-level'?"},
      {{"--log-level", "off", "valdate", "x.json"},
       "unknown command 'valdate': did you mean 'validate'?"},
  };
  for (const auto& c : cases) {
    auto r = run_tpusim(c.args);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err_lines() == 1);
    CHECK(r.err == "tpusim: error: " + c.hint + "\n");
  }
  // Nothing close: CLI11's own message, no guess.
  auto far = run_tpusim({"xyzzyplugh"});
  CHECK(far.exit_code == 2);
  CHECK(far.err_lines() == 1);
  CHECK_THAT(far.err, !Catch::Contains("did you mean"));
}

TEST_CASE("the global --log-level is accepted after the subcommand and takes effect") {
  auto before = run_tpusim({"--log-level", "info", "run", "configs/studies/maskrcnn_512.json"});
  auto after = run_tpusim({"run", "configs/studies/maskrcnn_512.json", "--log-level", "info"});
  REQUIRE(before.exit_code == 0);
  REQUIRE(after.exit_code == 0);
  CHECK_THAT(after.err, Catch::Contains("[info]"));
  // The same report (up to the wall time of the last line).
  auto report = [](const std::string& out) { return out.substr(0, out.find("simulated with")); };
  CHECK(report(after.out) == report(before.out));
  auto quiet = run_tpusim({"run", "configs/studies/maskrcnn_512.json", "--log-level", "off"});
  CHECK(quiet.err.empty());
}

TEST_CASE("params FILTER that matches nothing is bad input") {
  auto r = run_tpusim({"params", "no.such.parameter"});
  CHECK(r.exit_code == 2);
  CHECK(r.err_lines() == 1);
  CHECK_THAT(r.err, Catch::Contains("no.such.parameter"));
  CHECK(r.out.empty());
}

TEST_CASE("params prints integer defaults as integers and every finite range") {
  auto j = run_tpusim({"params", "--json"});
  REQUIRE(j.exit_code == 0);
  const json specs = json::parse(j.out);
  auto text = run_tpusim({"params"});
  REQUIRE(text.exit_code == 0);
  int integers = 0, ranged = 0;
  for (const auto& s : specs) {
    INFO(s.dump());
    const auto& d = s["default"];
    if (s["type"] == "integer" && !d.is_null()) {
      CHECK(d.is_number_integer());
      ++integers;
    }
    // A whole-valued number default is shown without a fraction too (100, not 100.0).
    if (d.is_number_float()) CHECK(std::trunc(d.get<double>()) != d.get<double>());
    if (s.contains("min") && s.contains("max")) {
      const std::string line = s["path"].get<std::string>() + "  ";
      const std::string range = "range " + s["min"].dump() + " to " + s["max"].dump();
      CHECK_THAT(text.out, Catch::Contains(range));
      ++ranged;
    }
  }
  CHECK(integers > 10);
  CHECK(ranged > 10);
  CHECK_THAT(text.out, Catch::Contains("hardware.ici.bandwidth_GBps  number, GB/s  default 100, "
                                       "range 0.001 to 1000000"));
}

TEST_CASE("trace import without --examples-per-step warns that throughput will be unknown") {
  const std::string out = "/tmp/tpusim_cli_ux_" + std::to_string(::getpid()) + ".json";
  auto r = run_tpusim({"trace", "import", "traces/examples/profile_tpu_v3_8.json", "--out", out});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("no --examples-per-step"));
  auto given = run_tpusim({"trace", "import", "traces/examples/profile_tpu_v3_8.json", "--out", out,
                           "--examples-per-step", "64"});
  CHECK(given.exit_code == 0);
  CHECK_THAT(given.err, !Catch::Contains("examples-per-step"));
  std::remove(out.c_str());
}

TEST_CASE("text reports use singular for one and a unit that fits the value") {
  // One group of all 8 cores of a 2x2 slice; a 64 KiB all-reduce takes microseconds.
  auto text =
      run_tpusim({"collective", "--op", "all-reduce", "--bytes", "64KiB", "--topology", "2x2"});
  auto js = run_tpusim(
      {"collective", "--op", "all-reduce", "--bytes", "64KiB", "--topology", "2x2", "--json"});
  REQUIRE(text.exit_code == 0);
  REQUIRE(js.exit_code == 0);
  const json j = json::parse(js.out);
  REQUIRE(j["groups"] == 1);
  CHECK_THAT(text.out, Catch::StartsWith("all-reduce of 64 KiB per core, 1 group of 8 cores\n"));
  const double ns = j["collective_time_ns"].get<double>();
  REQUIRE(ns >= 1e3);
  REQUIRE(ns < 1e6);
  char expect[64];
  std::snprintf(expect, sizeof expect, "  time              %.3g us\n", ns / 1e3);
  CHECK_THAT(text.out, Catch::Contains(expect));

  // The run report: "1 op" for a kind issued once, sizes in a fitting binary unit.
  // BERT on 16 chips: its LAMB-norm all-reduce is issued once, its gradient collectives 19 times.
  auto run = run_tpusim({"run", "configs/studies/bert_large_16.json", "--json"});
  auto run_text = run_tpusim({"run", "configs/studies/bert_large_16.json"});
  REQUIRE(run.exit_code == 0);
  const json rep = json::parse(run.out);
  REQUIRE(rep["collectives"]["all-reduce"]["count"] == 1);
  for (const auto& [kind, c] : rep["collectives"].items()) {
    const int n = c["count"].get<int>();
    const std::string count = std::to_string(n) + (n == 1 ? " op " : " ops ");
    CHECK_THAT(run_text.out, Catch::Contains(kind) && Catch::Contains(count));
  }
  CHECK_THAT(run_text.out, !Catch::Contains(" 0.0 MiB"));
}
