// The detection models through the command: op classes in the report, eval steps, bad input.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/cli/bad_input.hpp"

TEST_CASE("tpusim run --top lists compute by op class, the JSON always holds it") {
  auto text = run_tpusim({"run", "configs/studies/maskrcnn_16.json", "--top", "3"});
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::Contains("compute by op class"));
  CHECK_THAT(text.out, Catch::Contains("one_hot_matmul f32"));
  CHECK_THAT(text.out, Catch::Contains("top_k f32"));
  auto plain = run_tpusim({"run", "configs/studies/maskrcnn_16.json"});
  CHECK_THAT(plain.out, !Catch::Contains("compute by op class"));
  auto json = run_tpusim({"run", "configs/studies/maskrcnn_16.json", "--json"});
  REQUIRE(json.exit_code == 0);
  const auto j = nlohmann::json::parse(json.out);
  // The classes partition the compute ops: their FLOPs add up to the step's useful FLOPs.
  double gflop = 0;
  int ops = 0;
  for (const auto& c : j["op_classes"]) {
    gflop += c["gflop_per_core"].get<double>();
    ops += c["ops"].get<int>();
  }
  CHECK(gflop * 1e-3 == Approx(j["useful_tflop_per_core"].get<double>()));
  CHECK(ops == j["ops"].get<int>() - j["collective_ops"].get<int>());
}

TEST_CASE("detection eval steps: forward plus NMS, shorter than the training step") {
  for (const char* study : {"configs/studies/ssd_64.json", "configs/studies/maskrcnn_16.json"}) {
    auto train = run_tpusim({"run", study, "--json"});
    auto eval = run_tpusim({"run", study, "--json", "--set", "workload.program=eval"});
    INFO(study << eval.err);
    REQUIRE(eval.exit_code == 0);
    const auto t = nlohmann::json::parse(train.out), e = nlohmann::json::parse(eval.out);
    CHECK(e["step_time_ms"].get<double>() < t["step_time_ms"].get<double>());
    bool nms = false;
    for (const auto& c : e["op_classes"]) nms = nms || c["class"] == "top_k f32";
    CHECK(nms);
  }
}

TEST_CASE("bad detection parameters: one error line naming the path, exit 2") {
  for (const auto& [study, set, path] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"maskrcnn_16", "workload.f32_matmul_precision=double", "workload.f32_matmul_precision"},
           {"maskrcnn_16", "workload.nms_self_suppression_iterations=0",
            "workload.nms_self_suppression_iterations"},
           {"maskrcnn_16", "workload.eval_detections=2000", "workload.eval_detections"},
           {"ssd_64", "workload.labels_partitioned=3", "workload.labels_partitioned"},
           {"ssd_64", "hardware.hbm.access_bytes=0", "hardware.hbm.access_bytes"}}) {
    auto r = run_tpusim({"run", "configs/studies/" + study + ".json", "--set", set});
    check_bad_input(r, path);
  }
}
