// tpusim train: time to train from a simulated device loop with hosts and evaluation.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/bad_input.hpp"

namespace {
const char* kCliTrainStudy = "configs/studies/bert_large_16.json";  // 16 chips: 4 hosts, batch 32

nlohmann::json train(std::vector<std::string> sets, const char* study = kCliTrainStudy) {
  // The schedule's defaults, where `sets` does not give the path (a path is --set once).
  for (const std::string d :
       {"train.target_steps=40", "train.eval_every_steps=10", "train.eval_examples=96"}) {
    const std::string path = d.substr(0, d.find('=') + 1);
    if (std::none_of(sets.begin(), sets.end(),
                     [&](const std::string& s) { return s.rfind(path, 0) == 0; }))
      sets.insert(sets.begin(), d);
  }
  auto r = run_tpusim(with_sets({"train", study, "--json"}, sets));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

double train_step_ms(std::vector<std::string> sets) {
  auto r = run_tpusim(with_sets({"run", kCliTrainStudy, "--json"}, sets));
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out)["step_time_ms"].get<double>();
}

/// BERT parses its records (one a (3 x 512 + 3 x 76 + 1) int32 = 7060-byte example) and nothing
/// else: a host with `cores` cores at `ns_per_byte` preprocesses an example in 7060 x ns_per_byte
/// / cores ns. bert_large_16 is a 4x4 slice: two hosts of 4x2 chips, 16 of the 32 examples each.
constexpr double kCliTrainRecordBytes = (3 * 512 + 3 * 76 + 1) * 4;
constexpr double kCliTrainExamplesPerHost = 32.0 / 2;

std::vector<std::string> host_cpu(double ns_per_byte, int cores) {
  return {"hardware.host.cost.record_parse_ns_per_byte=" + std::to_string(ns_per_byte),
          "hardware.host.cpu_cores=" + std::to_string(cores)};
}

/// The settings under which one host preprocesses `rate` examples per second (one core).
std::vector<std::string> host_rate(double rate) {
  return host_cpu(1e9 / (rate * kCliTrainRecordBytes), 1);
}
}  // namespace

TEST_CASE("an input-bound run: the step is the host's CPU time per batch, cores halve it") {
  // 4000 ns per byte on 2 cores: 16 x 7060 x 4000 / 2 ns = 226 ms per batch, longer than the
  // step; the copy of the previous batch (2 examples per chip over PCIe) overlaps it.
  const double ns_per_byte = 4000;
  auto batch_ms = [&](int cores) {
    return 1e-6 * kCliTrainExamplesPerHost * kCliTrainRecordBytes * ns_per_byte / cores;
  };
  auto j = train(host_cpu(ns_per_byte, 2));
  const auto& p = j["per_step"];
  CHECK(j["hosts"] == 2);
  CHECK(j["host"]["chips_per_host"] == 8);
  CHECK(p["train_step_ms"].get<double>() + p["input_stall_per_train_step_ms"].get<double>() ==
        Approx(batch_ms(2)).epsilon(1e-6));
  CHECK(p["input_stall_per_train_step_ms"].get<double>() > 0);
  CHECK(j["step_time_ms"].get<double>() == Approx(batch_ms(2)).epsilon(1e-6));
  CHECK(j["host"]["train_batch_cpu_ms"].get<double>() == Approx(batch_ms(2)).epsilon(1e-9));
  CHECK(j["host"]["cpu_utilisation_train"].get<double>() == Approx(1).epsilon(1e-6));
  CHECK(j["host"]["input_bound"] == true);
  // The first batch is the start-up: its CPU time, then its PCIe copy (2 examples per chip).
  const double copy_s = 2 * kCliTrainRecordBytes / 15e9;
  CHECK(j["breakdown"]["first_batch_s"].get<double>() ==
        Approx(batch_ms(2) * 1e-3 + copy_s).epsilon(1e-6));
  CHECK(j["breakdown"]["startup_s"].get<double>() ==
        Approx(j["config"]["train"]["program_start_s"].get<double>() + batch_ms(2) * 1e-3 + copy_s)
            .epsilon(1e-6));
  // Twice the cores: half the step.
  auto doubled = train(host_cpu(ns_per_byte, 4));
  CHECK(doubled["step_time_ms"].get<double>() == Approx(batch_ms(4)).epsilon(1e-6));
  CHECK(doubled["step_time_ms"].get<double>() ==
        Approx(j["step_time_ms"].get<double>() / 2).epsilon(1e-6));
  // Hosts of 2x2 chips: four hosts with 8 examples each, half the batch per host again.
  auto small = train([&] {
    auto s = host_cpu(ns_per_byte, 2);
    s.push_back("hardware.host.chip_block=[2,2]");
    return s;
  }());
  CHECK(small["hosts"] == 4);
  CHECK(small["step_time_ms"].get<double>() == Approx(batch_ms(2) / 2).epsilon(1e-6));
}

