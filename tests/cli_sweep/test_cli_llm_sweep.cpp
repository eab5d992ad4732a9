// Language-model metrics end to end (docs/llm.md, "Reports"): MFU, HFU, tokens per second per
// chip and the communication time over the data-center network as results.csv columns, plot
// charts and `tpusim diff` numbers. Expectations from each point's own report and closed forms.
#include <catch2/catch.hpp>
#include <cstdio>

#include "tests/cli/sweep_fixture.hpp"
#include "tools/sweep/csv_table.hpp"

using nlohmann::json;

namespace {
// The 1 B decoder, 2 layers of 256 tokens, fsdp 16 in each 16-chip v4 slice, data parallel over
// 1 and 2 slices, 2 sequences per chip.
json llm_sweep_doc() {
  json base = {
      {"preset", "tpu_v4_megacore"},
      {"topology", {{"name", "v4_4x4x1"}, {"dims", {4, 4, 1}}, {"wrap", {true, true, false}}}},
      {"hardware", {{"async_collectives", true}}},
      {"workload", {{"preset", "decoder_1b"}, {"layers", 2}, {"seq_len", 256}}},
      {"parallelism", {{"model", 1}, {"fsdp", 16}}}};
  return {{"base", base},
          {"axes",
           {{{"name", "slices"}, {"path", "topology.slices"}, {"values", {1, 2}}},
            {{"path", "parallelism.slices"}, {"expr", "slices"}},
            {{"path", "workload.global_batch"}, {"expr", "2 * chips"}}}}};
}
}  // namespace

TEST_CASE(
    "sweep of a language model: mfu, hfu, tokens per chip and DCN time in results.csv, "
    "plot and diff") {
  SweepScratch s;
  const auto sweep = s.write("s.json", llm_sweep_doc());
  auto r = run_tpusim({"sweep", sweep, "-j", "2", "--out", s.path("out")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto t = results_of(s.path("out"));
  REQUIRE(t.rows.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    const json rep = point_report(s.path("out"), t.cell(i, "id"));
    for (const char* c : {"mfu", "hfu", "tokens_per_s_per_chip"})
      CHECK(*t.number(i, c) == Approx(rep[c].get<double>()).epsilon(1e-8));
    // Tokens per second per chip: the global batch's tokens over the step, per chip.
    const double chips = *t.number(i, "chips");
    CHECK(*t.number(i, "tokens_per_s_per_chip") ==
          Approx(2 * chips * 256 / (*t.number(i, "step_time_ms") * 1e-3) / chips).epsilon(1e-6));
    CHECK(*t.number(i, "hfu") >= *t.number(i, "mfu"));
    if (*t.number(i, "slices") == 1) {
      CHECK(t.cell(i, "communication_dcn_ms").empty());  // one slice: no data-center network
    } else {
      CHECK(*t.number(i, "communication_dcn_ms") ==
            Approx(rep["communication_dcn_ms"].get<double>()).epsilon(1e-8));
      CHECK(*t.number(i, "communication_dcn_ms") > 0);
    }
  }

  // plot: MFU (a percentage, from 0) and tokens per chip against the slices.
  auto p = run_tpusim({"plot", "--dpi", "96", s.path("out/results.csv"), "--out", s.path("plots"),
                       "--x", "slices", "--y", "mfu", "--y", "tokens_per_s_per_chip", "--y",
                       "communication_dcn_ms"});
  INFO(p.err);
  REQUIRE(p.exit_code == 0);
  const json m = json::parse(slurp(s.path("plots/charts.json")));
  const json mfu = chart_named(m, "mfu");
  REQUIRE(mfu.is_object());
  CHECK(mfu["y_axis"]["from"].get<double>() == 0);
  REQUIRE(mfu["series"].size() == 1);
  CHECK(mfu["series"][0]["x"] == json({1.0, 2.0}));
  for (std::size_t i = 0; i < 2; ++i) {
    const std::size_t row = *t.number(i, "slices") == 1 ? 0 : 1;
    CHECK(mfu["series"][0]["y"][row].get<double>() == *t.number(i, "mfu"));
  }
  CHECK(chart_named(m, "tokens_per_chip").is_object());
  // The DCN chart has the one point with a DCN.
  CHECK(chart_named(m, "communication_dcn")["series"][0]["x"] == json({2.0}));
  CHECK(std::filesystem::exists(s.path("plots/mfu.svg")));

  // diff: a table whose MFU moved 5 % shows the mfu cell, relative difference +5 %.
  auto moved = t;
  const double before = *moved.number(0, "mfu");
  moved.rows[0][static_cast<std::size_t>(moved.column("mfu"))] =
      tpusim::sweep::number_text(before * 1.05);
  tpusim::sweep::write_csv(s.path("b.csv"), moved);
  auto d = run_tpusim({"diff", s.path("out/results.csv"), s.path("b.csv"), "--tolerance", "2%"});
  CHECK(d.exit_code == 1);
  CHECK_THAT(d.out, Catch::Contains("mfu"));
  CHECK_THAT(d.out, Catch::Contains("+5.00%"));
}
