// tpusim profile and run --profile: the op profile read back and held against the cost model's
// closed forms (rates, roofs, bounds) and against itself (parts adding up to the step). The page
// is drawn in a real browser by tests/browser/check_profile_page.py.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/cli/run_tpusim.hpp"

using nlohmann::json;

namespace {

const char* kProfileStudy = "configs/studies/bert_large_16.json";
const char* kProfileLayers = "workload.layers=2";

std::string profile_dir(const std::string& name) {
  return "/tmp/tpusim_cli_profile_" + std::to_string(::getpid()) + "_" + name;
}

json profile_of(const std::string& dir, const std::vector<std::string>& sets = {}) {
  auto r = run_tpusim(
      with_sets({"profile", kProfileStudy, "--out", dir, "--json", "--set", kProfileLayers}, sets));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json printed = json::parse(r.out);
  const json written = json::parse(slurp(dir + "/profile.json"));
  CHECK(printed == written);
  return written;
}

double rel(double a, double b) {
  return std::abs(a - b) / std::max({std::abs(a), std::abs(b), 1e-30});
}

}  // namespace

TEST_CASE(
    "profile: every compute op's rates are its FLOPs and bytes over its time, under the roofs") {
  const std::string dir = profile_dir("rates");
  const json p = profile_of(dir);
  // TPU v3 (configs/tpu_v3.json): 2 MXUs of 128 x 128 at 940 MHz, 450 GB/s of HBM per core,
  // 8 x 128 vector lanes.
  const double peak_tflops = 2.0 * 128 * 128 * 2 * 940e6 * 1e-12;
  CHECK(rel(p["roofs"]["mxu_tflop_per_s"].get<double>(), peak_tflops) < 1e-12);
  CHECK(rel(p["roofs"]["hbm_GBps"].get<double>(), 450) < 1e-12);
  CHECK(rel(p["roofs"]["vector_tflop_per_s"].get<double>(), 8 * 128 * 940e6 * 1e-12) < 1e-12);
  CHECK(rel(p["roofs"]["ridge_flop_per_byte"].get<double>(), peak_tflops * 1e12 / 450e9) < 1e-12);
  int compute = 0, plotted = 0;
  std::set<std::string> bounds;
  for (const auto& op : p["ops"]) {
    INFO(op.dump());
    const double t = op["time_ms"];
    REQUIRE(t > 0);
    if (op["type"] == "collective") {
      CHECK(op["bound"] == "ICI");
      CHECK(rel(op["GBps"].get<double>(), op["bytes"].get<double>() / (t * 1e-3) * 1e-9) < 1e-9);
      continue;
    }
    ++compute;
    const double flops = op["flops"], bytes = op["hbm_bytes"];
    if (flops > 0 && bytes > 0) ++plotted;
    CHECK(rel(op["tflop_per_s"].get<double>(), flops / (t * 1e-3) * 1e-12) < 1e-9);
    CHECK(rel(op["hbm_GBps"].get<double>(), bytes / (t * 1e-3) * 1e-9) < 1e-9);
    // The cost model takes the largest of MXU, vector and HBM time plus the launch overhead, at
    // calibrated fractions of the peaks: no op passes a roof.
    CHECK(op["tflop_per_s"].get<double>() <= peak_tflops * (1 + 1e-9));
    CHECK(op["hbm_GBps"].get<double>() <= 450 * (1 + 1e-9));
    const double parts[] = {op["mxu_ms"], op["vector_ms"], op["hbm_ms"]};
    const double largest = *std::max_element(std::begin(parts), std::end(parts));
    CHECK(rel(largest + op["overhead_ms"].get<double>(), t) < 1e-6);
    const std::map<std::string, double> by_bound = {
        {"MXU", parts[0]}, {"vector", parts[1]}, {"HBM", parts[2]}};
    // The resource that bounds its own time; its bound is "waiting" when it waited longer.
    const std::string bound = op["resource"];
    CHECK(op["bound"] == (op["waiting_ms"].get<double>() > t ? "waiting" : bound));
    bounds.insert(bound);
    if (bound == "overhead")
      CHECK(op["overhead_ms"].get<double>() >= largest);
    else
      CHECK(by_bound.at(bound) == largest);
  }
  CHECK(p["roofline_ops"] == plotted);
  CHECK(plotted > 0);
  // BERT's step holds matmuls (MXU-bound) and layer norms, softmaxes and the optimizer
  // (vector- or HBM-bound).
  CHECK(bounds.count("MXU") == 1);
  CHECK(bounds.size() >= 2);
  CHECK(compute < static_cast<int>(p["ops"].size()));  // collectives too
  std::system(("rm -rf " + shell_quote(dir)).c_str());
}

