// The schedule of a training run (train.*) and the composition of a simulated device loop into
// the time to train, against closed forms.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>

#include "core/errors.hpp"
#include "model_study.hpp"
#include "models/device_loop.hpp"
#include "models/train_schedule.hpp"

using namespace tpusim;
using tpusim::test::model_study;
using tpusim::test::program_of;

namespace {

Config train_study(nlohmann::json train, long long batch = 32,
                   nlohmann::json workload = nlohmann::json::object()) {
  nlohmann::json w{{"model", "bert_large"}, {"global_batch", batch}};
  w.update(workload);
  return load_config({{"topology", "4x4"}, {"workload", w}, {"train", train}});
}

std::string error_path(const nlohmann::json& train, long long batch = 32) {
  try {
    read_train_schedule(train_study(train, batch));
  } catch (const ConfigError& e) {
    return e.problems().front().where;
  }
  return "(no error)";
}

Duration ms(double v) { return Duration::ns(v * 1e6); }

}  // namespace

TEST_CASE("the schedule: steps or epochs to the target, loops of eval_every steps") {
  const auto s = read_train_schedule(
      train_study({{"target_steps", 496}, {"eval_every_steps", 62}, {"eval_examples", 10000}}, 32,
                  {{"eval_batch", 4096}}));
  CHECK(s.evaluations == 8);
  CHECK(s.eval_steps == 3);  // ceil(10000 / 4096)
  CHECK(s.simulated_sequence() == std::vector<bool>{false, false, false, true, true, false});
  // Epochs: ceil(dataset / batch) steps each. 1000 examples at batch 32: 32 steps per epoch.
  const auto e = read_train_schedule(train_study({{"target_epochs", 12},
                                                  {"eval_every_epochs", 4},
                                                  {"dataset_examples", 1000},
                                                  {"eval_examples", 64}}));
  CHECK(e.target_steps == 12 * 32);
  CHECK(e.steps_per_loop == 4 * 32);
  CHECK(e.evaluations == 3);
  CHECK(e.eval_steps == 2);
  // A short loop simulates only what it has.
  const auto one = read_train_schedule(
      train_study({{"target_steps", 4}, {"eval_every_steps", 1}, {"eval_examples", 1}}));
  CHECK(one.simulated_train_steps == 1);
  CHECK(one.simulated_eval_steps == 1);
}

TEST_CASE("the schedule in examples: MLPerf GPT-3's blocks of 24,576 sequences") {
  // At a global batch of 1536 sequences a block of 24,576 is 16 steps; 3 blocks to the target.
  const auto s = read_train_schedule(train_study(
      {{"target_examples", 3 * 24576}, {"eval_every_examples", 24576}, {"eval_examples", 24567}},
      1536, {{"eval_batch", 1536}}));
  CHECK(s.steps_per_loop == 24576 / 1536);
  CHECK(s.target_steps == 3 * 24576 / 1536);
  CHECK(s.evaluations == 3);
  CHECK(s.eval_steps == 16);  // ceil(24567 / 1536)
  // Examples that are not whole steps, a target between evaluations, two counts at once.
  CHECK(error_path({{"target_steps", 10}, {"eval_every_examples", 100}, {"eval_examples", 1}}) ==
        "train.eval_every_examples");
  CHECK(error_path({{"target_examples", 96}, {"eval_every_examples", 64}, {"eval_examples", 1}}) ==
        "train.target_examples");
  CHECK(error_path({{"target_steps", 4},
                    {"target_examples", 128},
                    {"eval_every_steps", 2},
                    {"eval_examples", 1}}) == "train.target_steps");
}

TEST_CASE("schedule errors name the JSON path") {
  CHECK(error_path({{"eval_every_steps", 62}, {"eval_examples", 1}}) == "train.target_steps");
  // A cadence that does not divide the steps to the target.
  CHECK(error_path({{"target_steps", 500}, {"eval_every_steps", 62}, {"eval_examples", 1}}) ==
        "train.target_steps");
  CHECK(error_path({{"target_epochs", 10},
                    {"eval_every_epochs", 4},
                    {"dataset_examples", 320},
                    {"eval_examples", 1}}) == "train.target_epochs");
  CHECK(error_path({{"target_epochs", 10}, {"eval_every_steps", 5}, {"eval_examples", 1}}) ==
        "train.dataset_examples");
  CHECK(error_path({{"target_steps", 10},
                    {"target_epochs", 1},
                    {"eval_every_steps", 5},
                    {"eval_examples", 1}}) == "train.target_steps");
  CHECK(error_path({{"target_steps", 10}, {"eval_every_steps", 5}}) == "train.eval_examples");
  CHECK(error_path({{"target_steps", 10},
                    {"eval_every_steps", 5},
                    {"eval_examples", 100},
                    {"eval_steps", 2}}) == "train.eval_steps");  // 100 / 32 needs 4
  // Half a step per epoch fraction: 1.5 epochs of 3 steps is 4.5 steps.
  CHECK(error_path({{"target_steps", 9},
                    {"eval_every_epochs", 1.5},
                    {"dataset_examples", 96},
                    {"eval_examples", 1}}) == "train.eval_every_epochs");
}