TEST_CASE("free hosts: the run is the device-bound one of tpusim run") {
  // No CPU cost and a fast PCIe link: nothing waits, the training step is the simulated step.
  auto fast =
      train({"hardware.host.cost.record_parse_ns_per_byte=0", "hardware.host.pcie_GBps=1e6"});
  CHECK(fast["breakdown"]["input_stall_s"].get<double>() == 0);
  CHECK(fast["host"]["input_bound"] == false);
  // A device-loop iteration adds hardware.calibration.loop_iteration_ns to each step.
  const double iteration_ms =
      1e-6 * fast["config"]["hardware"]["calibration"]["loop_iteration_ns"].get<double>();
  CHECK(fast["per_step"]["train_step_ms"].get<double>() ==
        Approx(train_step_ms({}) + iteration_ms).epsilon(1e-6));
  // With the measured defaults the hosts keep up too, and their CPU is partly busy.
  auto measured = train({});
  CHECK(measured["breakdown"]["input_stall_s"].get<double>() == 0);
  CHECK(measured["per_step"]["train_step_ms"].get<double>() ==
        Approx(fast["per_step"]["train_step_ms"].get<double>()).epsilon(1e-9));
  const double cpu_ms =
      1e-6 * kCliTrainExamplesPerHost * kCliTrainRecordBytes *
      measured["config"]["hardware"]["host"]["cost"]["record_parse_ns_per_byte"].get<double>() /
      measured["config"]["hardware"]["host"]["cpu_cores"].get<double>();
  CHECK(measured["host"]["train_batch_cpu_ms"].get<double>() == Approx(cpu_ms).epsilon(1e-6));
  CHECK(measured["host"]["cpu_utilisation_train"].get<double>() ==
        Approx(cpu_ms / measured["step_time_ms"].get<double>()).epsilon(1e-6));
}

TEST_CASE(
    "PCIe-bound infeed: the period is a chip's bytes / PCIe bandwidth, on fewer threads queued") {
  // A BERT example is (3 x 512 + 3 x 76 + 1) int32 = 7060 bytes; 2 examples per chip per step
  // over 100 kB/s: 141.2 ms per batch, longer than the step.
  auto j = train({"hardware.host.pcie_GBps=1e-4"});
  const double period_ms = 1e3 * (32.0 / 16) * 7060 / 1e5;
  CHECK(j["step_time_ms"].get<double>() == Approx(period_ms).epsilon(1e-4));
  CHECK(j["host"]["infeed_threads"] == 8);
  CHECK(j["host"]["train_batch_pcie_ms"].get<double>() == Approx(period_ms).epsilon(1e-9));
  // With T infeed threads for a host's 8 chips a batch's copies take ceil(8 / T) copies one
  // after another on a thread (the report's batch from idle threads); at 2 threads that is the
  // PCIe-bound period, 4 copies.
  auto k = train({"hardware.host.pcie_GBps=1e-4", "hardware.host.infeed_threads=2"});
  CHECK(k["host"]["train_batch_pcie_ms"].get<double>() == Approx(4 * period_ms).epsilon(1e-9));
  CHECK(k["step_time_ms"].get<double>() == Approx(4 * period_ms).epsilon(1e-4));
  auto l = train({"hardware.host.pcie_GBps=1e-4", "hardware.host.infeed_threads=3"});
  CHECK(l["host"]["train_batch_pcie_ms"].get<double>() == Approx(3 * period_ms).epsilon(1e-9));
}

