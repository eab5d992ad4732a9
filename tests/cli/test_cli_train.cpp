// tpusim train: time to train from a simulated device loop with hosts and evaluation.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/cli/run_tpusim.hpp"

namespace {
const char* kCliTrainStudy = "configs/studies/bert_large_16.json";  // 16 chips: 4 hosts, batch 32

nlohmann::json train(std::vector<std::string> sets, const char* study = kCliTrainStudy) {
  sets.insert(sets.begin(),
              {"train.target_steps=40", "train.eval_every_steps=10", "train.eval_examples=96"});
  auto r = run_tpusim(with_sets({"train", study, "--json"}, sets));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

double step_ms(std::vector<std::string> sets) {
  auto r = run_tpusim(with_sets({"run", kCliTrainStudy, "--json"}, sets));
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out)["step_time_ms"].get<double>();
}
}  // namespace

TEST_CASE("a host slower than the device: the step period is the host's batch / rate") {
  // 32 examples over 4 hosts at 100 examples/s per host: 80 ms per batch, longer than the step.
  const double rate = 100, per_host = 32.0 / 4;
  auto j = train({"workload.host_examples_per_s=" + std::to_string(rate)});
  const auto& p = j["per_step"];
  const double period_ms = 1e3 * per_host / rate;
  CHECK(p["train_step_ms"].get<double>() + p["input_stall_per_train_step_ms"].get<double>() ==
        Approx(period_ms).epsilon(1e-6));
  CHECK(p["input_stall_per_train_step_ms"].get<double>() > 0);
  CHECK(j["step_time_ms"].get<double>() == Approx(period_ms).epsilon(1e-6));
  // The first batch is the start-up: one preprocessing period (plus its PCIe copy, microseconds).
  CHECK(j["breakdown"]["startup_s"].get<double>() == Approx(per_host / rate).epsilon(1e-3));
  // Hosts of unequal size (16 chips, 3 per host: five of 3 and one of 1): each gets its chips'
  // share of the batch, so the period is the largest host's 32 x 3 / 16 examples / rate.
  auto uneven = train(
      {"workload.host_examples_per_s=" + std::to_string(rate), "hardware.host.chips_per_host=3"});
  CHECK(uneven["hosts"] == 6);
  CHECK(uneven["step_time_ms"].get<double>() == Approx(1e3 * 32.0 * 3 / 16 / rate).epsilon(1e-6));
  // Fast hosts: no stall, and the training step is the one `tpusim run` simulates.
  auto fast = train({});
  CHECK(fast["breakdown"]["input_stall_s"].get<double>() == 0);
  CHECK(fast["per_step"]["train_step_ms"].get<double>() == Approx(step_ms({})).epsilon(1e-6));
}

TEST_CASE("PCIe-bound infeed: the period is a chip's bytes / PCIe bandwidth") {
  // A BERT example is (3 x 512 + 3 x 76 + 1) int32 = 7060 bytes; 2 examples per chip per step
  // over 100 kB/s: 141.2 ms per batch, longer than the step.
  auto j = train({"hardware.host.pcie_GBps=1e-4"});
  const double period_ms = 1e3 * (32.0 / 16) * 7060 / 1e5;
  CHECK(j["step_time_ms"].get<double>() == Approx(period_ms).epsilon(1e-4));
}

TEST_CASE("evaluation cost: evaluations x eval steps x the eval step of tpusim run") {
  auto j = train({"workload.eval_batch=64"});
  const auto& s = j["schedule"];
  CHECK(s["evaluations"] == 4);
  CHECK(s["eval_steps_per_evaluation"] == 2);  // 96 examples at 64 per step
  const double eval_ms = step_ms({"workload.program=eval", "workload.eval_batch=64"});
  CHECK(j["per_step"]["eval_step_ms"].get<double>() == Approx(eval_ms).epsilon(1e-6));
  CHECK(j["breakdown"]["evaluation_s"].get<double>() == Approx(4 * 2 * eval_ms * 1e-3));
  CHECK(j["time_to_train_s"].get<double>() ==
        Approx(j["breakdown"]["startup_s"].get<double>() +
               j["breakdown"]["training_s"].get<double>() +
               j["breakdown"]["evaluation_s"].get<double>() +
               j["breakdown"]["input_stall_s"].get<double>()));
}