TEST_CASE("loop composition: startup + V loops of N training steps and M eval steps") {
  TrainSchedule s;
  s.steps_per_loop = 10;
  s.eval_steps = 4;
  s.evaluations = 5;
  s.simulated_train_steps = 3;
  s.simulated_eval_steps = 2;
  // Simulated: T1 T2 T3 E1 E2 T'. Own times: T1 7, T2/T3 5, E1 3, E2 2, T' 6 ms; stalls before
  // each: 1 (start-up), 0.5, 0.5, 0.25, 0.75, 1.5 ms.
  const double own[] = {7, 5, 5, 3, 2, 6};
  const double stall[] = {1, 0.5, 0.5, 0.25, 0.75, 1.5};
  std::vector<SimulatedStep> steps;
  double t = 0;
  for (int i = 0; i < 6; ++i) {
    t += stall[i];
    steps.push_back({ms(t), ms(stall[i])});
    t += own[i];
  }
  const TimeToTrain r = compose_time_to_train(s, steps, ms(t));
  const double N = 10, M = 4, V = 5;
  CHECK(r.startup_s == Approx(1e-3));
  CHECK(r.train_step_s == Approx(5e-3));
  CHECK(r.eval_step_s == Approx(2e-3));
  CHECK(r.training_s == Approx(1e-3 * (7 + (V - 1) * 6 + V * (N - 1) * 5)));
  CHECK(r.evaluation_s == Approx(1e-3 * V * (3 + (M - 1) * 2)));
  CHECK(r.input_stall_s ==
        Approx(1e-3 * ((V - 1) * 1.5 + V * (N - 1) * 0.5 + V * (0.25 + (M - 1) * 0.75))));
  CHECK(r.total_s == Approx(r.startup_s + r.training_s + r.evaluation_s + r.input_stall_s));
  // Program start and V round trips add to the start-up and the total, nothing else.
  TrainSchedule timed = s;
  timed.program_start_s = 0.5;
  timed.loop_round_trip_s = 2e-3;
  const TimeToTrain rt = compose_time_to_train(timed, steps, ms(t));
  CHECK(rt.first_batch_s == Approx(1e-3));
  CHECK(rt.startup_s == Approx(0.5 + 1e-3));
  CHECK(rt.loop_round_trips_s == Approx(V * 2e-3));
  CHECK(rt.total_s == Approx(r.total_s + 0.5 + V * 2e-3));
  CHECK(rt.total_s == Approx(rt.startup_s + rt.training_s + rt.evaluation_s + rt.input_stall_s +
                             rt.loop_round_trips_s));
  // A loop simulated in full (N = 3, M = 2, V = 1) composes to exactly its simulated time
  // without the trailing step.
  s.steps_per_loop = 3;
  s.eval_steps = 2;
  s.evaluations = 1;
  const TimeToTrain full = compose_time_to_train(s, steps, ms(t));
  CHECK(full.total_s == Approx((steps[5].start - steps[5].stall).seconds()));
}

TEST_CASE("a device loop: each step's infeed op waits for all of the previous step") {
  const Config cfg = model_study("bert_large", "4x4", 32, {{"model", 2}}, {{"vocab", 30528}});
  const Program train = program_of(cfg);
  const DeviceLoop loop = make_device_loop({&train, &train});
  REQUIRE(loop.program.ops.size() == 2 * train.ops.size() + 2);
  CHECK(loop.infeed_op == std::vector<int>{0, static_cast<int>(train.ops.size()) + 1});
  CHECK(loop.op_batch[0] == 0);
  CHECK(loop.op_batch[loop.infeed_op[1]] == 1);
  const Op& second = loop.program.ops[loop.infeed_op[1]];
  CHECK(second.kind == "infeed");
  CHECK(second.compute.measured_ns == 0.0);
  CHECK(second.deps.size() == train.num_collectives() + 1);
  for (int d : second.deps) CHECK(d < loop.infeed_op[1]);
  // The steps' own dependencies move with them.
  for (std::size_t i = 0; i < train.ops.size(); ++i)
    CHECK(loop.program.ops[loop.infeed_op[1] + 1 + i].deps.size() == train.ops[i].deps.size());
}

