#include "tools/run/train_run.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include "compiler/compiler.hpp"
#include "core/limits.hpp"
#include "core/output_file.hpp"
#include "models/device_loop.hpp"
#include "models/input_pipeline.hpp"
#include "models/train_schedule.hpp"
#include "models/workload.hpp"
#include "sim/machine/host.hpp"
#include "sim/run/simulation.hpp"
#include "tools/report/run_report.hpp"
#include "tools/report/timeline_writer.hpp"
#include "tools/run/train_timeline.hpp"
#include "tools/study/study.hpp"
#include "topologies/host_blocks.hpp"

namespace tpusim::cli {
namespace {

/// What the hosts are and do: their blocks, cores, pipeline and CPU use in the steady steps.
struct TrainHosts {
  HostBlocks blocks;
  int cpu_cores = 0;
  InputPipeline pipeline;       ///< training examples
  InputPipeline eval_pipeline;  ///< evaluation examples
  double train_cpu_s = 0;       ///< CPU time of one training batch on the busiest host
  double eval_cpu_s = 0;        ///< likewise, one eval batch
  int infeed_threads = 0;
  double train_pcie_s = 0;  ///< one training batch's copies to a host's chips, from idle threads
  EvalMetric metric;        ///< the host-side metric of one evaluation
  HostEvalTiming eval;      ///< its time on the busiest host, as the composition reads it
};

/// The cores the metric runs on: its threads, at most all of its host's cores.
int metric_cores(const TrainHosts& h) { return std::min(h.metric.threads, h.cpu_cores); }

nlohmann::json metric_report(const TrainHosts& h, const TimeToTrain& t) {
  nlohmann::json ops = nlohmann::json::array();
  for (const MetricOp& op : h.metric.ops)
    ops.push_back({{"op", op.name},
                   {"units", op.units},
                   {"unit", op.unit},
                   {"ns_per_unit", op.ns_per_unit},
                   {"cost", op.cost_path},
                   {"per_example", op.per_example},
                   {"cpu_s", op.ns() * 1e-9}});
  static const char* kOn[] = {"host", "all_hosts", "device"};
  return {{"metric", h.metric.name},
          {"on", kOn[static_cast<int>(h.metric.placement)]},
          {"blocking", h.metric.blocking},
          {"hosts_sharing", h.metric.hosts},
          {"threads", metric_cores(h)},
          {"ops", ops},
          // One evaluation on the busiest host: CPU time on one core, then over its threads.
          {"busiest_host_cpu_s", h.metric.busiest_host_ns() * 1e-9},
          {"metric_s", t.host_eval_metric_s},
          {"overlapped_cost_s", t.host_eval_overlap_s},
          // What the host's CPU capacity adds where concurrent metrics oversubscribe it.
          {"host_cpu_excess_s", t.host_cpu_excess_s}};
}

/// The busiest host's CPU work over the run, in seconds on all its cores: every batch's CPU time,
/// and each metric's time on the share of the cores it holds.
double run_host_cpu_s(const TrainHosts& h, const TrainSchedule& s, const TimeToTrain& t) {
  return static_cast<double>(s.target_steps) * h.train_cpu_s +
         static_cast<double>(s.evaluations) * static_cast<double>(s.eval_steps) * h.eval_cpu_s +
         static_cast<double>(s.evaluations) * t.host_eval_metric_s * h.eval.host_share;
}

/// The host-side metric in the run: its timing on the busiest host (on metric_cores), what it adds
/// (add_host_eval), then the host's CPU capacity as a whole (add_host_cpu_bound).
void add_host_metric(TrainHosts& hosts, const TrainSchedule& schedule, const HostOptions& options,
                     TimeToTrain& t) {
  const int cores = metric_cores(hosts);
  hosts.eval = {hosts.metric.busiest_host_ns() * 1e-9 / cores, hosts.metric.blocking,
                hosts.train_cpu_s + hosts.train_pcie_s,        options.queue_batches,
                static_cast<double>(cores) / hosts.cpu_cores,  hosts.train_cpu_s};
  add_host_eval(t, schedule, hosts.eval);
  add_host_cpu_bound(t, run_host_cpu_s(hosts, schedule, t));
}

nlohmann::json pipeline_report(const InputPipeline& p) {
  nlohmann::json ops = nlohmann::json::array();
  for (const PipelineOp& op : p.ops)
    ops.push_back({{"op", op.name},
                   {"units", op.units},
                   {"unit", op.unit},
                   {"ns_per_unit", op.ns_per_unit},
                   {"cost", op.cost_path},
                   {"us_per_example", op.ns() * 1e-3}});
  return ops;
}

nlohmann::json hosts_report(const TrainHosts& h, const TrainSchedule& s, const TimeToTrain& t) {
  const double train_period = t.train_step_s + t.train_stall_s;
  // Over the run: every batch's CPU time over the time to train.
  const double run_cpu_s = run_host_cpu_s(h, s, t);
  return {
      {"count", static_cast<int>(h.blocks.chips.size())},
      {"chip_block", h.blocks.extent},
      {"chips_per_host", h.blocks.chips_per_host()},
      {"cpu_cores", h.cpu_cores},
      {"cpu_us_per_example", h.pipeline.ns_per_example() * 1e-3},
      {"pipeline", pipeline_report(h.pipeline)},
      {"eval_cpu_us_per_example", h.eval_pipeline.ns_per_example() * 1e-3},
      {"eval_pipeline", pipeline_report(h.eval_pipeline)},
      {"infeed_threads", h.infeed_threads},
      {"train_batch_cpu_ms", h.train_cpu_s * 1e3},
      {"train_batch_pcie_ms", h.train_pcie_s * 1e3},
      {"eval_batch_cpu_ms", h.eval_cpu_s * 1e3},
      // The busiest host's CPU cores: a training batch's CPU time over the steady training step
      // period, and all batches' CPU time over the time to train.
      {"cpu_utilisation_train", train_period > 0 ? h.train_cpu_s / train_period : 0.0},
      {"cpu_utilisation_run", t.total_s > 0 ? run_cpu_s / t.total_s : 0.0},
      // The steady training step waits for its batch: the hosts (CPU or PCIe) bound the run.
      {"input_bound", t.train_stall_s > 0},
  };
}

nlohmann::json train_report(const Study& study, const Program& train, const TrainSchedule& s,
                            const TimeToTrain& t, const SimReport& r, const TrainHosts& hosts) {
  const double step_s = t.train_step_s + t.train_stall_s;
  const RunBound bound = bound_by(t);
  nlohmann::json removable = nlohmann::json::object();
  for (const auto& [name, sec] : bound.removable_s) removable[name] = sec;
  const double ms = 1e3;
  return {
      {"schema_version", kReportSchemaVersion},
      {"tpusim_version", TPUSIM_VERSION},
      {"study", study.source},
      {"model", train.model},
      {"layout", layout_string(train, study.config)},
      {"chips", r.chips},
      {"cores", r.cores},
      {"hosts", r.hosts},
      {"host", hosts_report(hosts, s, t)},
      {"global_batch", s.global_batch},
      {"eval_batch", s.eval_batch},
      {"time_to_train_s", t.total_s},
      {"breakdown",
       {{"startup_s", t.startup_s},
        {"program_start_s", t.program_start_s},
        {"first_batch_s", t.first_batch_s},
        {"training_s", t.training_s},
        {"evaluation_s", t.evaluation_s},
        {"loop_round_trips_s", t.loop_round_trips_s},
        {"input_stall_s", t.input_stall_s},
        {"host_eval_s", t.host_eval_s}}},
      {"bound_by", bound.resource},
      {"bound_by_removable_s", removable},
      {"eval_metric", metric_report(hosts, t)},
      {"schedule",
       {{"target_steps", s.target_steps},
        {"steps_per_loop", s.steps_per_loop},
        {"evaluations", s.evaluations},
        {"eval_steps_per_evaluation", s.eval_steps},
        {"eval_examples", s.eval_examples},
        // MLPerf counts an LLM run in sequences (examples) and tokens; a block is one loop.
        {"examples_to_target", s.target_steps * s.global_batch},
        {"examples_per_loop", s.steps_per_loop * s.global_batch},
        {"tokens_to_target",
         static_cast<double>(s.target_steps * s.global_batch) * train.tokens_per_example},
        {"loop_s", s.evaluations > 0
                       ? (t.training_s + t.evaluation_s + t.input_stall_s + t.loop_round_trips_s) /
                             static_cast<double>(s.evaluations)
                       : 0.0}}},
      {"per_step",
       {{"train_step_ms", t.train_step_s * ms},
        {"input_stall_per_train_step_ms", t.train_stall_s * ms},
        {"first_train_step_ms", t.first_train_step_s * ms},
        {"loop_first_train_step_ms", t.loop_first_train_step_s * ms},
        {"loop_first_input_stall_ms", t.loop_first_train_stall_s * ms},
        {"eval_step_ms", t.eval_step_s * ms},
        {"input_stall_per_eval_step_ms", t.eval_stall_s * ms},
        {"first_eval_step_ms", t.first_eval_step_s * ms},
        {"first_eval_input_stall_ms", t.first_eval_stall_s * ms}}},
      {"simulated",
       {{"train_steps", s.simulated_train_steps},
        {"eval_steps", s.simulated_eval_steps},
        {"loop_time_ms", r.step_time.ms()},
        {"kernel_events", r.kernel_events},
        {"simulation", r.symmetry}}},
      // The steady training step as the sweep's step metrics (input stall included).
      {"step_time_ms", step_s * ms},
      {"examples_per_s", step_s > 0 ? s.global_batch / step_s : 0.0},
      {"wall_s", r.wall_s},
      {"config", study.config.json()},
  };
}

std::string metric_line(const nlohmann::json& m) {
  if (m["ops"].empty())
    return fmt::format("  evaluation metric {} on the {}: no host time\n",
                       m["metric"].get<std::string>(),
                       m["on"] == "device" ? "device (what-if)" : "device (as the run did)");
  return fmt::format(
      "  evaluation metric {} on {}: {:.3f} s CPU on the busiest host = {:.4f} s on {} "
      "thread{}; {}{}\n",
      m["metric"].get<std::string>(), m["on"].get<std::string>(),
      m["busiest_host_cpu_s"].get<double>(), m["metric_s"].get<double>(), m["threads"].get<int>(),
      m["threads"].get<int>() == 1 ? "" : "s",
      m["blocking"].get<bool>() ? std::string("blocks the next loop")
                                : fmt::format("overlaps the next loop, costing it {:.4f} s",
                                              m["overlapped_cost_s"].get<double>()),
      m["host_cpu_excess_s"].get<double>() > 0
          ? fmt::format("; the host's CPU capacity adds {:.4f} s",
                        m["host_cpu_excess_s"].get<double>())
          : std::string());
}

std::string removable_text(const nlohmann::json& r) {
  std::string out;
  for (const auto& [k, v] : r.items())
    out += fmt::format("{}{} {:.2f} s", out.empty() ? "" : ", ", k, v.get<double>());
  return out;
}

void print_train_report(std::ostream& out, const nlohmann::json& j) {
  const auto& b = j["breakdown"];
  const auto& s = j["schedule"];
  const auto& p = j["per_step"];
  const auto& h = j["host"];
  const double total = j["time_to_train_s"].get<double>();
  auto share = [&](const char* k) { return total > 0 ? 100 * b[k].get<double>() / total : 0.0; };
  out << fmt::format("{} on {} chips ({} cores, {} hosts), {}, global batch {}\n",
                     j["model"].get<std::string>(), j["chips"].get<int>(), j["cores"].get<int>(),
                     j["hosts"].get<int>(), j["layout"].get<std::string>(),
                     j["global_batch"].get<std::int64_t>())
      << fmt::format("  time to train           {:10.2f} s\n", total)
      << fmt::format(
             "    start-up              {:10.4f} s  ({:.1f}%): program start {:.4f} s + "
             "first batch {:.4f} s\n",
             b["startup_s"].get<double>(), share("startup_s"), b["program_start_s"].get<double>(),
             b["first_batch_s"].get<double>())
      << fmt::format("    training steps        {:10.2f} s  ({:.1f}%)\n",
                     b["training_s"].get<double>(), share("training_s"))
      << fmt::format("    evaluation            {:10.2f} s  ({:.1f}%)\n",
                     b["evaluation_s"].get<double>(), share("evaluation_s"))
      << fmt::format("    loop round trips      {:10.4f} s  ({:.1f}%)\n",
                     b["loop_round_trips_s"].get<double>(), share("loop_round_trips_s"))
      << fmt::format("    input stalls          {:10.2f} s  ({:.1f}%)\n",
                     b["input_stall_s"].get<double>(), share("input_stall_s"))
      << fmt::format("    host evaluation       {:10.4f} s  ({:.1f}%)\n",
                     b["host_eval_s"].get<double>(), share("host_eval_s"))
      << fmt::format("  {} training steps in {} loop{} of {} steps + {} eval step{} (batch {})\n",
                     s["target_steps"].get<std::int64_t>(), s["evaluations"].get<std::int64_t>(),
                     s["evaluations"].get<std::int64_t>() == 1 ? "" : "s",
                     s["steps_per_loop"].get<std::int64_t>(),
                     s["eval_steps_per_evaluation"].get<std::int64_t>(),
                     s["eval_steps_per_evaluation"].get<std::int64_t>() == 1 ? "" : "s",
                     j["eval_batch"].get<std::int64_t>())
      << fmt::format(
             "  a loop (MLPerf's block: {} examples, then the evaluation) {:.3f} s; {} "
             "examples to the target\n",
             s["examples_per_loop"].get<std::int64_t>(), s["loop_s"].get<double>(),
             s["examples_to_target"].get<std::int64_t>())
      << fmt::format(
             "  training step {:.3f} ms + input stall {:.3f} ms; eval step {:.3f} ms + "
             "input stall {:.3f} ms\n",
             p["train_step_ms"].get<double>(), p["input_stall_per_train_step_ms"].get<double>(),
             p["eval_step_ms"].get<double>(), p["input_stall_per_eval_step_ms"].get<double>())
      << fmt::format(
             "  per host ({} chips, {} CPU cores, {} infeed threads): {:.1f} us CPU per example, "
             "{:.3f} ms per training batch (+ {:.3f} ms of PCIe copies), CPU {:.1f}% busy in the "
             "training step, {:.1f}% over the run; {}\n",
             h["chips_per_host"].get<int>(), h["cpu_cores"].get<int>(),
             h["infeed_threads"].get<int>(), h["cpu_us_per_example"].get<double>(),
             h["train_batch_cpu_ms"].get<double>(), h["train_batch_pcie_ms"].get<double>(),
             100 * h["cpu_utilisation_train"].get<double>(),
             100 * h["cpu_utilisation_run"].get<double>(),
             h["input_bound"].get<bool>() ? "INPUT-BOUND (training waits for its hosts)"
                                          : "not input-bound")
      << metric_line(j["eval_metric"])
      << fmt::format("  bound by {} (the largest term a faster one would remove: {})\n",
                     j["bound_by"].get<std::string>(), removable_text(j["bound_by_removable_s"]))
      << fmt::format("  simulated {} training + {} eval + 1 training steps in {:.3f} s\n",
                     j["simulated"]["train_steps"].get<int>(),
                     j["simulated"]["eval_steps"].get<int>(), j["wall_s"].get<double>())
      << "  simulation: " << j["simulated"]["simulation"].get<std::string>() << "\n";
}

// The loop's size is known from the step Programs before any copy is made.
void check_loop_size(const std::vector<const Program*>& steps, const Program& train,
                     const Program& eval) {
  std::size_t ops = 0, eval_ops = 0;
  for (const Program* p : steps) {
    ops += p->ops.size() + 1;
    if (p == &eval) eval_ops += p->ops.size() + 1;
  }
  if (ops <= kMaxLoopOps) return;
  // The path of the steps that hold most of the loop (not the larger step: many eval steps of a
  // small eval Program are the eval steps' count).
  const std::string path =
      eval_ops > ops - eval_ops ? "train.simulated_eval_steps" : "train.simulated_train_steps";
  throw ConfigError(
      path, "a device loop of " + std::to_string(steps.size()) + " steps (" +
                std::to_string(train.ops.size()) + " ops a training step, " +
                std::to_string(eval.ops.size()) + " an eval step) holds " + std::to_string(ops) +
                " ops, " + past_limit(static_cast<double>(kMaxLoopOps), "ops", "kMaxLoopOps") +
                "; simulate fewer steps (the rest of the loop is composed from them)");
}

}  // namespace

void run_train(const TrainArgs& a) {
  if (!a.timeline.empty()) check_output_path(a.timeline, "--timeline");
  Study study = load_study_file(a.study, a.sets, LayoutChecks::Train);
  const Config& cfg = study.config;
  const TrainSchedule schedule = read_train_schedule(cfg);
  Topology topology(study.topology);
  const Program train = compiled_program(cfg, topology, study.hardware, ProgramKind::Train);
  const Program eval = compiled_program(cfg, topology, study.hardware, ProgramKind::Eval);
  const HostOptions host_options = HostOptions::from_config(cfg);
  // An eval graph that does not state its infeed bytes is fed examples of the training size.
  const double eval_bytes = eval.infeed_bytes_per_example > 0 ? eval.infeed_bytes_per_example
                                                              : train.infeed_bytes_per_example;
  TrainHosts hosts{host_blocks(topology, host_options.chip_block), host_options.cpu_cores,
                   input_pipeline(cfg, train.infeed_bytes_per_example),
                   input_pipeline(cfg, eval_bytes, PipelinePass::Eval)};
  hosts.metric =
      eval_metric(cfg, schedule.eval_examples, static_cast<int>(hosts.blocks.chips.size()));

  // One stream of batches per host, in the order the cores consume them, each batch at its own
  // pipeline's cost per example.
  std::vector<const Program*> steps;
  InfeedPlan plan;
  for (bool is_eval : schedule.simulated_sequence()) {
    steps.push_back(is_eval ? &eval : &train);
    plan.batch_examples.push_back(
        static_cast<double>(is_eval ? schedule.eval_batch : schedule.global_batch));
    plan.batch_example_bytes.push_back(is_eval ? eval_bytes : train.infeed_bytes_per_example);
    plan.batch_cpu_ns_per_example.push_back(is_eval ? hosts.eval_pipeline.ns_per_example()
                                                    : hosts.pipeline.ns_per_example());
  }
  check_loop_size(steps, train, eval);
  DeviceLoop loop = make_device_loop(steps, study.hardware.loop_iteration);
  plan.op_batch = loop.op_batch;
  spdlog::info("{}: a device loop of {} steps, {} ops, on {}", a.study, steps.size(),
               loop.program.ops.size(), topology.describe());

  SimOptions options = SimOptions::from_config(cfg);
  options.progress_interval_s = progress_interval_s();
  options.infeed = &plan;
  std::unique_ptr<TimelineWriter> trace;
  if (!a.timeline.empty()) {
    const int cores = topology.num_chips() * study.hardware.devices_per_chip;
    options.traced_cores = timeline_cores(cores, study.hardware.devices_per_chip);
    check_timeline_size(options.traced_cores.size(), loop.program.ops.size(), "--timeline");
    trace = std::make_unique<TimelineWriter>(loop.program, study.hardware.devices_per_chip, cores,
                                             options.traced_cores);
    options.timeline = trace.get();
  }
  SimReport r = simulate(loop.program, topology, study.hardware, options);
  std::vector<SimulatedStep> simulated;
  for (const InfeedBatchStats& b : r.infeed) simulated.push_back({b.started, b.stall});
  TimeToTrain t = compose_time_to_train(schedule, simulated, r.step_time);
  // The steady batches: the second training batch and the second eval batch of the sequence.
  hosts.train_cpu_s = r.infeed[1].cpu.seconds();
  hosts.eval_cpu_s =
      r.infeed[static_cast<std::size_t>(schedule.simulated_train_steps) + 1].cpu.seconds();
  // A training batch is ready its CPU time and its PCIe copies after it starts: a chip's share
  // per copy, HostOptions::copy_rounds of them one after another on a thread.
  hosts.infeed_threads = host_options.infeed_threads;
  hosts.train_pcie_s = host_options.copy_rounds(hosts.blocks.chips_per_host()) *
                       host_options.pcie_per_chip
                           .time_for(static_cast<double>(schedule.global_batch) /
                                     topology.num_chips() * train.infeed_bytes_per_example)
                           .seconds();
  add_host_metric(hosts, schedule, host_options, t);
  nlohmann::json report = train_report(study, train, schedule, t, r, hosts);
  if (trace) {
    trace->set_collective_stats(r.collectives);
    add_run_tracks(*trace, schedule, t, hosts.eval, topology.num_chips());
    trace->write(a.timeline);
    spdlog::info("timeline: {} events for {} cores in {}", trace->events(),
                 options.traced_cores.size(), a.timeline);
  }
  if (a.json)
    std::cout << report.dump(2) << "\n";
  else
    print_train_report(std::cout, report);
}

}  // namespace tpusim::cli
