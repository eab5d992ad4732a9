#pragma once
// Time to train: the schedule of a training run (steps to the quality target, evaluation
// cadence, device loops) and the composition of a simulated device loop into the whole run.
// Plain arithmetic: the simulation that measures the loop lives in sim/ and tools/.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "core/units.hpp"

namespace tpusim {

/// The run, from the study's train.* keys (declared in models/train_schedule.cpp).
struct TrainSchedule {
  std::int64_t global_batch = 0;
  std::int64_t eval_batch = 0;
  std::int64_t target_steps = 0;    ///< training steps until the target is detected
  std::int64_t steps_per_loop = 0;  ///< training steps between two evaluations (one device loop)
  std::int64_t evaluations = 0;     ///< = device loops; the last one detects the target
  std::int64_t eval_examples = 0;   ///< examples of one evaluation
  std::int64_t eval_steps = 0;      ///< eval steps per evaluation
  double program_start_s = 0;       ///< train.program_start_s: run_start to the program's start
  double loop_round_trip_s = 0;     ///< train.loop_round_trip_us: host round trip ending a loop
  int simulated_train_steps = 0;    ///< training steps simulated at the start of the loop
  int simulated_eval_steps = 0;     ///< eval steps simulated

  /// The simulated sequence of steps: simulated_train_steps training steps, simulated_eval_steps
  /// eval steps, then the first training step of the next loop. true = an eval step.
  std::vector<bool> simulated_sequence() const;
};

/// Reads train.* and the batches. Throws ConfigError naming the JSON path when the target or
/// the cadence is missing, or when the target is not at an evaluation (a cadence that does not
/// divide the steps to the target).
TrainSchedule read_train_schedule(const Config& cfg);

/// One simulated step: when its last core began it (dequeued its batch) and how long the
/// longest-waiting core stood at its infeed op before that.
struct SimulatedStep {
  Duration start;
  Duration stall;
};

/// The whole run composed from the simulated sequence (all in seconds).
struct TimeToTrain {
  double total_s = 0;
  double startup_s = 0;            ///< run_start until the first training step begins
  double program_start_s = 0;      ///< of the start-up: the program's start (train.program_start_s)
  double first_batch_s = 0;        ///< of the start-up: the pipeline filling the first infeed
  double loop_round_trips_s = 0;   ///< V host round trips, the last one the wait for the result
  double training_s = 0;           ///< training steps, without input stalls
  double evaluation_s = 0;         ///< eval steps, without input stalls
  double input_stall_s = 0;        ///< waiting at infeed ops after the first step
  double host_eval_s = 0;          ///< the host-side metric as the run sees it (add_host_eval)
  double host_eval_metric_s = 0;   ///< of it: one evaluation's metric on the busiest host
  double host_eval_overlap_s = 0;  ///< of it: what an overlapped metric costs the next loop
  double host_cpu_excess_s = 0;  ///< of it: what the host's CPU capacity adds (add_host_cpu_bound)
  // Per step, as composed:
  double train_step_s = 0;             ///< steady training step, without stall
  double train_stall_s = 0;            ///< steady input stall per training step
  double first_train_step_s = 0;       ///< the run's first training step
  double loop_first_train_step_s = 0;  ///< first training step of a later loop
  double loop_first_train_stall_s = 0;
  double eval_step_s = 0;        ///< steady eval step, without stall
  double eval_stall_s = 0;       ///< steady stall per eval step
  double first_eval_step_s = 0;  ///< first eval step of an evaluation
  double first_eval_stall_s = 0;
};

/// Composes the run from the simulated sequence (TrainSchedule::simulated_sequence()): `steps`
/// in that order, `end` when the last one ended. With own(i) = start(i+1) - stall(i+1) - start(i)
/// (end - start(i) for the last):
///   loop 1:       stall(T1) [start-up] + own(T1) + (N-1) (stall_T + own_T) + E
///   loops 2..V:   stall(T') + own(T') + (N-1) (stall_T + own_T) + E
///   E = stall(E1) + own(E1) + (M-1) (stall_E + own_E)
///   total = program start + loops + V round trips (V-1 launching the next loop, the last the
///           wait for the last evaluation's result before run_stop)
/// where _T and _E are means over the simulated training steps after the first and the eval
/// steps after the first (the first's own values when only one was simulated), T' the trailing
/// training step, N = steps_per_loop, M = eval_steps, V = evaluations.
TimeToTrain compose_time_to_train(const TrainSchedule& s, const std::vector<SimulatedStep>& steps,
                                  Duration end);

/// The host-side metric of one evaluation on the busiest host (the coordinator).
struct HostEvalTiming {
  double metric_s = 0;       ///< its CPU work on that host / the cores it runs on
  bool blocking = false;     ///< the next device loop waits for it (else it overlaps the loop)
  double batch_ready_s = 0;  ///< a training batch's CPU time plus its PCIe copy on that host
  int queue_batches = 2;     ///< hardware.host.infeed_queue_batches
  /// The share of the host's cores the metric holds (its threads / the cores, at most 1).
  double host_share = 1;
  double batch_cpu_s = 0;  ///< a training batch's CPU time on all the host's cores
};

/// Adds the host evaluation visible to the run to `t` (host_eval_s, total_s). The metric starts
/// when the evaluation's outfeed reaches the host (after the loop's round trip) and holds a share
/// f of its host's cores until it is done (X = metric_s). The last evaluation's metric is the
/// result run_stop waits for: X. Each earlier one adds X if it blocks the next loop. If it
/// overlaps the next loop, it adds what it takes from the input pipeline:
/// - f = 1 (every core; the host prepares no batch meanwhile): X when the training steps are
///   input-bound (the host's lost time is the run's), else max(0, X - slack) with slack = Q x S -
///   batch_ready (S the steady training step, Q the queued batches: the next loop runs on its
///   queued batches while the host scores, and the first batch the host prepares after the metric
///   is needed Q steps into the loop);
/// - f < 1 (the other cores keep preparing batches, each taking c' = c / (1 - f) of CPU, c =
///   batch_cpu_s): f X when the training steps are input-bound (they run at c' instead of c while
///   the metric lasts), else 0 if c' <= S, else max(0, X (1 - S / c') - Q S): the loop runs at c'
///   a step once its Q queued batches are spent.
void add_host_eval(TimeToTrain& t, const TrainSchedule& s, const HostEvalTiming& h);

/// The busiest host's CPU as a whole bounds the run: its CPU work over the run (every batch it
/// prepares and every metric, in seconds on all its cores: `host_cpu_s`) cannot take less than
/// that after the program start. add_host_eval charges each overlapped metric as if it ran
/// alone; where concurrent metrics ask more of the host than it has (one-thread metrics longer
/// than a loop on few cores), the run takes program start + host_cpu_s, the excess counted as
/// host evaluation (host_cpu_excess_s). Otherwise nothing changes.
void add_host_cpu_bound(TimeToTrain& t, double host_cpu_s);

/// Which resource bounds the run: the largest of the terms a faster version of a resource would
/// remove. device: the training steps' time if they are not input-bound, plus the eval steps'
/// if those are not; input_pipeline: input stalls and the first batch; host_eval: host_eval_s;
/// host_runtime: the program start and the loop round trips. Ties go to the earlier name.
struct RunBound {
  std::string resource;
  std::vector<std::pair<std::string, double>> removable_s;  ///< each resource's term, seconds
};
RunBound bound_by(const TimeToTrain& t);

}  // namespace tpusim
