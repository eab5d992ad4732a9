#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>

#include "core/errors.hpp"
#include "tools/sweep/csv_table.hpp"
#include "tools/sweep/golden.hpp"
#include "tools/sweep/results.hpp"

using nlohmann::json;
using namespace tpusim::sweep;

namespace {

json report(double chips, double step_ms, double examples_per_s, double comm_share) {
  return {{"step_time_ms", step_ms},
          {"compute_ms", step_ms * (1 - comm_share)},
          {"communication_ms", step_ms * comm_share},
          {"exposed_communication_ms", step_ms * comm_share},
          {"comm_share", comm_share},
          {"mxu_utilization", 0.5},
          {"examples_per_s", examples_per_s},
          {"chips", chips},
          {"cores", 2 * chips},
          {"model", "m"},
          {"layout", "data"},
          {"wall_s", 0.1}};
}

/// Two series (wus=false/true) over 16, 64 and 256 chips.
Plan plan_of_six() {
  Plan p;
  p.sweep_file = "s.json";
  p.columns = {"topology", "wus"};
  p.series_axes = {"wus"};
  const char* topo[] = {"4x4", "8x8", "16x16"};
  for (std::size_t i = 0; i < 6; ++i)
    p.points.push_back({i, "id" + std::to_string(i), {topo[i / 2], i % 2 == 1}});
  return p;
}

CsvTable table_of(const Plan& plan, const std::vector<json>& reports) {
  std::vector<std::size_t> all;
  for (std::size_t i = 0; i < plan.points.size(); ++i) all.push_back(i);
  return results_table(plan, all, [&](const PlanPoint& p) {
    PointOutcome o;
    if (reports[p.index].is_null()) {
      o.state = PointState::Failed;
      o.error = "boom";
    } else {
      o.state = PointState::Ok;
      o.report = reports[p.index];
    }
    return o;
  });
}

}  // namespace

TEST_CASE("scaling efficiency is per-chip throughput relative to the fewest chips in the series") {
  const double chips[] = {16, 16, 64, 64, 256, 256};
  std::vector<json> reports;
  for (int i = 0; i < 6; ++i)
    reports.push_back(
        report(chips[i], 10, 100 * chips[i] * (i % 2 ? 1.0 : 0.9 - 0.1 * (i / 2)), 0.1));
  const CsvTable t = table_of(plan_of_six(), reports);
  REQUIRE(t.rows.size() == 6);
  CHECK(t.cell(0, "series") == "m wus=false");
  CHECK(t.cell(1, "series") == "m wus=true");
  for (std::size_t r = 0; r < 6; ++r) {
    const double per_chip = reports[r]["examples_per_s"].get<double>() / chips[r];
    const double ref = reports[r % 2]["examples_per_s"].get<double>() / chips[r % 2];
    CHECK(*t.number(r, "scaling_efficiency") == Approx(per_chip / ref).epsilon(1e-8));
    CHECK(*t.number(r, "examples_per_s_per_chip") == Approx(per_chip).epsilon(1e-8));
  }
}

TEST_CASE("a failed point is a row with its error and no metrics") {
  std::vector<json> reports{report(16, 10, 1000, 0.1),   nullptr,
                            report(64, 10, 4000, 0.2),   report(64, 10, 4000, 0.2),
                            report(256, 10, 16000, 0.3), report(256, 10, 16000, 0.3)};
  const CsvTable t = table_of(plan_of_six(), reports);
  CHECK(t.cell(1, "status") == "failed");
  CHECK(t.cell(1, "error") == "boom");
  CHECK(t.cell(1, "step_time_ms").empty());
  // Series wus=true has lost its 16-chip point: its reference is the 64-chip one.
  CHECK(*t.number(3, "scaling_efficiency") == 1);
}

TEST_CASE("CSV tables round-trip quotes and commas and comments") {
  CsvTable t;
  t.comments = {"a comment"};
  t.header = {"a", "b"};
  t.rows = {{"x,y", "say \"hi\""}, {"", "line\nbreak"}};
  char tmpl[] = "/tmp/tpusim_csv_XXXXXX";
  int fd = mkstemp(tmpl);
  close(fd);
  write_csv(tmpl, t);
  const CsvTable back = read_csv(tmpl);
  std::remove(tmpl);
  CHECK(back.comments == t.comments);
  CHECK(back.header == t.header);
  CHECK(back.rows == t.rows);
}

