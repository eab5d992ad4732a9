#include "models/train_schedule.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <string>

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "core/param_handle.hpp"
#include "core/params.hpp"
#include "models/model_builder.hpp"
#include "models/workload.hpp"

namespace tpusim {
namespace {
using T = ParamType;

// One parameter per line reads as a table. The facts of the shipped studies and their sources
// are in docs/train.md.
// clang-format off
const Param<std::int64_t> kTrainTargetSteps{{"train.target_steps", T::Integer, "steps", 0, "training steps until the quality target is reached (at an evaluation); 0: from train.target_epochs or train.target_examples", 0, 1e12}};
const Param<double> kTrainTargetEpochs{{"train.target_epochs", T::Number, "epochs", 0.0, "epochs until the quality target is reached, when train.target_steps is 0 (needs train.dataset_examples)", 0, 1e6}};
const Param<std::int64_t> kTrainDatasetExamples{{"train.dataset_examples", T::Integer, "examples", 0, "training examples per epoch; an epoch is ceil(dataset_examples / workload.global_batch) steps", 0, 1e12}};
const Param<std::int64_t> kTrainEvalEverySteps{{"train.eval_every_steps", T::Integer, "steps", 0, "training steps per device loop, each loop ending with an evaluation; 0: from train.eval_every_epochs or train.eval_every_examples", 0, 1e12}};
const Param<std::int64_t> kTrainTargetExamples{{"train.target_examples", T::Integer, "examples", 0, "training examples (sequences of an LM) until the quality target is reached, when train.target_steps and train.target_epochs are 0: a whole number of workload.global_batch steps (MLPerf GPT-3 counts its run in sequences)", 0, 1e15}};
const Param<std::int64_t> kTrainEvalEveryExamples{{"train.eval_every_examples", T::Integer, "examples", 0, "training examples between two evaluations, when train.eval_every_steps and train.eval_every_epochs are 0: a whole number of workload.global_batch steps (MLPerf GPT-3: every 24,576 sequences, one block)", 0, 1e15}};
const Param<double> kTrainEvalEveryEpochs{{"train.eval_every_epochs", T::Number, "epochs", 0.0, "epochs per device loop, when train.eval_every_steps is 0", 0, 1e6}};
const Param<std::int64_t> kTrainEvalExamples{{"train.eval_examples", T::Integer, "examples", 0, "examples of one evaluation (at workload.eval_batch per eval step)", 0, 1e12}};
const Param<std::int64_t> kTrainEvalSteps{{"train.eval_steps", T::Integer, "steps", 0, "eval steps per evaluation as the run did them; 0: ceil(train.eval_examples / eval batch)", 0, 1e9}};
const Param<std::int64_t> kTrainSimulatedTrainSteps{{"train.simulated_train_steps", T::Integer, "steps", 3, "training steps of the loop that tpusim train simulates (at most the loop's); the rest of the loop is composed from them (the first and the mean of the others)", 2, 1e6}};
const Param<double> kTrainProgramStartS{{"train.program_start_s", T::Number, "s", 1.0, "start of the device program after run_start, before the first batch is fed (launching the compiled loop on every host's TPU runtime; compilation precedes run_start). An assumption, not measured, not fitted (docs/train.md)", 0, 3600}};
const Param<double> kTrainLoopRoundTripUs{{"train.loop_round_trip_us", T::Number, "us", 1000.0, "host round trip at the end of each device loop (control returns to the host, which launches the next loop through the TPU runtime; after the last loop, the wait for its result before run_stop). An assumption, not measured, not fitted (docs/train.md)", 0, 1e9}};
const Param<std::int64_t> kTrainSimulatedEvalSteps{{"train.simulated_eval_steps", T::Integer, "steps", 2, "eval steps that tpusim train simulates (at most an evaluation's); the rest is composed from them (the first and the mean of the others)", 2, 1e6}};
// clang-format on

std::int64_t steps_per_epoch(const Config& cfg, const std::string& needed_by) {
  const std::int64_t n = kTrainDatasetExamples(cfg);
  if (n <= 0)
    throw ConfigError(kTrainDatasetExamples.path(),
                      "is needed (> 0) to turn " + needed_by +
                          " into steps; give the training examples per epoch");
  const std::int64_t b = global_batch_param()(cfg);
  return (n + b - 1) / b;
}

// Epochs to whole steps; a fraction of a step is an error naming the epochs' path.
std::int64_t epochs_to_steps(const Config& cfg, const Param<double>& epochs_param) {
  const std::string& path = epochs_param.path();
  const double epochs = epochs_param(cfg);
  const double steps = epochs * static_cast<double>(steps_per_epoch(cfg, path));
  if (std::abs(steps - std::round(steps)) > 1e-6)
    throw ConfigError(path, std::to_string(epochs) + " epochs are " + std::to_string(steps) +
                                " steps, not a whole number; allowed: epochs that are a whole " +
                                "number of steps, or give the steps");
  if (std::round(steps) < 1)
    throw ConfigError(path,
                      format_number(epochs) + " epochs are " + format_number(steps) +
                          " steps; allowed: epochs of at least one step (" +
                          format_number(1.0 / static_cast<double>(steps_per_epoch(cfg, path))) +
                          " epochs here), or give the steps");
  return static_cast<std::int64_t>(std::round(steps));
}

// Examples to whole steps of the global batch; a fraction of a step is an error naming the path.
std::int64_t examples_to_steps(const Config& cfg, const Param<std::int64_t>& examples_param) {
  const std::int64_t n = examples_param(cfg);
  const std::int64_t b = global_batch_param()(cfg);
  if (n % b != 0)
    throw ConfigError(examples_param.path(),
                      std::to_string(n) + " examples are not a whole number of steps of " +
                          global_batch_param().path() + " = " + std::to_string(b) +
                          "; allowed: a multiple of " + std::to_string(b));
  return n / b;
}

// The steps of a count given as steps, epochs or examples (exactly one of them).
std::int64_t steps_or_epochs(const Config& cfg, const Param<std::int64_t>& steps_param,
                             const Param<double>& epochs_param,
                             const Param<std::int64_t>& examples_param, const char* what) {
  const std::string& steps_path = steps_param.path();
  const std::string& epochs_path = epochs_param.path();
  const std::string& examples_path = examples_param.path();
  const std::int64_t steps = steps_param(cfg);
  const bool epochs = epochs_param(cfg) > 0;
  const bool examples = examples_param(cfg) > 0;
  if ((steps > 0) + epochs + examples > 1)
    throw ConfigError(
        steps > 0 ? steps_path : epochs_path,
        "give one of " + steps_path + ", " + epochs_path + " or " + examples_path + ", not more");
  if (steps > 0) return steps;
  if (epochs) return epochs_to_steps(cfg, epochs_param);
  if (examples) return examples_to_steps(cfg, examples_param);
  throw ConfigError(steps_path, std::string("tpusim train needs ") + what + ": give " + steps_path +
                                    " (> 0), " + epochs_path + " (> 0) or " + examples_path +
                                    " (> 0)");
}

double mean_own(const std::vector<double>& own, std::size_t from, std::size_t to) {
  double s = 0;
  for (std::size_t i = from; i < to; ++i) s += own[i];
  return s / static_cast<double>(to - from);
}

}  // namespace

std::vector<bool> TrainSchedule::simulated_sequence() const {
  std::vector<bool> seq(static_cast<std::size_t>(simulated_train_steps), false);
  seq.insert(seq.end(), static_cast<std::size_t>(simulated_eval_steps), true);
  seq.push_back(false);
  return seq;
}

TrainSchedule read_train_schedule(const Config& cfg) {
  TrainSchedule s;
  s.global_batch = global_batch_param()(cfg);
  s.eval_batch = step_examples(cfg, ProgramKind::Eval);
  s.target_steps = steps_or_epochs(cfg, kTrainTargetSteps, kTrainTargetEpochs, kTrainTargetExamples,
                                   "the steps to the quality target");
  s.steps_per_loop = steps_or_epochs(cfg, kTrainEvalEverySteps, kTrainEvalEveryEpochs,
                                     kTrainEvalEveryExamples, "the evaluation cadence");
  if (s.target_steps % s.steps_per_loop != 0)
    throw ConfigError(
        kTrainTargetSteps(cfg) > 0    ? kTrainTargetSteps.path()
        : kTrainTargetEpochs(cfg) > 0 ? kTrainTargetEpochs.path()
                                      : kTrainTargetExamples.path(),
        std::to_string(s.target_steps) + " steps to the target are not a multiple of the " +
            std::to_string(s.steps_per_loop) +
            " steps between evaluations (the target is detected at an evaluation); allowed: a "
            "multiple of " +
            std::to_string(s.steps_per_loop) + " steps");
  s.evaluations = s.target_steps / s.steps_per_loop;
  s.eval_examples = kTrainEvalExamples(cfg);
  if (s.eval_examples <= 0)
    throw ConfigError(kTrainEvalExamples.path(),
                      "tpusim train needs the examples of one evaluation (> 0)");
  const std::int64_t needed = (s.eval_examples + s.eval_batch - 1) / s.eval_batch;
  s.eval_steps = kTrainEvalSteps(cfg);
  if (s.eval_steps == 0) s.eval_steps = needed;
  if (s.eval_steps < needed)
    throw ConfigError(kTrainEvalSteps.path(),
                      std::to_string(s.eval_steps) + " eval steps of " +
                          std::to_string(s.eval_batch) + " examples cannot cover " +
                          std::to_string(s.eval_examples) +
                          " eval examples; allowed: 0 or >= " + std::to_string(needed));
  s.program_start_s = kTrainProgramStartS(cfg);
  s.loop_round_trip_s = kTrainLoopRoundTripUs(cfg) * 1e-6;
  s.simulated_train_steps =
      static_cast<int>(std::min<std::int64_t>(kTrainSimulatedTrainSteps(cfg), s.steps_per_loop));
  s.simulated_eval_steps =
      static_cast<int>(std::min<std::int64_t>(kTrainSimulatedEvalSteps(cfg), s.eval_steps));
  return s;
}

TimeToTrain compose_time_to_train(const TrainSchedule& s, const std::vector<SimulatedStep>& steps,
                                  Duration end) {
  const std::size_t n = static_cast<std::size_t>(s.simulated_train_steps);
  const std::size_t m = static_cast<std::size_t>(s.simulated_eval_steps);
  assert(steps.size() == n + m + 1);
  std::vector<double> own(steps.size()), stall(steps.size());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Duration next = i + 1 < steps.size() ? steps[i + 1].start - steps[i + 1].stall : end;
    own[i] = (next - steps[i].start).seconds();
    stall[i] = steps[i].stall.seconds();
  }
  TimeToTrain t;
  t.program_start_s = s.program_start_s;
  t.first_batch_s = steps[0].start.seconds();
  t.startup_s = t.program_start_s + t.first_batch_s;
  t.first_train_step_s = own[0];
  t.train_step_s = n > 1 ? mean_own(own, 1, n) : own[n + m];
  t.train_stall_s = n > 1 ? mean_own(stall, 1, n) : stall[n + m];
  t.first_eval_step_s = own[n];
  t.first_eval_stall_s = stall[n];
  t.eval_step_s = m > 1 ? mean_own(own, n + 1, n + m) : own[n];
  t.eval_stall_s = m > 1 ? mean_own(stall, n + 1, n + m) : stall[n];
  t.loop_first_train_step_s = own[n + m];
  t.loop_first_train_stall_s = stall[n + m];