TEST_CASE("evaluation cost: evaluations x eval steps x the eval step of tpusim run") {
  auto j = train({"workload.eval_batch=64"});
  const auto& s = j["schedule"];
  CHECK(s["evaluations"] == 4);
  CHECK(s["eval_steps_per_evaluation"] == 2);  // 96 examples at 64 per step
  const double eval_ms =
      train_step_ms({"workload.program=eval", "workload.eval_batch=64"}) +
      1e-6 * j["config"]["hardware"]["calibration"]["loop_iteration_ns"].get<double>();
  CHECK(j["per_step"]["eval_step_ms"].get<double>() == Approx(eval_ms).epsilon(1e-6));
  CHECK(j["breakdown"]["evaluation_s"].get<double>() == Approx(4 * 2 * eval_ms * 1e-3));
  CHECK(j["time_to_train_s"].get<double>() ==
        Approx(j["breakdown"]["startup_s"].get<double>() +
               j["breakdown"]["training_s"].get<double>() +
               j["breakdown"]["evaluation_s"].get<double>() +
               j["breakdown"]["loop_round_trips_s"].get<double>() +
               j["breakdown"]["input_stall_s"].get<double>()));
}

TEST_CASE("the run's structure: program start + loops of steps and evaluations + round trips") {
  // Free hosts: nothing stalls, and the run is the closed form of its parts.
  const std::vector<std::string> free_hosts = {
      "hardware.host.cost.record_parse_ns_per_byte=0", "hardware.host.pcie_GBps=1e6",
      "train.program_start_s=2.5", "train.loop_round_trip_us=3000"};
  auto j = train(free_hosts);
  const auto& b = j["breakdown"];
  const auto& p = j["per_step"];
  const double V = j["schedule"]["evaluations"].get<double>();
  const double N = j["schedule"]["steps_per_loop"].get<double>();
  const double M = j["schedule"]["eval_steps_per_evaluation"].get<double>();
  REQUIRE(V > 1);
  CHECK(b["input_stall_s"].get<double>() == 0);
  CHECK(b["program_start_s"].get<double>() == 2.5);
  CHECK(b["loop_round_trips_s"].get<double>() == Approx(V * 3e-3));
  const double closed = 2.5 + b["first_batch_s"].get<double>() +
                        1e-3 * (p["first_train_step_ms"].get<double>() +
                                (V - 1) * p["loop_first_train_step_ms"].get<double>() +
                                V * (N - 1) * p["train_step_ms"].get<double>() +
                                V * (p["first_eval_step_ms"].get<double>() +
                                     (M - 1) * p["eval_step_ms"].get<double>())) +
                        V * 3e-3;
  CHECK(j["time_to_train_s"].get<double>() == Approx(closed).epsilon(1e-9));
  // The parts add up to the total.
  CHECK(j["time_to_train_s"].get<double>() ==
        Approx(b["startup_s"].get<double>() + b["training_s"].get<double>() +
               b["evaluation_s"].get<double>() + b["loop_round_trips_s"].get<double>() +
               b["input_stall_s"].get<double>() + b["host_eval_s"].get<double>())
            .epsilon(1e-12));
  // BERT's metric is the device's masked-LM accuracy: no host evaluation.
  CHECK(b["host_eval_s"].get<double>() == 0);
  // Without program start and round trips the total drops by exactly them.
  auto none = free_hosts;
  none[2] = "train.program_start_s=0";
  none[3] = "train.loop_round_trip_us=0";
  auto k = train(none);
  CHECK(k["breakdown"]["loop_round_trips_s"].get<double>() == 0);
  CHECK(j["time_to_train_s"].get<double>() - k["time_to_train_s"].get<double>() ==
        Approx(2.5 + V * 3e-3).epsilon(1e-9));
}

