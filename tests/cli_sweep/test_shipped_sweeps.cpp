// Shipped sweeps and studies whose checks are of outputs at their shipped sizes: the MFU MaxText's
// tables publish (docs/llm.md) and the paper's evaluation limit at 512 chips (docs/train.md). In
// the Release run of the test command only (CLI_RELEASE_TESTS in tests/CMakeLists.txt), with the
// optimised binary users run: under the sanitizers these runs took 17.6 s of CPU (the v5p table's
// sweep alone 9.6 s); the same code runs there at small sizes in tests/cli/test_cli_llm.cpp and
// tests/cli_sweep/test_cli_train_sweep.cpp.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "tests/cli/run_tpusim.hpp"
#include "tests/cli/sweep_fixture.hpp"

namespace {
using json = nlohmann::json;

json published_json(const std::vector<std::string>& args) {
  const TpusimResult r = run_tpusim(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}
}  // namespace

TEST_CASE("MaxText's TPU v5p rows run at the MFU published, minimal remat within 10 %") {
  // configs/studies/sweeps/maxtext_v5p_mfu.json: MaxText's published v5p table, one point per
  // single-slice row. Nothing is fitted to it: the v5p preset's MXU efficiency is the fraction
  // TPU v7's GEMM measured (docs/kernels.md). The minimal-remat rows land within 10 %; the
  // full-remat rows of 512B on 512 chips and 1024B on 2048 chips are 10 and 11 % low (docs/llm.md:
  // 1024B on 1024 chips, the same work per chip, is 4 % high), so they are held to 15 %. Points the
  // memory model refuses (status oom) have no MFU to compare.
  SweepScratch s;
  const auto t = run_shipped_sweep(s, "configs/studies/sweeps/maxtext_v5p_mfu.json");
  REQUIRE(t.rows.size() == 8);
  int checked = 0;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    if (t.cell(i, "status") != "ok") continue;
    const double mfu = *t.number(i, "mfu"), published = *t.number(i, "published_mfu");
    const bool minimal = t.cell(i, "workload.remat") == "minimal";
    INFO(t.cell(i, "row") << " on " << t.cell(i, "topology") << ": " << mfu << " against "
                          << published);
    CHECK(std::abs(mfu / published - 1) < (minimal ? 0.10 : 0.15));
    ++checked;
  }
  CHECK(checked >= 6);
}

TEST_CASE("MaxText's TPU v5p rows on two slices run, none refused, within 15 %") {
  // configs/studies/sweeps/maxtext_v5p_2slices.json: the same rows on two slices, data parallel
  // across them over the data-center network, against the table's "2 x" column. Nothing is
  // fitted. Six land within 10 %; 128B on two v5p-512 and 1024B on two v5p-2048 are 14 and 12 %
  // high, where MaxText's step grows by 15 and 7 % over one slice and tpusim's by under 0.1 %
  // (the cross-slice gradient sync hides behind the backward pass: docs/llm.md, the decline
  // across slices), so the rows are held to 15 %. Every layout ran, so none may be refused.
  SweepScratch s;
  const auto t = run_shipped_sweep(s, "configs/studies/sweeps/maxtext_v5p_2slices.json");
  REQUIRE(t.rows.size() == 8);
  int within_10 = 0;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    INFO(t.cell(i, "row") << " on 2 x " << t.cell(i, "topology"));
    REQUIRE(t.cell(i, "status") == "ok");
    const double error = *t.number(i, "mfu") / *t.number(i, "published_mfu") - 1;
    CAPTURE(error);
    CHECK(std::abs(error) < 0.15);
    within_10 += std::abs(error) < 0.10;
    CHECK(*t.number(i, "communication_dcn_ms") > 0);  // the gradients cross the slices
  }
  CHECK(within_10 >= 6);
}

