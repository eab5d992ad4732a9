// tpusim run with workload.program = eval: the evaluation step of a study.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/cli/bad_input.hpp"

TEST_CASE("tpusim run --set workload.program=eval simulates the forward-only eval step") {
  const char* study = "configs/studies/bert_large_16.json";
  auto train = run_tpusim({"run", study, "--json"});
  auto eval = run_tpusim({"run", study, "--json", "--set", "workload.program=eval"});
  REQUIRE(train.exit_code == 0);
  REQUIRE(eval.exit_code == 0);
  const auto t = nlohmann::json::parse(train.out), e = nlohmann::json::parse(eval.out);
  // One third of the training FLOPs (forward of forward + backward + optimizer), so a shorter
  // step; pure data parallel: no collective at all.
  CHECK(e["useful_tflop_per_core"].get<double>() < 0.4 * t["useful_tflop_per_core"].get<double>());
  CHECK(e["step_time_ms"].get<double>() < t["step_time_ms"].get<double>());
  CHECK(e["collective_ops"].get<int>() == 0);
  CHECK(e["config"]["workload"]["program"] == "eval");
}

TEST_CASE("a bad program or eval batch is one error line naming the path, exit 2") {
  for (const auto& [set, path] : std::vector<std::pair<std::string, std::string>>{
           {"workload.program=infer", "workload.program"},
           {"workload.eval_batch=33", "workload.eval_batch"},
           {"workload.eval_batch=-1", "workload.eval_batch"}}) {
    auto r = run_tpusim({"run", "configs/studies/bert_large_16.json", "--set",
                         "workload.program=eval", "--set", set});
    check_bad_input(r, path);
  }
}
