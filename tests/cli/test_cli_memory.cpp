// Memory through the binary: validate and run report it, a program that does not fit is a
// verdict (exit 1) unless --allow-oom, sweeps record `oom` points and finish, plots ring them,
// timelines carry live bytes.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "tests/cli/png_pixels.hpp"
#include "tests/cli/sweep_fixture.hpp"

using nlohmann::json;

namespace {
constexpr double kCliMemoryGiB = 1073741824.0;

// BERT-Large, 2 sequences per core on 8 cores: about 2 GiB per core, so 1 GiB does not fit.
const std::vector<std::string> kSmall = {"--set", "topology=\"2x2\"", "--set",
                                         "workload.global_batch=16"};
const char* kCliMemoryStudy = "configs/studies/bert_large_16.json";

std::vector<std::string> args(std::vector<std::string> a, const std::vector<std::string>& more) {
  a.insert(a.end(), kSmall.begin(), kSmall.end());
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

// The plot's colour of points that did not succeed (0.70, 0.05, 0.10; tools/plot/plot_canvas.cpp).
const std::array<int, 3> kRingColour{179, 13, 26};
}  // namespace

TEST_CASE("cli memory: validate shows the peak, classes and largest buffers without simulating") {
  auto r = run_tpusim(args({"validate", kCliMemoryStudy}, {}));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::StartsWith("ok: "));
  CHECK_THAT(r.out, Catch::Contains("memory per core") && Catch::Contains("activations") &&
                        Catch::Contains("largest buffers at the peak"));
}