TEST_CASE("MaxText's TPU v5e fsdp rows on one slice run within 10 % of the MFU published") {
  // configs/studies/sweeps/maxtext_v5e_{16b,32b,64b}.json at one slice, as the table ran them:
  // fsdp 256, full remat, flash attention, the row's sequences per device (the batch axis's
  // "N * chips"). Nothing is fitted to them (docs/llm.md). Their points on 2 to 32 slices are not
  // held: tpusim does not model MaxText's decline across slices.
  SweepScratch s;
  for (const std::string m : {"16b", "32b", "64b"}) {
    std::ifstream in(std::string(TPUSIM_SOURCE_DIR) + "/configs/studies/sweeps/maxtext_v5e_" + m +
                     ".json");
    const json sweep = json::parse(in);
    json study = sweep["base"];
    const int chips =
        study["topology"]["dims"][0].get<int>() * study["topology"]["dims"][1].get<int>();
    study["workload"]["global_batch"] =
        std::stoi(sweep["axes"][1]["expr"].get<std::string>()) * chips;
    double published = 0;
    for (const json& axis : sweep["axes"][0]["zip"])
      if (axis.value("name", "") == "published_mfu") published = axis["values"][0];
    REQUIRE(published > 0);
    const json r = published_json({"run", s.write(m + ".json", study), "--json"});
    INFO(m << ": " << r["mfu"].get<double>() << " against " << published);
    CHECK(std::abs(r["mfu"].get<double>() / published - 1) < 0.10);
  }
}

TEST_CASE("MaxText's TPU v4 rows are the models their names say: 22 B and 52 B parameters") {
  // configs/studies/sweeps/maxtext_v4_mfu.json takes the MLP non-gated and the heads 256 wide
  // because only that reading of the published shapes gives the named sizes. The parameters the
  // step's matmuls carry follow from its MFU: model FLOPs per token = MFU x peak x step x devices
  // / tokens = 6 N + 12 L s (heads x head_dim), N without the input embedding (a lookup, not a
  // matmul: 32000 x d_model of the named size).
  SweepScratch s;
  const auto t = run_shipped_sweep(s, "configs/studies/sweeps/maxtext_v4_mfu.json");
  REQUIRE(t.rows.size() == 2);
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const json j = published_json(
        {"run", s.path("out/points/" + t.cell(i, "id") + ".study.json"), "--allow-oom", "--json"});
    const json& hw = j["config"]["hardware"];
    const json& w = j["config"]["workload"];
    const double dim = hw["mxu"]["dim"], devices = j["devices"];
    const double peak = 2.0 * dim * dim * hw["mxu"]["count"].get<double>() *
                        hw["cores_per_chip"].get<double>() * hw["clock_MHz"].get<double>() * 1e6;
    const double per_token = j["mfu"].get<double>() * peak * j["step_time_ms"].get<double>() *
                             1e-3 * devices / j["tokens_per_step"].get<double>();
    const double attention = 12.0 * w["layers"].get<double>() * w["seq_len"].get<double>() *
                             w["heads"].get<double>() * w["head_dim"].get<double>();
    const double named = t.cell(i, "row") == "22B" ? 22e9 : 52e9;
    const double n = (per_token - attention) / 6 + 32000 * w["d_model"].get<double>();
    INFO(t.cell(i, "row") << ": " << n << " parameters");
    CHECK(std::abs(n / named - 1) < 0.02);
  }
}

TEST_CASE("the shipped evaluation sweep: the host metric costs its last evaluation in full") {
  // configs/studies/sweeps/maskrcnn_eval_metric.json: where the metric runs x the hosts' cores.
  // At 96 cores the earlier metrics cost the pipeline nothing (one core of 96), so on the host
  // the run is the device-metric run plus the last metric in one thread: its CPU work.
  SweepScratch s;
  const auto t = run_shipped_sweep(s, "configs/studies/sweeps/maskrcnn_eval_metric.json");
  REQUIRE(t.rows.size() == 9);
  std::map<std::pair<std::string, std::string>, std::size_t> row;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    CHECK(t.cell(i, "status") == "ok");
    row[{t.cell(i, "train.eval_metric_on"), t.cell(i, "hardware.host.cpu_cores")}] = i;
  }
  auto ttt = [&](const char* on, const char* cores) {
    return *t.number(row.at({on, cores}), "time_to_train_s");
  };
  const auto host = point_report(s.path("out"), t.cell(row.at({"host", "96"}), "id"));
  const double x = host["eval_metric"]["busiest_host_cpu_s"].get<double>();
  CHECK(host["eval_metric"]["metric_s"].get<double>() == Approx(x));
  CHECK(ttt("host", "96") - ttt("device", "96") == Approx(x).epsilon(1e-6));
  for (const char* cores : {"4", "16", "96"}) {
    CAPTURE(cores);
    CHECK(ttt("device", cores) < ttt("all_hosts", cores));
    CHECK(ttt("all_hosts", cores) < ttt("host", cores));
  }
}
