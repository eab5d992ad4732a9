// tpusim sweep end to end: the real binary runs real points (small slices, well under a second).
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>

#include "tests/cli/sweep_fixture.hpp"

using nlohmann::json;
namespace fs = std::filesystem;

TEST_CASE("a sweep runs the product of its axes and each CSV row repeats its point's report") {
  SweepScratch s;
  const auto sweep =
      s.write("s.json", {{"base", small_bert_study()},
                         {"axes",
                          {{{"path", "topology"}, {"values", {"2x2", "4x2"}}},
                           {{"path", "hardware.ici.bandwidth_GBps"}, {"values", {50, 100}}}}}});
  auto r = run_tpusim({"sweep", sweep, "-j", "2", "--out", s.path("out")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto t = results_of(s.path("out"));
  REQUIRE(t.rows.size() == 4);
  const char* topo[] = {"2x2", "2x2", "4x2", "4x2"};
  const double bw[] = {50, 100, 50, 100};
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(t.cell(i, "status") == "ok");
    CHECK(t.cell(i, "topology") == topo[i]);
    CHECK(*t.number(i, "hardware.ici.bandwidth_GBps") == bw[i]);
    const json rep = point_report(s.path("out"), t.cell(i, "id"));
    CHECK(rep["config"]["hardware"]["ici"]["bandwidth_GBps"].get<double>() == bw[i]);
    CHECK(*t.number(i, "chips") == (i < 2 ? 4 : 8));
    for (const char* m : {"step_time_ms", "comm_share", "examples_per_s", "mxu_utilization"})
      CHECK(*t.number(i, m) == Approx(rep[m].get<double>()).epsilon(1e-8));
  }
  // Series: one per bandwidth; efficiency is per-chip throughput relative to the 4-chip point.
  CHECK(t.cell(0, "series") == "bert_large hardware.ici.bandwidth_GBps=50");
  for (std::size_t i = 2; i < 4; ++i) {
    const double per_chip = *t.number(i, "examples_per_s") / 8,
                 ref = *t.number(i - 2, "examples_per_s") / 4;
    CHECK(*t.number(i, "scaling_efficiency") == Approx(per_chip / ref).epsilon(1e-6));
  }
  // Without a terminal: one plain line per finished point.
  CHECK_THAT(r.err, Catch::Contains("[4/4] ok point"));
}

TEST_CASE("zipped and derived values reach each point's study") {
  SweepScratch s;
  const auto sweep =
      s.write("s.json", {{"base", small_bert_study()},
                         {"axes",
                          {{{"zip",
                             {{{"path", "topology"}, {"values", {"2x2", "4x2"}}},
                              {{"name", "per_chip"}, {"values", {2, 4}}}}}},
                           {{"path", "workload.global_batch"}, {"expr", "per_chip * chips"}}}}});
  auto r = run_tpusim({"sweep", sweep, "--out", s.path("out")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto t = results_of(s.path("out"));
  REQUIRE(t.rows.size() == 2);
  CHECK(*t.number(0, "workload.global_batch") == 2 * 4);
  CHECK(*t.number(1, "workload.global_batch") == 4 * 8);
  CHECK(point_report(s.path("out"), t.cell(1, "id"))["config"]["workload"]["global_batch"] == 32);
}

TEST_CASE("a failing point is recorded with its error and the other points finish") {
  SweepScratch s;
  // The onchip algorithm passes every up-front check, but the simulation refuses it for the
  // data-parallel gradient all-reduce, whose groups span chips: that point's run fails.
  const auto sweep = s.write(
      "s.json",
      {{"base", small_bert_study()},
       {"axes", {{{"path", "collectives.algorithm"}, {"values", {"auto", "onchip", "ring"}}}}}});
  auto r = run_tpusim({"sweep", sweep, "--out", s.path("out")});
  INFO(r.err);
  CHECK(r.exit_code == 1);
  const auto t = results_of(s.path("out"));
  REQUIRE(t.rows.size() == 3);
  CHECK(t.cell(0, "status") == "ok");
  CHECK(t.cell(1, "status") == "failed");
  CHECK_THAT(t.cell(1, "error"),
             Catch::Contains("collectives.algorithm") && Catch::Contains("spans chips"));
  CHECK(t.cell(2, "status") == "ok");
  const json err = json::parse(slurp(s.path("out/points/" + t.cell(1, "id") + ".error.json")));
  CHECK(err["sweep_point"]["values"]["collectives.algorithm"] == "onchip");
  CHECK(err["exit_code"] == 2);
}

TEST_CASE("shards cover every point exactly once and merge joins them") {
  SweepScratch s;
  const auto sweep = s.write(
      "s.json",
      {{"base", small_bert_study()},
       {"axes", {{{"path", "hardware.ici.bandwidth_GBps"}, {"values", {25, 50, 100, 200, 400}}}}}});
  std::multiset<std::string> ids;
  for (int i = 1; i <= 3; ++i) {
    const std::string out = s.path("shard" + std::to_string(i));
    auto r = run_tpusim({"sweep", sweep, "--shard", std::to_string(i) + "/3", "--out", out});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto t = results_of(out);
    for (std::size_t row = 0; row < t.rows.size(); ++row) {
      CHECK(t.cell(row, "status") == "ok");
      CHECK(std::stoi(t.cell(row, "point")) % 3 == i - 1);
      ids.insert(t.cell(row, "id"));
    }
  }
  CHECK(ids.size() == 5);
  CHECK(std::set<std::string>(ids.begin(), ids.end()).size() == 5);
  auto m = run_tpusim(
      {"merge", s.path("shard1"), s.path("shard2"), s.path("shard3"), "--out", s.path("all")});
  INFO(m.err);
  REQUIRE(m.exit_code == 0);
  const auto all = results_of(s.path("all"));
  REQUIRE(all.rows.size() == 5);
  for (std::size_t row = 0; row < 5; ++row) {
    CHECK(all.cell(row, "point") == std::to_string(row));
    CHECK(all.cell(row, "status") == "ok");
  }
  // Two shards only: the merge says what is missing and fails.
  auto partial =
      run_tpusim({"merge", s.path("shard1"), s.path("shard2"), "--out", s.path("partial")});
  CHECK(partial.exit_code == 1);
  CHECK_THAT(partial.err, Catch::Contains("1 not run"));
}

TEST_CASE("sweep --check passes on its own golden and fails on a perturbed or incomplete one") {
  SweepScratch s;
  const auto sweep =
      s.write("s.json", {{"base", small_bert_study()},
                         {"axes", {{{"path", "topology"}, {"values", {"2x2", "4x2"}}}}}});
  const std::string golden = s.path("golden.csv");
  auto up =
      run_tpusim({"sweep", sweep, "--out", s.path("out"), "--check", golden, "--update-golden"});
  INFO(up.err);
  REQUIRE(up.exit_code == 0);
  auto g = tpusim::sweep::read_csv(golden);
  REQUIRE(!g.comments.empty());
  CHECK_THAT(g.comments[0], Catch::Contains("REGRESSION GOLDEN"));

  // A fresh run (new --out) matches the golden.
  auto ok = run_tpusim({"sweep", sweep, "--out", s.path("fresh"), "--check", golden});
  INFO(ok.err);
  CHECK(ok.exit_code == 0);

  // Step time of the second point 5% off: beyond 2%, within 10%.
  auto moved = g;
  const int col = moved.column("step_time_ms");
  moved.rows[1][col] = tpusim::sweep::number_text(*g.number(1, "step_time_ms") * 1.05);
  tpusim::sweep::write_csv(s.path("moved.csv"), moved);
  auto drift = run_tpusim({"sweep", sweep, "--out", s.path("out"), "--check", s.path("moved.csv")});
  CHECK(drift.exit_code == 1);
  CHECK_THAT(drift.out, Catch::Contains("topology=4x2") && Catch::Contains("step_time_ms") &&
                            Catch::Contains("-4.76%"));
  auto loose = run_tpusim({"sweep", sweep, "--out", s.path("out"), "--check", s.path("moved.csv"),
                           "--tolerance", "10%"});
  CHECK(loose.exit_code == 0);

  // A golden without the first point: the sweep has an extra point.
  auto fewer = g;
  fewer.rows.erase(fewer.rows.begin());
  tpusim::sweep::write_csv(s.path("fewer.csv"), fewer);
  auto extra = run_tpusim({"sweep", sweep, "--out", s.path("out"), "--check", s.path("fewer.csv")});
  CHECK(extra.exit_code == 1);
  CHECK_THAT(extra.out, Catch::Contains("extra point"));

  // A golden with a point the sweep lacks.
  auto more = g;
  more.rows.push_back(g.rows[0]);
  more.rows.back()[more.column("topology")] = "8x8";
  tpusim::sweep::write_csv(s.path("more.csv"), more);
  auto missing =
      run_tpusim({"sweep", sweep, "--out", s.path("out"), "--check", s.path("more.csv")});
  CHECK(missing.exit_code == 1);
  CHECK_THAT(missing.out, Catch::Contains("missing point"));
}

TEST_CASE("on a terminal the sweep draws one progress bar line") {
  if (std::system("command -v script >/dev/null 2>&1") != 0) {
    WARN("util-linux 'script' is missing: the terminal case is not tested");
    return;
  }
  SweepScratch s;
  const auto sweep =
      s.write("s.json",
              {{"base", small_bert_study()},
               {"axes", {{{"path", "hardware.ici.bandwidth_GBps"}, {"values", {50, 100, 200}}}}}});
  // `script` gives the sweep a pseudo-terminal as stderr and copies what it draws to stdout.
  const std::string cmd =
      std::string(TPUSIM_BIN) + " sweep " + sweep + " -j 2 --out " + s.path("out");
  const std::string typescript = s.path("typescript");
  int status = std::system(
      ("script -qec " + shell_quote(cmd) + " /dev/null > " + typescript + " 2>&1").c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  const std::string seen = slurp(typescript);
  // Redrawn in place (carriage return, erase line), with counts, elapsed time and estimate.
  CHECK_THAT(seen, Catch::Contains("\r\033[K["));
  CHECK_THAT(seen, Catch::Contains("3/3 done, 0 running, 0 failed"));
  CHECK_THAT(seen, Catch::Contains("elapsed, ETA"));
  CHECK_THAT(seen, !Catch::Contains("[1/3] ok point"));  // no per-point lines on a terminal
}
