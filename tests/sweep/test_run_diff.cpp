// tpusim diff's comparison: which fields are compared, how, and in which order.
#include <catch2/catch.hpp>
#include <cmath>

#include "tools/compare/diff.hpp"

using nlohmann::json;
using namespace tpusim::sweep;

namespace {
json report(double step_ms, double top_ms, double wall_s, int config_x, const std::string& model) {
  return {{"schema_version", 1},
          {"step_time_ms", step_ms},
          {"comm_share", 0.25},
          {"wall_s", wall_s},
          {"memory", {{"analysis_s", wall_s / 1000}}},
          {"model", model},
          {"top_ops", {{{"op", "a"}, {"time_ms", top_ms}}}},
          {"config", {{"x", config_x}}}};
}
}  // namespace

TEST_CASE("report diff: numbers by relative difference, wall time ignored, config as inputs") {
  const double step_a = 10, step_b = 11, top_a = 2, top_b = 1;
  const RunDiff d =
      diff_reports(report(step_a, top_a, 1, 1, "m"), report(step_b, top_b, 7, 2, "n"), "A", "B");
  REQUIRE(d.numbers.size() == 2);
  // |1 - 2| / 2 = 50 % comes before |11 - 10| / 10 = 10 %.
  CHECK(d.numbers[0].where == "top_ops[a].time_ms");
  CHECK(d.numbers[0].relative() == Approx((top_b - top_a) / top_a));
  CHECK(d.numbers[1].where == "step_time_ms");
  CHECK(d.numbers[1].absolute() == Approx(step_b - step_a));
  CHECK(d.numbers[1].relative() == Approx((step_b - step_a) / step_a));
  CHECK(d.equal == 2);  // schema_version, comm_share; wall_s, memory.analysis_s are not compared
  REQUIRE(d.inputs.size() == 1);
  CHECK(d.inputs[0].where == "x");
  REQUIRE(d.results.size() == 1);
  CHECK(d.results[0].where == "model");
  // Beyond 20 %: the top op and the changed model name; beyond 5 %: the step time too.
  CHECK(d.beyond(0.2) == 2);
  CHECK(d.beyond(0.05) == 3);
}

TEST_CASE("relative difference from zero is infinite and sorts first") {
  json a = report(10, 2, 1, 1, "m"), b = report(10, 2, 1, 1, "m");
  a["x_ms"] = 0.0;
  b["x_ms"] = 0.001;
  const RunDiff d = diff_reports(a, b, "A", "B");
  REQUIRE(d.numbers.size() == 1);
  CHECK(std::isinf(d.numbers[0].relative()));
  CHECK(d.beyond(0.99) == 1);
}

TEST_CASE("a document that is not a report is bad input naming the file") {
  CHECK_THROWS_WITH(diff_reports(json{{"a", 1}}, report(1, 1, 1, 1, "m"), "x.json", "y.json"),
                    Catch::Contains("x.json") && Catch::Contains("not a tpusim JSON report"));
}

TEST_CASE("results diff matches points by their swept values, not their row order") {
  CsvTable a, b;
  a.header = b.header = {"point", "id", "status", "chips_axis", "series", "step_time_ms", "wall_s"};
  a.rows = {{"0", "p0", "ok", "16", "s", "100", "1"},
            {"1", "p1", "ok", "32", "s", "50", "1"},
            {"2", "p2", "ok", "64", "s", "25", "1"}};
  // B lists the points in another order, lacks the 64-chip one and is 4 % slower at 32.
  b.rows = {{"0", "q1", "ok", "32", "s", "52", "9"}, {"1", "q0", "ok", "16", "s", "100", "9"}};
  const RunDiff d = diff_results(a, b);
  REQUIRE(d.numbers.size() == 1);
  CHECK(d.numbers[0].where == "chips_axis=32 step_time_ms");
  CHECK(d.numbers[0].relative() == Approx((52.0 - 50.0) / 50.0));
  CHECK(d.equal == 1);  // step time at 16; point, id and wall_s are not compared
  REQUIRE(d.results.size() == 1);
  CHECK(d.results[0].where == "chips_axis=64");
  CHECK(d.results[0].b == "(absent)");
  CHECK(d.beyond(0.05) == 1);  // the missing point
  CHECK(d.beyond(0.01) == 2);
}

TEST_CASE("diff counts nan against a number as a difference beyond any tolerance") {
  CsvTable a, b;
  a.header = b.header = {"point", "id", "status", "chips_axis", "series", "step_time_ms"};
  a.rows = {{"0", "p0", "ok", "16", "s", "100"}, {"1", "p1", "ok", "32", "s", "nan"}};
  b.rows = {{"0", "q0", "ok", "16", "s", "nan"}, {"1", "q1", "ok", "32", "s", "nan"}};
  const RunDiff d = diff_results(a, b);
  CHECK(d.numbers.empty());
  REQUIRE(d.results.size() == 1);
  CHECK(d.results[0].where == "chips_axis=16 step_time_ms");
  CHECK(d.results[0].a == "100");
  CHECK(d.results[0].b == "nan");
  CHECK(d.equal == 1);  // nan and nan at 32 chips: the same value
  CHECK(d.beyond(1e9) == 1);
}