TEST_CASE("loop composition: a few simulated steps predict the fully simulated loop") {
  // Host-bound throughout (100/s: 80 ms per batch) and device-bound (1e6/s): every step after
  // the first of its kind is steady, so composing 2 + 2 simulated steps equals simulating all
  // 10 + 3. In between (300/s: the host keeps up with training, not with evaluation) the queue
  // drains over the first eval steps, a transient the composition approximates: within 2 %.
  for (const auto& [rate, tolerance] :
       std::vector<std::pair<std::string, double>>{{"workload.host_examples_per_s=100", 1e-6},
                                                   {"workload.host_examples_per_s=1e6", 1e-6},
                                                   {"workload.host_examples_per_s=300", 0.02}}) {
    CAPTURE(rate);
    const std::vector<std::string> base{rate, "workload.eval_batch=32", "train.target_steps=10"};
    auto some = base, all = base;
    some.insert(some.end(), {"train.simulated_train_steps=2", "train.simulated_eval_steps=2"});
    all.insert(all.end(), {"train.simulated_train_steps=10", "train.simulated_eval_steps=3"});
    const double composed = train(some)["time_to_train_s"].get<double>();
    const double full = train(all)["time_to_train_s"].get<double>();
    CHECK(composed == Approx(full).epsilon(tolerance));
  }
}

TEST_CASE("tpusim train: bad input is one error line naming the path, exit 2") {
  for (const auto& [set, path] : std::vector<std::pair<std::string, std::string>>{
           {"workload.host_examples_per_s=0", "workload.host_examples_per_s"},
           {"train.target_steps=45", "train.target_steps"},
           {"train.eval_every_steps=0", "train.eval_every_steps"},
           {"hardware.host.pcie_GBps=0", "hardware.host.pcie_GBps"},
           {"train.simulated_train_steps=1", "train.simulated_train_steps"}}) {
    auto r =
        run_tpusim({"train", kCliTrainStudy, "--set", "train.target_steps=40", "--set",
                    "train.eval_every_steps=10", "--set", "train.eval_examples=96", "--set", set});
    INFO(set << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err_lines() == 1);
    CHECK_THAT(r.err, Catch::Contains(path));
  }
  // A study without the facts: the missing one is named.
  auto r = run_tpusim({"train", kCliTrainStudy});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("train.target_steps"));
}

TEST_CASE("tpusim train bert_large_4096 --json: time to train from the study's facts alone") {
  auto r = run_tpusim({"train", "configs/studies/bert_large_4096.json", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schedule"]["target_steps"] == 496);
  CHECK(j["schedule"]["evaluations"] == 8);
  CHECK(j["hosts"] == 1024);  // 4096 chips, 4 per host
  // 496 training steps of the simulated step, 8 evaluations of 2 eval steps, nothing input-bound
  // with the default host rate: the total is those plus the first batch's start-up.
  const auto& p = j["per_step"];
  const double predicted =
      j["breakdown"]["startup_s"].get<double>() +
      1e-3 * (p["first_train_step_ms"].get<double>() +
              7 * p["loop_first_train_step_ms"].get<double>() +
              8 * 61 * p["train_step_ms"].get<double>() + 8 * 2 * p["eval_step_ms"].get<double>());
  CHECK(j["breakdown"]["input_stall_s"].get<double>() == 0);
  CHECK(j["time_to_train_s"].get<double>() == Approx(predicted).epsilon(1e-9));
  CHECK(j["time_to_train_s"].get<double>() > 496 * p["train_step_ms"].get<double>() * 1e-3);
}