TEST_CASE("loop composition: a few simulated steps predict the fully simulated loop") {
  // Host-bound throughout (200/s: 80 ms per batch of 16) and device-bound (2e6/s): every step
  // after the first of its kind is steady, so composing 2 + 2 simulated steps equals simulating
  // all 10 + 3. In between (600/s: the host keeps up with training, not with evaluation) the queue
  // drains over the first eval steps, a transient the composition approximates: within 2 %.
  for (const auto& [rate, tolerance] :
       std::vector<std::pair<double, double>>{{200, 1e-6}, {2e6, 1e-6}, {600, 0.02}}) {
    CAPTURE(rate);
    std::vector<std::string> base = host_rate(rate);
    base.insert(base.end(), {"workload.eval_batch=32", "train.target_steps=10"});
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
           {"hardware.host.cpu_cores=0", "hardware.host.cpu_cores"},
           {"hardware.host.chip_block=[3,2]", "hardware.host.chip_block"},
           // Removed parameters: the rate per model and the chip count per host.
           {"workload.host_examples_per_s=100", "workload.host_examples_per_s"},
           {"hardware.host.chips_per_host=8", "hardware.host.chips_per_host"},
           {"train.target_steps=45", "train.target_steps"},
           {"train.eval_every_steps=0", "train.eval_every_steps"},
           {"hardware.host.pcie_GBps=0", "hardware.host.pcie_GBps"},
           {"train.simulated_train_steps=1", "train.simulated_train_steps"},
           {"train.eval_metric_on=gpu", "train.eval_metric_on"},
           {"hardware.host.metric_threads=0", "hardware.host.metric_threads"},
           {"hardware.host.infeed_threads=0", "hardware.host.infeed_threads"}}) {
    auto r =
        run_tpusim({"train", kCliTrainStudy, "--set", "train.target_steps=40", "--set",
                    "train.eval_every_steps=10", "--set", "train.eval_examples=96", "--set", set});
    INFO(set);
    check_bad_input(r, path);
  }
  // The allowed range is written in full, not rounded: 1 to 1048576 threads (2^20).
  auto bad = run_tpusim({"train", kCliTrainStudy, "--set", "hardware.host.infeed_threads=0"});
  CHECK_THAT(bad.err, Catch::Contains("expected an integer from 1 to 1048576 (threads)"));
  // A study without the facts: the missing one is named.
  auto r = run_tpusim({"train", kCliTrainStudy});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("train.target_steps"));
}

