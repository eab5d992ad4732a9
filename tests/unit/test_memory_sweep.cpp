// Sweep results of points out of memory: their own status, peak and headroom columns, and a
// golden check that treats "oom" like any other value.
#include <catch2/catch.hpp>

#include "tools/sweep/golden.hpp"
#include "tools/sweep/results.hpp"

using nlohmann::json;
using namespace tpusim::sweep;

namespace {
constexpr double kMemorySweepGiB = 1073741824.0;

json memory(double peak_GiB, double capacity_GiB) {
  return {{"known", true},
          {"peak_bytes", peak_GiB * kMemorySweepGiB},
          {"capacity_bytes", capacity_GiB * kMemorySweepGiB},
          {"headroom_bytes", (capacity_GiB - peak_GiB) * kMemorySweepGiB},
          {"peak_op", "x.bwd"}};
}

json ok_report(double peak_GiB) {
  return {{"step_time_ms", 10.0},
          {"compute_ms", 9.0},
          {"communication_ms", 1.0},
          {"exposed_communication_ms", 1.0},
          {"comm_share", 0.1},
          {"mxu_utilization", 0.5},
          {"examples_per_s", 100.0},
          {"chips", 16},
          {"cores", 32},
          {"model", "m"},
          {"layout", "data=32"},
          {"wall_s", 0.1},
          {"out_of_memory", false},
          {"memory", memory(peak_GiB, 16)}};
}

json oom_report(double peak_GiB) {
  return {{"out_of_memory", true}, {"chips", 16},         {"cores", 32},
          {"model", "m"},          {"layout", "data=32"}, {"memory", memory(peak_GiB, 16)}};
}

Plan plan_of_two() {
  Plan p;
  p.sweep_file = "s.json";
  p.columns = {"batch"};
  for (std::size_t i = 0; i < 2; ++i) p.points.push_back({i, "id" + std::to_string(i), {i}});
  return p;
}

CsvTable outcome_table(const Plan& plan, const std::vector<PointOutcome>& outcomes) {
  return results_table(plan, {0, 1}, [&](const PlanPoint& p) { return outcomes[p.index]; });
}
}  // namespace

TEST_CASE("memory sweep: an oom point has its status, peak and headroom, and no timing") {
  REQUIRE(check_oom_report(oom_report(20)).empty());
  CHECK_FALSE(check_report(oom_report(20)).empty());  // not a successful run's report
  CHECK_THAT(check_oom_report(json{{"out_of_memory", true}}), Catch::Contains("chips"));
  const Plan plan = plan_of_two();
  const CsvTable t = outcome_table(
      plan, {{PointState::Ok, ok_report(12), ""}, {PointState::Oom, oom_report(20), ""}});
  CHECK(t.cell(0, "status") == "ok");
  CHECK(*t.number(0, "peak_memory_GiB") == Approx(12));
  CHECK(*t.number(0, "memory_headroom_GiB") == Approx(4));
  CHECK(t.cell(1, "status") == "oom");
  CHECK(*t.number(1, "peak_memory_GiB") == Approx(20));
  CHECK(*t.number(1, "memory_headroom_GiB") == Approx(-4));
  CHECK(t.cell(1, "step_time_ms").empty());
  CHECK(t.cell(1, "error").empty());
  CHECK(finished(PointState::Oom));
  CHECK_FALSE(finished(PointState::Failed));
}

TEST_CASE("memory sweep: --check compares oom like any other value") {
  const Plan plan = plan_of_two();
  const CsvTable both = outcome_table(
      plan, {{PointState::Ok, ok_report(12), ""}, {PointState::Oom, oom_report(20), ""}});
  CHECK(compare_to_golden(both, both, 0.02).empty());
  // The golden's point 1 fitted; now it does not: one drift on its status.
  const CsvTable fitted = outcome_table(
      plan, {{PointState::Ok, ok_report(12), ""}, {PointState::Ok, ok_report(15), ""}});
  const auto drifts = compare_to_golden(fitted, both, 0.02);
  REQUIRE(drifts.size() == 1);
  CHECK(drifts[0].metric == "status");
  CHECK(drifts[0].expected == "ok");
  CHECK(drifts[0].got == "oom");
}