TEST_CASE("golden comparison passes on itself and names every drift") {
  std::vector<json> reports;
  for (double chips : {16.0, 16.0, 64.0, 64.0, 256.0, 256.0})
    reports.push_back(report(chips, 10, 100 * chips, 0.2));
  const Plan plan = plan_of_six();
  const CsvTable golden = golden_from_results(table_of(plan, reports), "s.json", "test");
  CHECK(compare_to_golden(golden, table_of(plan, reports), 0.02).empty());

  auto moved = reports;
  moved[2]["step_time_ms"] = 10 * 1.03;  // 3 % slower: beyond 2 %
  moved[3]["step_time_ms"] = 10 * 1.01;  // 1 %: within
  moved[4]["comm_share"] = 0.2 + 0.025;  // 2.5 points of the step: beyond
  auto drifts = compare_to_golden(golden, table_of(plan, moved), 0.02);
  REQUIRE(drifts.size() == 2);
  CHECK(drifts[0].point == "topology=8x8 wus=false");
  CHECK(drifts[0].metric == "step_time_ms");
  CHECK(drifts[0].difference == "+3.00%");
  CHECK(drifts[1].metric == "comm_share");
  CHECK(drifts[1].point == "topology=16x16 wus=false");
  CHECK(compare_to_golden(golden, table_of(plan, moved), 0.04).empty());
}

TEST_CASE("golden comparison counts missing and extra and failed points as drifts") {
  std::vector<json> reports;
  for (double chips : {16.0, 16.0, 64.0, 64.0, 256.0, 256.0})
    reports.push_back(report(chips, 10, 100 * chips, 0.2));
  Plan plan = plan_of_six();
  const CsvTable golden = golden_from_results(table_of(plan, reports), "s.json", "test");

  Plan fewer = plan;
  fewer.points.pop_back();
  auto drifts = compare_to_golden(golden, table_of(fewer, reports), 0.02);
  REQUIRE(drifts.size() == 1);
  CHECK_THAT(drifts[0].difference, Catch::Contains("missing point"));

  Plan more = plan;
  more.points.push_back({6, "id6", {"32x32", false}});
  auto more_reports = reports;
  more_reports.push_back(report(1024, 10, 102400, 0.2));
  drifts = compare_to_golden(golden, table_of(more, more_reports), 0.02);
  REQUIRE(drifts.size() == 1);
  CHECK_THAT(drifts[0].difference, Catch::Contains("extra point"));

  auto failed = reports;
  failed[0] = nullptr;
  drifts = compare_to_golden(golden, table_of(plan, failed), 0.02);
  REQUIRE(drifts.size() == 1);
  CHECK(drifts[0].metric == "status");
  CHECK(drifts[0].got == "failed");
}

TEST_CASE("a golden says it is a regression golden and drops run-to-run columns") {
  std::vector<json> reports;
  for (double chips : {16.0, 16.0, 64.0, 64.0, 256.0, 256.0})
    reports.push_back(report(chips, 10, 100 * chips, 0.2));
  const CsvTable g = golden_from_results(table_of(plan_of_six(), reports), "s.json", "test");
  REQUIRE(!g.comments.empty());
  CHECK_THAT(g.comments[0], Catch::Contains("REGRESSION GOLDEN"));
  CHECK(g.column("wall_s") < 0);
}

TEST_CASE("tolerances are percentages or fractions") {
  CHECK(parse_tolerance("2%") == Approx(0.02));
  CHECK(parse_tolerance("0.5%") == Approx(0.005));
  CHECK(parse_tolerance("0.02") == Approx(0.02));
  CHECK_THROWS_AS(parse_tolerance("2"), tpusim::ConfigError);
  CHECK_THROWS_AS(parse_tolerance("-1%"), tpusim::ConfigError);
  CHECK_THROWS_AS(parse_tolerance("abc"), tpusim::ConfigError);
}

TEST_CASE("golden comparison counts nan against a number as a drift, nan against nan as none") {
  std::vector<json> reports;
  for (double chips : {16.0, 16.0, 64.0, 64.0, 256.0, 256.0})
    reports.push_back(report(chips, 10, 100 * chips, 0.2));
  const Plan plan = plan_of_six();
  CsvTable golden = golden_from_results(table_of(plan, reports), "s.json", "test");
  CsvTable current = table_of(plan, reports);
  for (const char* metric : {"step_time_ms", "comm_share"}) {
    INFO(metric);
    CsvTable now = current;
    now.rows[1][static_cast<std::size_t>(now.column(metric))] = "nan";
    auto drifts = compare_to_golden(golden, now, 0.5);  // any tolerance: nan is never within it
    REQUIRE(drifts.size() == 1);
    CHECK(drifts[0].metric == metric);
    CHECK(drifts[0].got == "nan");
    CHECK(drifts[0].difference == "not a number");
    CsvTable nan_golden = golden;
    nan_golden.rows[1][static_cast<std::size_t>(nan_golden.column(metric))] = "nan";
    CHECK(compare_to_golden(nan_golden, now, 0.02).empty());
    CHECK(compare_to_golden(nan_golden, current, 0.5).size() == 1);  // the golden's nan too
  }
}