TEST_CASE("the five MLPerf studies carry their schedules (issue table)") {
  auto schedule = [](const char* study) {
    return read_train_schedule(load_config_file(config_dir() + "/studies/" + study + ".json"));
  };
  const auto bert = schedule("bert_large_4096");
  CHECK(bert.target_steps == 496);
  CHECK(bert.evaluations == 8);
  CHECK(bert.eval_steps == 2);  // 10,000 samples at 8192
  const auto resnet = schedule("resnet50_4096");
  CHECK(resnet.steps_per_loop == 4 * 20);  // 4 epochs of ceil(1281167 / 65536) steps
  CHECK(resnet.target_steps == 84 * 20);
  CHECK(resnet.eval_steps == 1);
  const auto ssd = schedule("ssd_4096");
  CHECK(ssd.steps_per_loop == 145);
  CHECK(ssd.eval_steps == 2);
  CHECK(ssd.evaluations == 19);
  const auto transformer = schedule("transformer_big_4096");
  CHECK(transformer.steps_per_loop == 277);
  CHECK(transformer.evaluations == 4);
  CHECK(transformer.eval_steps == 1);
  const auto maskrcnn = schedule("maskrcnn_512");
  CHECK(maskrcnn.steps_per_loop == 462);
  CHECK(maskrcnn.evaluations == 18);
  CHECK(maskrcnn.eval_steps == 11);
}

TEST_CASE("the v0.6 ResNet-50 studies carry one loop of 4 epochs and its evaluation") {
  // As the v0.6 detection studies: one loop, so time to train / its steps is a period. An epoch
  // is ceil(1281167 / batch) steps; 50,000 validation images at the training batch.
  for (const auto& [chips, batch] : std::vector<std::pair<int, long long>>{
           {16, 4096}, {64, 16384}, {128, 32768}, {256, 32768}, {512, 32768}, {1024, 32768}}) {
    CAPTURE(chips);
    const auto s = read_train_schedule(
        load_config_file(config_dir() + "/studies/resnet50_" + std::to_string(chips) + ".json"));
    const long long epoch = (1281167 + batch - 1) / batch;
    CHECK(s.steps_per_loop == 4 * epoch);
    CHECK(s.target_steps == 4 * epoch);
    CHECK(s.evaluations == 1);
    CHECK(s.eval_steps == (50000 + batch - 1) / batch);
  }
}

namespace {
/// A composed run of V = 5 loops with a steady training step of 5 ms (`stall` ms of it waiting
/// for input), for the host evaluation's closed forms.
TimeToTrain host_eval_run(TrainSchedule& s, double stall_ms = 0) {
  s.steps_per_loop = 10;
  s.eval_steps = 2;
  s.evaluations = 5;
  s.loop_round_trip_s = 1e-3;
  TimeToTrain t;
  t.train_step_s = 5e-3 - stall_ms * 1e-3;
  t.train_stall_s = stall_ms * 1e-3;
  t.training_s = 0.25;
  t.total_s = 1.0;
  return t;
}
}  // namespace

TEST_CASE("host evaluation: the last metric is waited for - a blocking one adds exactly its time") {
  TrainSchedule s;
  TimeToTrain t = host_eval_run(s);
  const double x = 0.2, V = 5;
  add_host_eval(t, s, {x, true, 1e-3, 2});
  CHECK(t.host_eval_metric_s == x);
  CHECK(t.host_eval_s == Approx(V * x));
  CHECK(t.total_s == Approx(1.0 + V * x));
  // No metric (on the device): nothing added.
  TimeToTrain none = host_eval_run(s);
  add_host_eval(none, s, {0, true, 1e-3, 2});
  CHECK(none.host_eval_s == 0);
  CHECK(none.total_s == 1.0);
}

