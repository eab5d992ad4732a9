// Config errors do not hide layout errors: run, validate, train and a sweep's point check report
// both at once, the config's first, with the layout checked on defaults in place of the values
// with a problem; a layout error that only such a default would cause is not shown.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/cli/sweep_fixture.hpp"

namespace {

const std::string kCliConfigAndLayoutErrorsStudy = "configs/studies/bert_large_16.json";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// The data replicas of the shipped study: its cores over model x spatial.
long long data_replicas() {
  auto v = run_tpusim({"validate", kCliConfigAndLayoutErrorsStudy, "--json"});
  REQUIRE(v.exit_code == 0);
  const auto j = nlohmann::json::parse(v.out);
  return j["cores"].get<long long>() / (j["config"]["parallelism"]["model"].get<long long>() *
                                        j["config"]["parallelism"]["spatial"].get<long long>());
}

}  // namespace

TEST_CASE("a config error and a layout error are reported together, one line each") {
  const long long replicas = data_replicas();
  const std::string batch = std::to_string(replicas + 1);
  for (const std::string command : {"validate", "run"}) {
    auto r = run_tpusim(with_sets({command, kCliConfigAndLayoutErrorsStudy},
                                  {"hardware.clock_MHz=-5", "workload.global_batch=" + batch}));
    INFO(command << "\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    const auto lines = lines_of(r.err);
    REQUIRE(lines.size() == 2);
    CHECK(starts_with(lines[0], "tpusim: error: hardware.clock_MHz: -5 is not allowed"));
    CHECK(starts_with(lines[1], "tpusim: error: workload.global_batch: " + batch +
                                    " examples do not divide over the " + std::to_string(replicas) +
                                    " data replicas"));
  }
}

TEST_CASE("train reports the schedule's and both programs' problems beside a config error") {
  SweepScratch s;
  // No train.target_steps: tpusim train cannot count the steps. Batch 12 does not divide over
  // the 8 cores of 2x2, for the training program nor for the eval program (eval_batch 0).
  const std::string study = s.write("study.json", small_bert_study());
  auto r = run_tpusim(
      {"train", study, "--set", "hardware.clock_MHz=-5", "--set", "workload.global_batch=12"});
  INFO(r.err);
  CHECK(r.exit_code == 2);
  const auto lines = lines_of(r.err);
  REQUIRE(lines.size() == 3);
  CHECK(starts_with(lines[0], "tpusim: error: hardware.clock_MHz: -5 is not allowed"));
  CHECK(starts_with(lines[1], "tpusim: error: train.target_steps: "));
  CHECK(starts_with(lines[2],
                    "tpusim: error: workload.global_batch: 12 examples do not divide "
                    "over the 8 data replicas"));
}

TEST_CASE("a bad value that the layout reads shows its own problem, not the default's") {
  const long long replicas = data_replicas();
  // The batch itself is wrong: its default stands in, and the layout is not judged on it.
  auto batch =
      run_tpusim({"validate", kCliConfigAndLayoutErrorsStudy, "--set", "workload.global_batch=-1"});
  CHECK(batch.exit_code == 2);
  CHECK(batch.err_lines() == 1);
  CHECK_THAT(batch.err, Catch::Contains("workload.global_batch: -1 is not allowed"));

  // 12 heads do not divide the default hidden of BERT-Large: with hidden wrong, that is only the
  // stand-in's problem.
  auto heads =
      run_tpusim({"validate", kCliConfigAndLayoutErrorsStudy, "--set", "workload.heads=12"});
  REQUIRE_THAT(heads.err,
               Catch::Contains("workload.heads: 12 heads do not divide workload.hidden"));
  auto hidden = run_tpusim({"validate", kCliConfigAndLayoutErrorsStudy, "--set",
                            "workload.heads=12", "--set", "workload.hidden=-3"});
  CHECK(hidden.exit_code == 2);
  CHECK(hidden.err_lines() == 1);
  CHECK_THAT(hidden.err, Catch::Contains("workload.hidden: -3 is not allowed"));

  // A wrong model degree: the replicas of its stand-in (model 1) are not the user's, so no batch
  // is judged against them.
  auto degree =
      run_tpusim({"validate", kCliConfigAndLayoutErrorsStudy, "--set", "parallelism.model=0",
                  "--set", "workload.global_batch=" + std::to_string(replicas / 2)});
  CHECK(degree.exit_code == 2);
  CHECK(degree.err_lines() == 1);
  CHECK_THAT(degree.err, Catch::Contains("parallelism.model: 0 is not allowed"));

  // A wrong model name: no stand-in at all (every workload parameter depends on the model).
  auto model =
      run_tpusim({"validate", kCliConfigAndLayoutErrorsStudy, "--set", "workload.model=gpt9",
                  "--set", "workload.global_batch=" + std::to_string(replicas + 1)});
  CHECK(model.exit_code == 2);
  CHECK(model.err_lines() == 1);
  CHECK_THAT(model.err, Catch::Contains("workload.model: \"gpt9\" is not allowed"));
}

TEST_CASE("config errors without a layout error read as from a command without layout checks") {
  // tpusim collective loads its study without any layout: the same --set gives the same lines.
  const std::vector<std::string> sets = {"hardware.clock_MHz=-5", "network.speed=3",
                                         "hardware.ici.bandwidth_GBps=x"};
  auto reference =
      run_tpusim(with_sets({"collective", "--op", "all-reduce", "--bytes", "1MiB"}, sets));
  REQUIRE(reference.exit_code == 2);
  REQUIRE(reference.err_lines() == 3);
  for (const std::string command : {"validate", "run"}) {
    auto r = run_tpusim(with_sets({command, kCliConfigAndLayoutErrorsStudy}, sets));
    INFO(command);
    CHECK(r.exit_code == 2);
    CHECK(r.err == reference.err);
  }
}

namespace {
/// A sweep of `study` whose point 1 has clock -5 and 12 sequences over the 8 cores of 2x2: a
/// config error and a layout error. `command`: the sweep's command (run or train).
std::string sweep_with_two_errors(SweepScratch& s, nlohmann::json study,
                                  const std::string& command) {
  return s.write("s.json", {{"base", std::move(study)},
                            {"command", command},
                            {"axes",
                             {{{"zip",
                                {{{"path", "hardware.clock_MHz"}, {"values", {900, -5}}},
                                 {{"path", "workload.global_batch"}, {"values", {16, 12}}}}}}}}});
}
}  // namespace

TEST_CASE("a sweep point with a config error and a layout error reports both") {
  SweepScratch s;
  auto r = run_tpusim(
      {"sweep", sweep_with_two_errors(s, small_bert_study(), "run"), "--out", s.path("out")});
  INFO(r.err);
  CHECK(r.exit_code == 2);
  const std::string point = "point 1 [hardware.clock_MHz=-5 workload.global_batch=12]: ";
  const auto lines = lines_of(r.err);
  REQUIRE(lines.size() == 2);
  CHECK(starts_with(lines[0], "tpusim: error: " + point + "hardware.clock_MHz: -5 is not allowed"));
  CHECK(starts_with(lines[1], "tpusim: error: " + point +
                                  "workload.global_batch: 12 examples do not divide over the 8 "
                                  "data replicas"));
  CHECK(!std::filesystem::exists(s.path("out")));
}

TEST_CASE("a train sweep point with a config error and a layout error reports both") {
  SweepScratch s;
  nlohmann::json study = small_bert_study();
  study["train"] = {{"target_steps", 20}, {"eval_every_steps", 10}, {"eval_examples", 32}};
  // Checked as tpusim train would check it.
  auto r = run_tpusim({"sweep", sweep_with_two_errors(s, study, "train"), "--out", s.path("out")});
  INFO(r.err);
  CHECK(r.exit_code == 2);
  const auto lines = lines_of(r.err);
  REQUIRE(lines.size() == 2);
  CHECK_THAT(lines[0], Catch::Contains("point 1 [") && Catch::Contains("hardware.clock_MHz: -5"));
  CHECK_THAT(lines[1], Catch::Contains("point 1 [") &&
                           Catch::Contains("workload.global_batch: 12 examples do not divide"));
}

TEST_CASE("train leaves out the schedule's problems when the batch it counts steps with is wrong") {
  // The declared default batch of BERT-Large, which stands in for a wrong one.
  auto params = run_tpusim({"params", "--json", "workload.global_batch"});
  REQUIRE(params.exit_code == 0);
  long long batch = 0;
  for (const auto& p : nlohmann::json::parse(params.out))
    if (p.value("when", "") == "workload.model=bert_large") batch = p["default"].get<long long>();
  REQUIRE(batch > 0);
  // One epoch of as many examples as the default batch is one step, not a multiple of the 2
  // steps between evaluations: a problem of the default batch only.
  SweepScratch s;
  nlohmann::json study = small_bert_study();
  study["train"] = {{"dataset_examples", batch},
                    {"target_epochs", 1},
                    {"eval_every_steps", 2},
                    {"eval_examples", 32}};
  const std::string file = s.write("study.json", study);
  auto with_default =
      run_tpusim({"train", file, "--set", "workload.global_batch=" + std::to_string(batch)});
  REQUIRE_THAT(with_default.err, Catch::Contains("train.target_epochs: "));
  auto r = run_tpusim({"train", file, "--set", "workload.global_batch=0"});
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err_lines() == 1);
  CHECK_THAT(r.err, Catch::Contains("workload.global_batch: 0 is not allowed"));
}
