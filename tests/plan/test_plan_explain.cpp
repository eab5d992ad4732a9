// Why the winner of `tpusim plan` wins, and what may fit when nothing does
// (tools/plan/explain.hpp), on plans made up here with known figures.
#include <catch2/catch.hpp>

#include "tools/plan/explain.hpp"
#include "tools/plan/output.hpp"

using namespace tpusim::plan;
using nlohmann::json;

namespace {
json candidate(const std::string& id, int rank, double step_ms, double rate, int model, int bucket,
               double compute_ms, double exposed) {
  return {{"id", id},
          {"rank", rank},
          {"layout", "model=" + std::to_string(model) + " bucket_MiB=" + std::to_string(bucket)},
          {"values", {{"parallelism.model", model}, {"parallelism.grad_bucket_MiB", bucket}}},
          {"step_time_ms", step_ms},
          {"examples_per_s_per_chip", rate},
          {"compute_ms", compute_ms},
          {"exposed_comm_share", exposed},
          {"mxu_utilization", 0.4}};
}
}  // namespace

TEST_CASE("plan explain: the margin over the runner-up, the axes they differ in, near ties") {
  json c;
  c["a"] = candidate("a", 1, 40.0, 50.0, 2, 128, 30.0, 0.25);
  c["b"] = candidate("b", 2, 40.5, 49.4, 2, 32, 30.0, 0.26);
  c["c"] = candidate("c", 3, 44.0, 45.0, 1, 128, 33.0, 0.25);
  const json e = explain_winner(c, "a", "step_time", 2.0);
  CHECK(e["margin"]["runner_up"] == "b");
  CHECK(e["margin"]["step_time_ms"].get<double>() == Approx(0.5));
  CHECK(e["margin"]["percent"].get<double>() == Approx(100 * 0.5 / 40));
  REQUIRE(e["differs"].size() == 1);
  CHECK(e["differs"][0]["axis"] == "parallelism.grad_bucket_MiB");
  CHECK(e["differs"][0]["winner"] == 128);
  CHECK(e["differs"][0]["runner_up"] == 32);
  // 40.5 is within 2 % of 40 (40.8), 44 is not.
  CHECK(e["near_ties"] == json::array({"b"}));
  // 30 of 40 ms computing (75 %) against 25 % exposed communication: bound by compute.
  CHECK(e["bound"]["by"] == "compute");
  CHECK(e["bound"]["compute_share"].get<double>() == Approx(0.75));
  // A tighter tie share leaves no tie; a wider one takes both.
  CHECK(explain_winner(c, "a", "step_time", 1.0)["near_ties"].empty());
  CHECK(explain_winner(c, "a", "step_time", 10.0)["near_ties"].size() == 2);
}

TEST_CASE("plan explain: by throughput the margin is in examples per second per chip") {
  json c;
  c["a"] = candidate("a", 1, 80.0, 100.0, 1, 32, 20.0, 0.7);
  c["b"] = candidate("b", 2, 40.0, 90.0, 2, 32, 10.0, 0.7);
  const json e = explain_winner(c, "a", "examples_per_s_per_chip", 2.0);
  CHECK(e["margin"]["examples_per_s_per_chip"].get<double>() == Approx(10.0));
  // Cost is 1/rate: (1/90 - 1/100) / (1/100) = 11.1 %.
  CHECK(e["margin"]["percent"].get<double>() == Approx(100.0 * (100.0 / 90.0 - 1)));
  CHECK(e["near_ties"].empty());
  // 25 % computing, 70 % exposed: bound by communication.
  CHECK(e["bound"]["by"] == "communication");
  // One layout: no margin.
  json one;
  one["a"] = c["a"];
  CHECK_FALSE(explain_winner(one, "a", "step_time", 2.0).contains("margin"));
}

TEST_CASE("plan explain: when nothing fits, the axes whose largest value has the smallest peak") {
  const double GiB = 1 << 30;
  // The model degree lowers the peak to its last value; the bucket size does not matter.
  std::vector<AxisPeaks> peaks{
      {"parallelism.model", {1, 2, 4}, {40 * GiB, 24 * GiB, 18 * GiB}},
      {"parallelism.grad_bucket_MiB", {8, 32}, {18 * GiB, 18 * GiB}},
      {"parallelism.weight_update_sharding", {false, true}, {30 * GiB, 18 * GiB}}};
  const std::string s = what_would_fit(peaks, {"workload.rematerialize"});
  CHECK_THAT(s, Catch::Contains("larger values may fit: parallelism.model (the peak falls from "
                                "40.00 GiB at 1 to 18.00 GiB at 4, the largest searched: --space "
                                "parallelism.model=...,8)"));
  CHECK_THAT(s, !Catch::Contains("grad_bucket_MiB"));
  CHECK_THAT(s, !Catch::Contains("weight_update_sharding ("));  // searched, and not a number
  CHECK_THAT(s, Catch::Contains("axes not searched that save memory: --space "
                                "workload.rematerialize=false,true"));
  CHECK(what_would_fit({}, {}) ==
        "; no axis of the space lowers the peak enough: a larger slice or chip");
}

TEST_CASE("plan output: rates have at least four significant digits") {
  using tpusim::cli::rate_text;
  CHECK(rate_text(50.1234) == "50.12");
  CHECK(rate_text(0.012346) == "0.01235");  // not 0.0
  CHECK(rate_text(1234.5) == "1234.5");
  CHECK(rate_text(0) == "0.0");
}
