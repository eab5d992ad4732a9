#pragma once
// A timeline in Chrome trace event format (opened by Perfetto and chrome://tracing): one process
// per chip, one thread per traced core, complete events ("X") for compute ops and collectives,
// counter events ("C") for link utilisation.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/program.hpp"
#include "sim/timeline.hpp"

namespace tpusim::cli {

class ChromeTrace : public TimelineSink {
 public:
  explicit ChromeTrace(int cores_per_chip) : cores_per_chip_(cores_per_chip) {}
  void span(int core, const std::string& name, const std::string& category, Duration start,
            Duration end) override;
  void counter(const std::string& track, const std::string& name, Duration at,
               double value) override;
  /// Adds a counter per traced core, "HBM live GiB": the bytes live while each of its compute
  /// ops and collectives runs (`live_bytes[i]` for op i of `program`, memory_model.hpp).
  void live_bytes_counters(const Program& program, const std::vector<double>& live_bytes);
  /// Writes the file; throws ConfigError if it cannot be written.
  void write(const std::string& path) const;
  std::size_t events() const { return events_.size(); }

 private:
  int cores_per_chip_;
  std::vector<nlohmann::json> events_;
  std::vector<int> cores_seen_;
};

/// Which cores a timeline records: every core of small slices (up to `all_up_to`), else a
/// representative sample: the first chip's cores, a chip in the middle of the grid, the last.
std::vector<int> timeline_cores(int cores, int cores_per_chip, int all_up_to = 64);

}  // namespace tpusim::cli
