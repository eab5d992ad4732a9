// Bad sweep input: every problem at once, JSON paths, exit code 2, nothing run.
#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/cli/sweep_fixture.hpp"

using nlohmann::json;

TEST_CASE("a bad sweep file reports all its problems at once and runs nothing") {
  SweepScratch s;
  const auto sweep = s.write("bad.json", json::parse(R"({"base": {}, "colour": "red", "axes": [
      {"zip": [{"path": "topology", "values": ["2x2", "4x4"]}, {"name": "n", "values": [1, 2, 3]}]},
      {"path": "hardware.ici.bandwidth_GBps", "values": []},
      {"path": "workload.global_batch", "expr": "8 * cores +"}]})"));
  auto r = run_tpusim({"sweep", sweep, "--out", s.path("out")});
  CHECK(r.exit_code == 2);
  CHECK(r.err_lines() == 4);
  CHECK_THAT(r.err, Catch::Contains("colour: unknown key"));
  CHECK_THAT(r.err, Catch::Contains("axes[0].zip: zipped axes must have equal lengths"));
  CHECK_THAT(r.err, Catch::Contains("axes[1].values"));
  CHECK_THAT(r.err, Catch::Contains("axes[2].expr"));
  CHECK(!std::filesystem::exists(s.path("out")));
}

TEST_CASE("an invalid point stops the sweep before any point runs") {
  SweepScratch s;
  const auto sweep =
      s.write("s.json", {{"base", small_bert_study()},
                         {"axes",
                          {{{"path", "hardware.ici.bandwidth_GBps"}, {"values", {100, -3}}},
                           {{"path", "workload.model"}, {"values", {"bert_large", "gpt9"}}}}}});
  auto r = run_tpusim({"sweep", sweep, "--out", s.path("out")});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err,
             Catch::Contains("point 2 [hardware.ici.bandwidth_GBps=-3 workload.model=bert_large]"));
  CHECK_THAT(r.err,
             Catch::Contains(
                 "point 1 [hardware.ici.bandwidth_GBps=100 workload.model=gpt9]: workload.model"));
  CHECK(!std::filesystem::exists(s.path("out")));
}

TEST_CASE("layout problems of a point are found before any point runs") {
  SweepScratch s;
  // 16 sequences divide over the 16 cores of 4x2 but not over the 32 of 4x4.
  const auto sweep =
      s.write("s.json", {{"base", small_bert_study()},
                         {"axes", {{{"path", "topology"}, {"values", {"4x2", "4x4"}}}}}});
  auto r = run_tpusim({"sweep", sweep, "--out", s.path("out")});
  CHECK(r.exit_code == 2);
  CHECK(r.err_lines() == 1);
  CHECK_THAT(r.err, Catch::Contains("point 1 [topology=4x4]: workload.global_batch"));
  CHECK(!std::filesystem::exists(s.path("out")));
}

TEST_CASE("bad sweep options are one error line with exit code 2") {
  SweepScratch s;
  const auto sweep = s.write("s.json", {{"base", small_bert_study()},
                                        {"axes", {{{"path", "topology"}, {"values", {"2x2"}}}}}});
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"sweep", sweep, "--shard", "4/3"},
           {"sweep", sweep, "--shard", "x"},
           {"sweep", sweep, "--update-golden"},
           {"sweep", sweep, "--check", s.path("none.csv")},
           {"sweep", sweep, "--check", s.path("g.csv"), "--update-golden", "--tolerance", "much"},
           {"sweep", sweep, "-j", "0"},
           {"sweep", s.path("no_such_sweep.json")},
           {"merge", s.path("not_a_sweep_dir"), "--out", s.path("m")},
           {"plot", s.path("no.csv"), "--out", s.path("p")}}) {
    auto r = run_tpusim(args);
    std::string cmd;
    for (const auto& a : args) cmd += a + " ";
    INFO(cmd << "\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err_lines() == 1);
  }
}