TEST_CASE("profile: the step's parts add up to the step, the layers to the ops") {
  const std::string dir = profile_dir("parts");
  const json p = profile_of(dir);
  const auto& step = p["step"];
  double sum = 0;
  for (const auto& part : step["parts"]) {
    INFO(part.dump());
    CHECK(part["time_ms"].get<double>() >= -1e-9);
    sum += part["time_ms"].get<double>();
    // One step of a study without slow chips or infeed: every compute time is an op's own.
    if (part["part"] == "other compute") CHECK(std::abs(part["time_ms"].get<double>()) < 1e-6);
  }
  CHECK(rel(sum, step["step_time_ms"].get<double>()) < 1e-6);
  // The same step as `tpusim run` reports it.
  auto r = run_tpusim({"run", kProfileStudy, "--json", "--set", kProfileLayers});
  REQUIRE(r.exit_code == 0);
  const json report = json::parse(r.out);
  CHECK(rel(step["step_time_ms"].get<double>(), report["step_time_ms"].get<double>()) < 1e-12);
  CHECK(p["ops"].size() == report["ops"].get<std::size_t>());
  double op_ms = 0, layer_ms = 0, op_flops = 0, layer_flops = 0;
  int layer_ops = 0;
  std::set<std::string> names;
  for (const auto& op : p["ops"])
    op_ms += op["time_ms"].get<double>(), op_flops += op["flops"].get<double>();
  for (const auto& l : p["layers"]) {
    layer_ms += l["time_ms"].get<double>();
    layer_flops += l["flops"].get<double>();
    layer_ops += l["ops"].get<int>();
    names.insert(l["layer"].get<std::string>());
  }
  CHECK(layer_ops == static_cast<int>(p["ops"].size()));
  CHECK(rel(layer_ms, op_ms) < 1e-9);
  CHECK(rel(layer_flops, op_flops) < 1e-9);
  // workload.layers=2: the encoder's two layers, and nothing else named encoder.N.
  CHECK(names.count("encoder.0") == 1);
  CHECK(names.count("encoder.1") == 1);
  CHECK(names.count("encoder.2") == 0);
  std::system(("rm -rf " + shell_quote(dir)).c_str());
}

TEST_CASE("profile: the page holds its data inline and fetches nothing") {
  const std::string dir = profile_dir("page");
  const json p = profile_of(dir);
  const std::string html = slurp(dir + "/profile.html");
  CHECK(html.find("<script id=\"profile-data\" type=\"application/json\">{") != std::string::npos);
  CHECK(html.find("http://") == html.find("http://www.w3.org/2000/svg"));  // the SVG namespace only
  CHECK(html.find("https://") == std::string::npos);
  CHECK(html.find(" src=") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  // The data can hold no "</" that would end its script element early.
  const auto start = html.find("application/json\">") + 18;
  const auto end = html.find("</script>", start);
  CHECK(json::parse(html.substr(start, end - start)) == p);
  std::system(("rm -rf " + shell_quote(dir)).c_str());
}

TEST_CASE("run --profile writes the profile beside the run's report") {
  const std::string dir = profile_dir("run");
  auto r = run_tpusim({"run", kProfileStudy, "--json", "--set", kProfileLayers, "--profile", dir});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json report = json::parse(r.out);
  const json p = json::parse(slurp(dir + "/profile.json"));
  CHECK(report["step_time_ms"] == p["step"]["step_time_ms"]);
  CHECK(slurp(dir + "/profile.html").find("roofline-chart") != std::string::npos);
  std::system(("rm -rf " + shell_quote(dir)).c_str());
}

TEST_CASE("profile: an output that is not a folder is one error line before any work") {
  const std::string file = profile_dir("file");
  std::ofstream(file) << "x";
  auto r = run_tpusim({"profile", kProfileStudy, "--out", file});
  CHECK(r.exit_code == 2);
  CHECK(r.err_lines() == 1);
  CHECK(r.err.find("--out " + file) != std::string::npos);
  CHECK(r.err.find("not a folder") != std::string::npos);
  auto empty = run_tpusim({"profile", kProfileStudy, "--out", ""});
  CHECK(empty.exit_code == 2);
  CHECK(empty.err_lines() == 1);
  CHECK_THAT(empty.err, Catch::Contains("--out: an empty path"));
  auto missing = run_tpusim({"profile", kProfileStudy});
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("--out") != std::string::npos);
  std::remove(file.c_str());
}

TEST_CASE("profile: layer names are the op names up to their first numbered part") {
  // Through the command: a study's op names as the builders write them.
  const std::string dir = profile_dir("layers");
  const json p = profile_of(dir);
  for (const auto& op : p["ops"]) {
    const std::string name = op["name"], layer = op["layer"];
    INFO(name << " -> " << layer);
    if (op.contains("members")) continue;  // a fusion is in its first member's layer
    CHECK(name.rfind(layer, 0) == 0);
    CHECK((name.size() == layer.size() || name[layer.size()] == '.'));
  }
  std::system(("rm -rf " + shell_quote(dir)).c_str());
}

TEST_CASE("profile: an op right behind a synchronous all-reduce waits the all-reduce's time") {
  // TPU v3 runs its collectives synchronously (hardware.async_collectives = false): the core
  // issues a gradient all-reduce and waits for it, so the compute op after it waits exactly the
  // all-reduce's time in flight (every core arrives at once on this symmetric slice).
  const std::string dir = profile_dir("waiting");
  const json p = profile_of(dir);
  const json& ops = p["ops"];
  int pairs = 0;
  for (std::size_t i = 0; i + 1 < ops.size(); ++i) {
    if (ops[i]["type"] != "collective" || ops[i + 1]["type"] != "compute") continue;
    INFO(ops[i]["name"] << " then " << ops[i + 1]["name"]);
    const double all_reduce = ops[i]["time_ms"], waited = ops[i + 1]["waiting_ms"];
    CHECK(rel(waited, all_reduce) < 1e-6);
    CHECK(ops[i + 1]["bound"] ==
          (waited > ops[i + 1]["time_ms"].get<double>() ? "waiting" : ops[i + 1]["resource"]));
    ++pairs;
  }
  CHECK(pairs > 0);
  // An op that follows a compute op on this slice waits for nothing.
  for (std::size_t i = 1; i < ops.size(); ++i)
    if (ops[i - 1]["type"] == "compute" && ops[i]["type"] == "compute")
      CHECK(ops[i]["waiting_ms"].get<double>() == 0);
  std::system(("rm -rf " + shell_quote(dir)).c_str());
}