TEST_CASE("cli memory: run --json reports memory whose classes add up to the peak") {
  auto r = run_tpusim(args({"run", kCliMemoryStudy, "--json"}, {}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json m = json::parse(r.out)["memory"];
  double sum = 0;
  for (const auto& [cls, bytes] : m["bytes_by_class"].items()) sum += bytes.get<double>();
  CHECK(sum == Approx(m["peak_bytes"].get<double>()).epsilon(1e-12));
  CHECK(m["capacity_bytes"].get<double>() == 16 * kCliMemoryGiB);
  CHECK(m["headroom_bytes"].get<double>() ==
        Approx(m["capacity_bytes"].get<double>() - m["peak_bytes"].get<double>()));
  CHECK(m["fits"] == true);
  CHECK(json::parse(r.out)["out_of_memory"] == false);
}

TEST_CASE("cli memory: a program that does not fit exits 1 with one verdict line") {
  auto r = run_tpusim(args({"run", kCliMemoryStudy}, {"--set", "hardware.hbm.GiB_per_core=1"}));
  CHECK(r.exit_code == 1);
  CHECK(r.err_lines() == 1);
  CHECK_THAT(r.err, Catch::StartsWith("tpusim: out of memory: peak") &&
                        Catch::Contains("exceeds the 1 GiB of HBM") &&
                        Catch::Contains("activations") && Catch::Contains("--allow-oom"));
  CHECK(r.out.empty());
  // validate gives the same verdict without simulating.
  auto v =
      run_tpusim(args({"validate", kCliMemoryStudy}, {"--set", "hardware.hbm.GiB_per_core=1"}));
  CHECK(v.exit_code == 1);
  CHECK_THAT(v.out, Catch::StartsWith("out of memory: "));
  // With --json the verdict comes with the memory report.
  auto j = run_tpusim(
      args({"run", kCliMemoryStudy, "--json"}, {"--set", "hardware.hbm.GiB_per_core=1"}));
  CHECK(j.exit_code == 1);
  const json rep = json::parse(j.out);
  CHECK(rep["out_of_memory"] == true);
  CHECK_FALSE(rep.contains("step_time_ms"));
  CHECK(rep["memory"]["peak_bytes"].get<double>() > rep["memory"]["capacity_bytes"].get<double>());
  CHECK(rep["memory"]["capacity_bytes"].get<double>() == kCliMemoryGiB);
}

TEST_CASE("cli memory: --allow-oom simulates anyway and flags the report") {
  auto r = run_tpusim(args({"run", kCliMemoryStudy, "--json", "--allow-oom"},
                           {"--set", "hardware.hbm.GiB_per_core=1"}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json rep = json::parse(r.out);
  CHECK(rep["out_of_memory"] == true);
  CHECK(rep["memory"]["fits"] == false);
  CHECK(rep["step_time_ms"].get<double>() > 0);
}

TEST_CASE("cli memory: a sweep across the limit records oom points and finishes") {
  SweepScratch s;
  const auto sweep =
      s.write("s.json", {{"base", small_bert_study()},
                         {"axes", {{{"path", "hardware.hbm.GiB_per_core"}, {"values", {1, 16}}}}}});
  auto r = run_tpusim({"sweep", sweep, "--out", s.path("out")});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("1 out of memory") && Catch::Contains("] oom point 0"));
  const auto t = results_of(s.path("out"));
  REQUIRE(t.rows.size() == 2);
  CHECK(t.cell(0, "status") == "oom");
  CHECK(t.cell(0, "step_time_ms").empty());
  CHECK(t.cell(1, "status") == "ok");
  // The peak does not depend on the capacity; the headroom is capacity - peak.
  CHECK(*t.number(0, "peak_memory_GiB") == Approx(*t.number(1, "peak_memory_GiB")));
  CHECK(*t.number(0, "memory_headroom_GiB") == Approx(1 - *t.number(0, "peak_memory_GiB")));
  CHECK(*t.number(1, "memory_headroom_GiB") == Approx(16 - *t.number(1, "peak_memory_GiB")));
  // A rerun keeps the oom point as a result (nothing left to run); --check against itself passes.
  auto again = run_tpusim(
      {"sweep", sweep, "--out", s.path("out"), "--check", s.path("golden.csv"), "--update-golden"});
  INFO(again.err);
  CHECK(again.exit_code == 0);
  auto check =
      run_tpusim({"sweep", sweep, "--out", s.path("out"), "--check", s.path("golden.csv")});
  INFO(check.err);
  CHECK(check.exit_code == 0);
  // The plot draws peak memory with the oom point marked.
  auto p = run_tpusim({"plot", "--dpi", "96", s.path("out/results.csv"), "--out", s.path("plots")});
  INFO(p.err);
  REQUIRE(p.exit_code == 0);
  CHECK(png_has_colour(s.path("plots/peak_memory.png"), kRingColour));
}

TEST_CASE("cli memory: the timeline has a live-bytes counter per traced core peaking at the peak") {
  const std::string path = "/tmp/tpusim_memory_timeline_test.json";
  std::remove(path.c_str());
  auto r = run_tpusim(args({"run", kCliMemoryStudy, "--json", "--timeline", path}, {}));
  REQUIRE(r.exit_code == 0);
  const double peak_GiB = json::parse(r.out)["memory"]["peak_bytes"].get<double>() / kCliMemoryGiB;
  std::map<std::string, double> max_of;
  const json trace = json::parse(slurp(path));
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "C" && e["name"].get<std::string>().rfind("HBM live GiB", 0) == 0)
      max_of[e["name"]] = std::max(max_of[e["name"]], e["args"]["GiB"].get<double>());
  CHECK(max_of.size() == 8);  // 2x2 chips x 2 cores, every core traced
  for (const auto& [track, max] : max_of) CHECK(max == Approx(peak_GiB));
  std::remove(path.c_str());
}

TEST_CASE("cli memory: params --memory-classes lists every class with its dtype and source") {
  auto r = run_tpusim({"params", "--memory-classes", "--json"});
  REQUIRE(r.exit_code == 0);
  const json classes = json::parse(r.out);
  REQUIRE(classes.size() == 12);  // with kv_cache, serving's (docs/memory.md)
  CHECK(classes[0]["class"] == "master_weights");
  CHECK(classes[0]["dtype"] == "f32");
  auto bad = run_tpusim({"params", "--memory-classes", "hbm"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err_lines() == 1);
  CHECK_THAT(bad.err, Catch::Contains("--memory-classes") && Catch::Contains("'hbm'"));
  auto param = run_tpusim({"params", "rematerialize"});
  CHECK_THAT(param.out, Catch::Contains("workload.rematerialize") && Catch::Contains("boolean"));
}
