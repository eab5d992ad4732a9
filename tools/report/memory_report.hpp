#pragma once
// The `memory` object of run, replay and validate reports (docs/memory.md), its text form, and
// the out-of-memory verdict.
#include <iosfwd>
#include <nlohmann/json.hpp>

#include "models/memory/memory_model.hpp"

namespace tpusim::cli {

/// {"peak_bytes", "capacity_bytes", "headroom_bytes", "fits", "peak_op", "resident_bytes",
///  "bytes_by_class": {class: bytes}, "largest": [{"name", "class", "dtype", "bytes"}],
///  "analysis_s"}; {"known": false} for a Program without sizes (a trace).
nlohmann::json memory_json(const MemoryProfile& m, double analysis_s);

/// The report's memory section as text (nothing for an unknown profile).
void print_memory(std::ostream& out, const nlohmann::json& memory);

/// The analysis of `program` against the core's HBM, timed.
struct TimedMemory {
  MemoryProfile profile;
  double seconds = 0;
};
TimedMemory analyze_timed(const Program& program, double capacity_bytes);

}  // namespace tpusim::cli
