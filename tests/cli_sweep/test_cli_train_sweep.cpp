// Time to train as a sweep metric: a sweep with "command": "train" runs tpusim train per point.
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "tests/cli/sweep_fixture.hpp"

TEST_CASE("a train sweep writes time_to_train_s per point and tpusim plot draws it") {
  SweepScratch s;
  nlohmann::json study = small_bert_study();
  study["train"] = {{"target_steps", 20}, {"eval_every_steps", 10}, {"eval_examples", 32}};
  const std::string sweep =
      s.write("ttt.json", {{"base", study},
                           {"command", "train"},
                           {"axes", {{{"path", "topology"}, {"values", {"2x2", "4x2"}}}}}});
  auto r = run_tpusim({"sweep", sweep, "-j", "2", "--out", s.path("out")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto t = results_of(s.path("out"));
  REQUIRE(t.rows.size() == 2);
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    CHECK(t.cell(i, "status") == "ok");
    // The row holds what tpusim train reports for the same point.
    const auto report = point_report(s.path("out"), t.cell(i, "id"));
    REQUIRE(t.number(i, "time_to_train_s"));
    CHECK(*t.number(i, "time_to_train_s") ==
          Approx(report["time_to_train_s"].get<double>()).epsilon(1e-6));
    CHECK(*t.number(i, "step_time_ms") ==
          Approx(report["step_time_ms"].get<double>()).epsilon(1e-6));
    CHECK(t.cell(i, "comm_share").empty());  // a step metric train does not report
  }
  // Twice the chips at the same global batch: a shorter time to train.
  CHECK(*t.number(1, "time_to_train_s") < *t.number(0, "time_to_train_s"));
  auto p = run_tpusim({"plot", "--dpi", "96", s.path("out/results.csv"), "--out", s.path("plots")});
  INFO(p.err);
  CHECK(p.exit_code == 0);
  CHECK(std::filesystem::exists(s.path("plots/time_to_train.png")));
  CHECK_FALSE(std::filesystem::exists(s.path("plots/comm_share.png")));
}

TEST_CASE("a train sweep checks every point's train.* facts before running, exit 2") {
  SweepScratch s;
  const std::string sweep =
      s.write("bad.json", {{"base", small_bert_study()},
                           {"command", "train"},
                           {"axes", {{{"path", "topology"}, {"values", {"2x2"}}}}}});
  auto r = run_tpusim({"sweep", sweep, "--out", s.path("out")});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("train.target_steps"));
  const std::string bad_command =
      s.write("cmd.json", {{"base", small_bert_study()},
                           {"command", "replay"},
                           {"axes", {{{"path", "topology"}, {"values", {"2x2"}}}}}});
  r = run_tpusim({"sweep", bad_command, "--out", s.path("out2")});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("command"));
}