  const double N = static_cast<double>(s.steps_per_loop);
  const double M = static_cast<double>(s.eval_steps);
  const double V = static_cast<double>(s.evaluations);
  t.training_s =
      t.first_train_step_s + (V - 1) * t.loop_first_train_step_s + V * (N - 1) * t.train_step_s;
  t.evaluation_s = V * (t.first_eval_step_s + (M - 1) * t.eval_step_s);
  t.input_stall_s = (V - 1) * t.loop_first_train_stall_s + V * (N - 1) * t.train_stall_s +
                    V * (t.first_eval_stall_s + (M - 1) * t.eval_stall_s);
  t.loop_round_trips_s = V * s.loop_round_trip_s;
  t.total_s = t.startup_s + t.training_s + t.evaluation_s + t.input_stall_s + t.loop_round_trips_s;
  return t;
}

void add_host_eval(TimeToTrain& t, const TrainSchedule& s, const HostEvalTiming& h) {
  const double x = h.metric_s;
  const double step = t.train_step_s + t.train_stall_s;
  const double f = std::min(1.0, h.host_share);
  const double queued = h.queue_batches * step;
  double overlap = x;  // a blocking metric
  if (!h.blocking) {
    if (t.train_stall_s > 0) {
      overlap = f * x;  // input-bound: the host's lost share is the run's
    } else if (f >= 1) {
      overlap = std::max(0.0, x - std::max(0.0, queued - h.batch_ready_s));
    } else {
      const double slowed = h.batch_cpu_s / (1 - f);
      overlap = slowed <= step ? 0.0 : std::max(0.0, x * (1 - step / slowed) - queued);
    }
  }
  t.host_eval_metric_s = x;
  t.host_eval_overlap_s = overlap;
  t.host_eval_s = x + static_cast<double>(s.evaluations - 1) * overlap;
  t.total_s += t.host_eval_s;
}

void add_host_cpu_bound(TimeToTrain& t, double host_cpu_s) {
  const double bound = t.program_start_s + host_cpu_s;
  if (bound <= t.total_s) return;
  t.host_cpu_excess_s = bound - t.total_s;
  t.host_eval_s += t.host_cpu_excess_s;
  t.total_s = bound;
}

RunBound bound_by(const TimeToTrain& t) {
  RunBound b;
  const double device =
      (t.train_stall_s > 0 ? 0.0 : t.training_s) + (t.eval_stall_s > 0 ? 0.0 : t.evaluation_s);
  b.removable_s = {{"device", device},
                   {"input_pipeline", t.input_stall_s + t.first_batch_s},
                   {"host_eval", t.host_eval_s},
                   {"host_runtime", t.program_start_s + t.loop_round_trips_s}};
  double best = -1;
  for (const auto& [name, s] : b.removable_s)
    if (s > best) best = s, b.resource = name;
  return b;
}

}  // namespace tpusim