namespace {
/// SSD on a 2x2 slice (one host of 4 chips), 2 loops of 4 steps: its COCO evaluation of 32
/// images runs on the host and overlaps the next loop.
nlohmann::json ssd_train(std::vector<std::string> sets, const std::string& timeline = "") {
  std::vector<std::string> args = {"train", "configs/studies/ssd_64.json", "--json"};
  if (!timeline.empty()) args.insert(args.end(), {"--timeline", timeline});
  sets.insert(sets.begin(),
              {"topology=2x2", "workload.global_batch=16", "parallelism.bn_group_cores=2",
               "train.target_steps=8", "train.eval_every_steps=4", "train.eval_examples=32"});
  auto r = run_tpusim(with_sets(args, sets));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

double breakdown_sum(const nlohmann::json& b) {
  double sum = 0;
  for (const char* k : {"startup_s", "training_s", "evaluation_s", "loop_round_trips_s",
                        "input_stall_s", "host_eval_s"})
    sum += b[k].get<double>();
  return sum;
}
}  // namespace

TEST_CASE("evaluation batches: their own pipeline, decoded and resized, no targets") {
  // One host of 4 chips with 4 cores; batches of 16 images (training and eval).
  const auto j = ssd_train({"hardware.host.cpu_cores=4"});
  const auto& h = j["host"];
  double eval_us = 0;
  for (const auto& op : h["eval_pipeline"]) eval_us += op["us_per_example"].get<double>();
  CHECK(h["eval_cpu_us_per_example"].get<double>() == Approx(eval_us));
  // SSD's eval images are decoded and resized: no crop tries, flip, jitter or anchor matching.
  std::vector<std::string> names;
  for (const auto& op : h["eval_pipeline"]) names.push_back(op["op"]);
  CHECK(names == std::vector<std::string>{"jpeg_decode", "resize"});
  // Each batch costs its own pipeline's CPU per example on the host's cores.
  CHECK(h["eval_batch_cpu_ms"].get<double>() == Approx(16 * eval_us / 4 * 1e-3).epsilon(1e-9));
  CHECK(h["train_batch_cpu_ms"].get<double>() ==
        Approx(16 * h["cpu_us_per_example"].get<double>() / 4 * 1e-3).epsilon(1e-9));
  CHECK(h["eval_cpu_us_per_example"].get<double>() < h["cpu_us_per_example"].get<double>());
}

TEST_CASE("host evaluation: on the device it costs nothing - the parts still add up") {
  const auto host = ssd_train({});
  const auto device = ssd_train({"train.eval_metric_on=device"});
  const auto& m = host["eval_metric"];
  CHECK(m["metric"] == "coco_map_boxes");
  CHECK(m["blocking"] == false);
  const double x = m["metric_s"].get<double>();
  // The metric on one host, in one thread (hardware.host.metric_threads): its CPU work.
  CHECK(m["threads"] == 1);
  CHECK(x == Approx(m["busiest_host_cpu_s"].get<double>()));
  // Two evaluations: the last one's metric is waited for, the first overlaps the second loop.
  CHECK(host["breakdown"]["host_eval_s"].get<double>() ==
        Approx(x + m["overlapped_cost_s"].get<double>()));
  CHECK(host["time_to_train_s"].get<double>() ==
        Approx(breakdown_sum(host["breakdown"])).epsilon(1e-12));
  CHECK(device["breakdown"]["host_eval_s"].get<double>() == 0);
  CHECK(device["eval_metric"]["ops"].empty());
  CHECK(host["time_to_train_s"].get<double>() - device["time_to_train_s"].get<double>() ==
        Approx(host["breakdown"]["host_eval_s"].get<double>()).epsilon(1e-9));
  CHECK(host["bound_by"].is_string());
}

TEST_CASE(
    "host evaluation: doubling host cores halves a metric on all of them - input-bound loses all "
    "of it") {
  // One or two cores: the pipeline (70 ms of CPU a batch at 1 core) bounds the training steps,
  // so the host's time scoring is the run's, at every evaluation. A program start of 0.1 s keeps
  // the start-up below the 0.7 s of input stalls, so that they bound the run. The metric may run
  // on up to 96 threads: it takes every core of the host.
  const auto one = ssd_train({"hardware.host.cpu_cores=1", "train.program_start_s=0.1",
                              "hardware.host.metric_threads=96"});
  const auto two = ssd_train({"hardware.host.cpu_cores=2", "train.program_start_s=0.1",
                              "hardware.host.metric_threads=96"});
  const double x1 = one["eval_metric"]["metric_s"].get<double>();
  CHECK(two["eval_metric"]["threads"] == 2);
  CHECK(two["eval_metric"]["metric_s"].get<double>() == Approx(x1 / 2).epsilon(1e-12));
  CHECK(one["host"]["input_bound"] == true);
  CHECK(one["eval_metric"]["overlapped_cost_s"].get<double>() == Approx(x1));
  CHECK(one["breakdown"]["host_eval_s"].get<double>() == Approx(2 * x1));
  CHECK(one["bound_by"] == "input_pipeline");
  // all_hosts on one host: the per-example work is not divided, the gather is added.
  const auto all = ssd_train({"train.eval_metric_on=all_hosts"});
  CHECK(all["eval_metric"]["hosts_sharing"] == 1);
  CHECK(all["eval_metric"]["busiest_host_cpu_s"].get<double>() > 0);
}

TEST_CASE("host evaluation: a one-thread metric leaves the other cores to the pipeline") {
  // Two cores, the metric on one (the default): it takes its CPU work in time whatever the
  // cores, and costs an input-bound run half its time at each earlier evaluation (the pipeline
  // runs on one core of two while it lasts).
  const auto two = ssd_train({"hardware.host.cpu_cores=2", "train.program_start_s=0.1"});
  const auto four = ssd_train({"hardware.host.cpu_cores=4", "train.program_start_s=0.1"});
  const auto& m = two["eval_metric"];
  const double x = m["metric_s"].get<double>();
  CHECK(m["threads"] == 1);
  CHECK(x == Approx(m["busiest_host_cpu_s"].get<double>()));
  CHECK(four["eval_metric"]["metric_s"].get<double>() == Approx(x).epsilon(1e-12));
  REQUIRE(two["host"]["input_bound"] == true);
  CHECK(m["overlapped_cost_s"].get<double>() == Approx(x / 2));
  CHECK(two["breakdown"]["host_eval_s"].get<double>() == Approx(x + x / 2));
}

TEST_CASE("host evaluation: one-thread metrics that outnumber the cores make the host the run") {
  // Mask R-CNN at 512 chips on 4 cores a host: its 116 s metrics outlast the 19.6 s loops, so six
  // run at once on four cores beside the pipeline. The run then takes the program start plus the
  // coordinator's CPU work over all its cores, and its CPU is busy all the while after the start.
  auto r = run_tpusim({"train", "configs/studies/maskrcnn_512.json", "--json", "--set",
                       "hardware.host.cpu_cores=4"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const double total = j["time_to_train_s"].get<double>();
  CHECK(j["eval_metric"]["host_cpu_excess_s"].get<double>() > 0);
  CHECK(j["host"]["cpu_utilisation_run"].get<double>() * total +
            j["breakdown"]["program_start_s"].get<double>() ==
        Approx(total).epsilon(1e-9));
  CHECK(j["bound_by"] == "host_eval");
  CHECK(total == Approx(breakdown_sum(j["breakdown"])).epsilon(1e-12));
  // The text report says so on the metric's line.
  auto text = run_tpusim(
      {"train", "configs/studies/maskrcnn_512.json", "--set", "hardware.host.cpu_cores=4"});
  CHECK_THAT(text.out, Catch::Contains("on 1 thread; overlaps the next loop") &&
                           Catch::Contains("the host's CPU capacity adds"));
}

TEST_CASE("train --timeline: the whole run, loops compressed, host evaluation on a host track") {
  const std::string path = "/tmp/tpusim_cli_train_timeline_" + std::to_string(::getpid()) + ".json";
  const auto j = ssd_train({}, path);
  std::ifstream in(path);
  const auto doc = nlohmann::json::parse(in);
  std::remove(path.c_str());
  int loops = 0, metrics = 0, device = 0;
  double end_us = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    end_us = std::max(end_us, e["ts"].get<double>() + e["dur"].get<double>());
    if (e["cat"] == "device_loop") ++loops;
    if (e["cat"] == "host_eval") ++metrics;
    // The simulated steps on the chips' tracks come after the program start.
    if (e["pid"].get<int>() < 4) {
      ++device;
      CHECK(e["ts"].get<double>() >= 1e6 * j["breakdown"]["program_start_s"].get<double>());
    }
  }
  CHECK(loops == 2);
  CHECK(metrics == 2);
  CHECK(device > 0);
  // The run's last span (the last metric) ends at the time to train.
  CHECK(end_us == Approx(1e6 * j["time_to_train_s"].get<double>()).epsilon(1e-9));
}

TEST_CASE("the MLPerf GPT-3 block: training steps x step + eval passes x eval step + fixed costs") {
  // decoder_1b_16 (32 sequences of 2048 tokens per step): blocks of 64 sequences (2 steps), each
  // followed by an evaluation of 80 sequences at an eval batch of 32 (3 eval steps, the last
  // one partly empty); the target after 3 blocks. Free hosts: nothing stalls.
  const char* study = "configs/studies/decoder_1b_16.json";
  // (0 steps: the helper's step counts are not added; the examples give them.)
  const std::vector<std::string> sets = {"train.target_steps=0",
                                         "train.eval_every_steps=0",
                                         "train.target_examples=192",
                                         "train.eval_every_examples=64",
                                         "train.eval_examples=80",
                                         "workload.eval_batch=32",
                                         "train.simulated_train_steps=2",
                                         "train.simulated_eval_steps=3",
                                         "hardware.host.cost.record_parse_ns_per_byte=0",
                                         "hardware.host.pcie_GBps=1e6",
                                         "train.program_start_s=2",
                                         "train.loop_round_trip_us=500"};
  auto j = train(sets, study);
  const auto& s = j["schedule"];
  CHECK(s["steps_per_loop"] == 2);
  CHECK(s["evaluations"] == 3);
  CHECK(s["eval_steps_per_evaluation"] == 3);
  CHECK(s["examples_to_target"] == 192);
  CHECK(s["tokens_to_target"].get<double>() == 192.0 * 2048);
  CHECK(j["eval_metric"]["metric"] == "log_perplexity");
  CHECK(j["breakdown"]["host_eval_s"].get<double>() == 0);
  CHECK(j["breakdown"]["input_stall_s"].get<double>() == 0);
  // Each step is the step of tpusim run (training, and the eval program at its batch), plus a
  // device-loop iteration.
  const double iteration_ms =
      1e-6 * j["config"]["hardware"]["calibration"]["loop_iteration_ns"].get<double>();
  auto step_ms = [&](std::vector<std::string> more) {
    auto r = run_tpusim(with_sets({"run", study, "--json"}, more));
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(r.out)["step_time_ms"].get<double>() + iteration_ms;
  };
  const double train_ms = step_ms({});
  const double eval_ms = step_ms({"workload.program=eval", "workload.eval_batch=32"});
  CHECK(eval_ms < train_ms);  // forward only
  // (In the loop the training step follows an eval step or a training step: 2.5 us of 244 ms
  // differ from the step run alone, hence 1e-4.)
  const auto& p = j["per_step"];
  CHECK(p["train_step_ms"].get<double>() == Approx(train_ms).epsilon(1e-4));
  CHECK(p["eval_step_ms"].get<double>() == Approx(eval_ms).epsilon(1e-4));
  // The closed form: 6 training steps, 3 x 3 eval steps, the program start, the first batch
  // and 3 round trips; the first steps of their kind are within 0.1 % of the steady ones.
  const double closed = 2 + j["breakdown"]["first_batch_s"].get<double>() +
                        1e-3 * (6 * train_ms + 9 * eval_ms) + 3 * 500e-6;
  CHECK(j["time_to_train_s"].get<double>() == Approx(closed).epsilon(1e-3));
  CHECK(s["loop_s"].get<double>() ==
        Approx((j["time_to_train_s"].get<double>() - j["breakdown"]["startup_s"].get<double>()) / 3)
            .epsilon(1e-9));
}
