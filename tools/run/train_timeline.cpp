#include "tools/run/train_timeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "core/limits.hpp"

namespace tpusim::cli {
namespace {

/// The run's tracks: pid chips ("run (composed)": tid 0 phases and loops, tid 1 round trips) and
/// pid chips + 1 ("host 0 (coordinator)": tid 0 the evaluation metric).
struct RunTracks {
  TimelineWriter& trace;
  int run_pid, host_pid;
  void name(int pid, const char* what, const std::string& value, int tid = -1) {
    nlohmann::json e{{"name", what}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", value}}}};
    if (tid >= 0) e["tid"] = tid;
    trace.add_event(e);
  }
  void span(int pid, int tid, const std::string& label, const char* cat, double start_s,
            double dur_s, nlohmann::json args = nlohmann::json::object()) {
    trace.add_event({{"name", label},
                     {"cat", cat},
                     {"ph", "X"},
                     {"ts", start_s * 1e6},
                     {"dur", dur_s * 1e6},
                     {"pid", pid},
                     {"tid", tid},
                     {"args", args}});
  }
};

}  // namespace

void add_run_tracks(TimelineWriter& trace, const TrainSchedule& s, const TimeToTrain& t,
                    const HostEvalTiming& h, int chips) {
  trace.set_time_offset(Duration::seconds(t.program_start_s));
  RunTracks r{trace, chips, chips + 1};
  r.name(r.run_pid, "process_name", "run (composed)");
  r.name(r.run_pid, "thread_name", "start-up and device loops", 0);
  r.name(r.run_pid, "thread_name", "loop round trips", 1);
  r.name(r.host_pid, "process_name", "host 0 (coordinator)");
  r.name(r.host_pid, "thread_name", "evaluation metric", 0);
  r.span(r.run_pid, 0, "program start", "startup", 0, t.program_start_s);
  r.span(r.run_pid, 0, "first batch", "startup", t.program_start_s, t.first_batch_s);
  const double n = static_cast<double>(s.steps_per_loop), m = static_cast<double>(s.eval_steps);
  const double steady = (n - 1) * (t.train_stall_s + t.train_step_s);
  const double eval =
      t.first_eval_stall_s + t.first_eval_step_s + (m - 1) * (t.eval_stall_s + t.eval_step_s);
  double now = t.startup_s;
  // Loops after the first are alike: the first kMaxTimelineLoops are drawn one by one, the rest as
  // one span, so the timeline stays bounded however many loops the run has.
  const std::int64_t drawn = std::min<std::int64_t>(s.evaluations, kMaxTimelineLoops);
  for (std::int64_t v = 1; v <= drawn; ++v) {
    const double first = v == 1 ? t.first_train_step_s
                                : t.loop_first_train_stall_s + t.loop_first_train_step_s +
                                      (h.blocking ? 0.0 : t.host_eval_overlap_s);
    const double loop = first + steady + eval;
    r.span(r.run_pid, 0,
           fmt::format("loop {}: {} training + {} eval steps", v, s.steps_per_loop, s.eval_steps),
           "device_loop", now, loop,
           {{"training_steps", s.steps_per_loop},
            {"eval_steps", s.eval_steps},
            {"simulated", v == 1 ? "its first steps, on the chips' tracks" : "composed"},
            {"input_stall_from_metric_s", v > 1 && !h.blocking ? t.host_eval_overlap_s : 0.0}});
    now += loop;
    r.span(r.run_pid, 1, v == s.evaluations ? "wait for the last result" : "round trip",
           "round_trip", now, s.loop_round_trip_s);
    now += s.loop_round_trip_s;
    if (t.host_eval_metric_s > 0)
      r.span(r.host_pid, 0, fmt::format("metric of evaluation {}", v), "host_eval", now,
             t.host_eval_metric_s,
             {{"blocking", h.blocking || v == s.evaluations},
              {"cost_to_run_s",
               h.blocking || v == s.evaluations ? t.host_eval_metric_s : t.host_eval_overlap_s}});
    if (h.blocking || v == s.evaluations) now += t.host_eval_metric_s;
  }
  if (drawn == s.evaluations) return;
  const std::int64_t rest = s.evaluations - drawn;
  const double loop = t.loop_first_train_stall_s + t.loop_first_train_step_s +
                      (h.blocking ? 0.0 : t.host_eval_overlap_s) + steady + eval;
  // Each loop but the last adds its round trip and (when blocking) its metric; the last both.
  const double per_loop = loop + s.loop_round_trip_s + (h.blocking ? t.host_eval_metric_s : 0.0);
  const double span_s =
      static_cast<double>(rest) * per_loop + (h.blocking ? 0.0 : t.host_eval_metric_s);
  r.span(r.run_pid, 0,
         fmt::format("loops {} to {}: {} more, each as loop 2 (drawn as one span)", drawn + 1,
                     s.evaluations, rest),
         "device_loop", now, span_s,
         {{"loops", rest},
          {"training_steps", s.steps_per_loop},
          {"eval_steps", s.eval_steps},
          {"simulated", "composed"}});
}

}  // namespace tpusim::cli