TEST_CASE("host evaluation: an overlapped metric adds what it takes from the input pipeline") {
  // The next loop runs on its Q = 2 queued batches (2 x 5 ms) while the host scores; the first
  // batch prepared after the metric takes 1 ms (CPU and PCIe): slack = 2 x 5 - 1 = 9 ms.
  const double V = 5, slack = 2 * 5e-3 - 1e-3;
  for (double x : {0.004, 0.009, 0.2}) {
    CAPTURE(x);
    TrainSchedule s;
    TimeToTrain t = host_eval_run(s);
    add_host_eval(t, s, {x, false, 1e-3, 2});
    const double lost = std::max(0.0, x - slack);
    CHECK(t.host_eval_overlap_s == Approx(lost).margin(1e-15));
    CHECK(t.host_eval_s == Approx(x + (V - 1) * lost));
    CHECK(t.total_s == Approx(1.0 + x + (V - 1) * lost));
  }
  // Input-bound training steps: every second the host scores is lost to the run.
  TrainSchedule s;
  TimeToTrain bound = host_eval_run(s, 1.0);
  add_host_eval(bound, s, {0.004, false, 1e-3, 2});
  CHECK(bound.host_eval_s == Approx(V * 0.004));
}

TEST_CASE("host evaluation: a metric on part of the host slows the pipeline, not stops it") {
  // The metric holds f = 1/4 of the cores: a training batch's 4 ms of CPU takes c' = 4 / (1 - f)
  // = 5.33 ms while it lasts, past the 5 ms step, so the loop runs on its Q = 2 queued batches
  // and then at c' a step: it loses X (1 - S / c') - Q S. With c = 3 ms (c' = 4 ms < S) the
  // pipeline keeps up and it loses nothing.
  const double V = 5, f = 0.25, S = 5e-3, Q = 2;
  for (double x : {0.01, 0.2, 1.0}) {
    CAPTURE(x);
    TrainSchedule s;
    TimeToTrain t = host_eval_run(s);
    add_host_eval(t, s, {x, false, 5e-3, 2, f, 4e-3});
    const double slowed = 4e-3 / (1 - f);
    const double lost = std::max(0.0, x * (1 - S / slowed) - Q * S);
    CHECK(t.host_eval_overlap_s == Approx(lost).margin(1e-15));
    CHECK(t.host_eval_s == Approx(x + (V - 1) * lost));
    TimeToTrain keeps_up = host_eval_run(s);
    add_host_eval(keeps_up, s, {x, false, 4e-3, 2, f, 3e-3});
    CHECK(keeps_up.host_eval_overlap_s == 0);
    CHECK(keeps_up.host_eval_s == Approx(x));
  }
  // Input-bound steps run at c' instead of c while the metric lasts: f X lost per evaluation.
  TrainSchedule s;
  TimeToTrain bound = host_eval_run(s, 1.0);
  add_host_eval(bound, s, {0.2, false, 5e-3, 2, f, 5e-3});
  CHECK(bound.host_eval_overlap_s == Approx(f * 0.2));
  CHECK(bound.host_eval_s == Approx(0.2 + (V - 1) * f * 0.2));
}

TEST_CASE("host CPU capacity: a run takes at least the program start plus its host's CPU work") {
  TimeToTrain t;
  t.program_start_s = 0.1;
  t.total_s = 1.0;
  t.host_eval_s = 0.2;
  add_host_cpu_bound(t, 0.5);  // 0.6 s: within the composed run, nothing changes
  CHECK(t.total_s == 1.0);
  CHECK(t.host_cpu_excess_s == 0);
  add_host_cpu_bound(t, 2.0);  // 2.1 s: the host's CPU is the run's; the excess is host evaluation
  CHECK(t.total_s == Approx(2.1));
  CHECK(t.host_cpu_excess_s == Approx(1.1));
  CHECK(t.host_eval_s == Approx(1.3));
}

TEST_CASE("bound_by: the largest term a faster resource would remove") {
  TimeToTrain t;
  t.training_s = 10;
  t.evaluation_s = 1;
  t.input_stall_s = 2;
  t.first_batch_s = 0.5;
  t.host_eval_s = 3;
  t.program_start_s = 1;
  t.loop_round_trips_s = 0.5;
  RunBound b = bound_by(t);
  CHECK(b.resource == "device");
  CHECK(b.removable_s[0].second == 11);
  CHECK(b.removable_s[1].second == 2.5);
  CHECK(b.removable_s[2].second == 3);
  CHECK(b.removable_s[3].second == 1.5);
  // Input-bound training steps: a faster device removes only the eval steps' time.
  t.train_stall_s = 1e-3;
  b = bound_by(t);
  CHECK(b.removable_s[0].second == 1);
  CHECK(b.resource == "host_eval");
  t.host_eval_s = 0;
  CHECK(bound_by(t).resource == "input_pipeline");
}
