#pragma once
// A timeline in Chrome trace event format (opened by Perfetto and chrome://tracing): one process
// per traced chip (pid = chip id), one thread per traced core (plus collective tracks where its
// collectives overlap other spans), complete events ("X") with args describing the op, counter
// events ("C") for the utilisation of the chip's links, and the traced cores in "otherData".
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/program.hpp"
#include "sim/collectives/collective_engine.hpp"
#include "sim/kernel/timeline.hpp"

namespace tpusim::cli {

class TimelineWriter : public TimelineSink {
 public:
  /// `program` must outlive the trace; `traced_cores` are the cores the simulation reports.
  TimelineWriter(const Program& program, int devices_per_chip, int cores,
                 std::vector<int> traced_cores);
  void span(int core, int op_index, const std::string& name, const std::string& category,
            Duration start, Duration end) override;
  void counter(int chip, const std::string& track, const std::string& name, Duration at,
               double value) override;
  /// Adds a counter per traced core, "HBM live GiB, core N", in its chip's process: the bytes
  /// live while each of its compute ops and collectives runs (`live_bytes[i]` for op i of the
  /// program, memory_model.hpp). Call after the simulation.
  void live_bytes_counters(const std::vector<double>& live_bytes);
  /// The algorithm each collective ran with (the simulation's stats), for the spans' args.
  void set_collective_stats(const std::map<int, CollectiveOpStats>& stats) { stats_ = stats; }

  /// Shifts every span and counter by `offset` (a simulation that starts after the trace's zero:
  /// `tpusim train` shows the device loop after the program start).
  void set_time_offset(Duration offset) { offset_ = offset; }
  /// An event of the caller's own (with its pid, tid and ts), appended to traceEvents as given:
  /// tracks beside the chips' (`tpusim train`'s composed run and host tracks).
  void add_event(nlohmann::json event) { extra_.push_back(std::move(event)); }

  /// The whole trace as JSON text: {"displayTimeUnit": "ns", "otherData": {...},
  /// "traceEvents": [...]}, the keys of every object sorted (as a json DOM dumps them).
  std::string text() const;
  /// Writes the document, gzip-compressed when `path` ends in ".gz"; throws ConfigError if it
  /// cannot be written.
  void write(const std::string& path) const;
  std::size_t events() const { return spans_.size() + samples_.size() + extra_.size(); }

 private:
  struct Span {
    int core, op;
    std::string name, category;
    Duration start, end;
  };
  struct Sample {
    int chip;
    std::string track, name;
    Duration at;
    double value;
  };
  nlohmann::json args_of(const Span& s) const;
  /// Each span's thread id: its (core, lane), lanes assigned per core (assign_lanes), thread
  /// ids numbered in (core, lane) order into `tid`; `lane_of` gets each span's lane.
  std::vector<int> span_tids(std::vector<int>& lane_of,
                             std::map<std::pair<int, int>, int>& tid) const;

  const Program& program_;
  int devices_per_chip_, cores_;
  std::vector<int> traced_cores_;
  std::vector<Span> spans_;
  std::vector<Sample> samples_;
  std::map<int, CollectiveOpStats> stats_;
  Duration offset_;
  std::vector<nlohmann::json> extra_;
};

/// Throws ConfigError(where, ...) if a timeline of `cores` traced cores of a Program of `ops` ops
/// would hold more than kMaxTimelineSpans spans (core/limits.hpp): checked before simulating.
void check_timeline_size(std::size_t cores, std::size_t ops, const std::string& where);

/// Which cores a timeline records: every core of small slices (up to `all_up_to`), else a
/// representative sample: the first chip's cores, a chip in the middle of the grid, the last.
std::vector<int> timeline_cores(int cores, int devices_per_chip, int all_up_to = 64);
/// The cores of "--timeline-cores 0,1,4096-4103": ids and inclusive ranges, each below `cores`,
/// sorted, each once. Throws ConfigError naming --timeline-cores otherwise.
std::vector<int> parse_timeline_cores(const std::string& list, int cores);

/// Track (lane) of each span of one core, given as (start, end, is_collective) in any order:
/// compute spans on lane 0; collectives too unless one of them overlaps another span of the
/// core, in which case the core's collectives are packed onto lanes 1, 2, ... so that no two
/// spans of a lane overlap (Perfetto nests overlapping spans of one track wrongly).
std::vector<int> assign_lanes(const std::vector<std::tuple<Duration, Duration, bool>>& spans);

}  // namespace tpusim::cli
