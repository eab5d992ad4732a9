#pragma once
// What a trace holds, in numbers: op counts, FLOPs and bytes, collectives by kind and group.
#include <nlohmann/json.hpp>

#include "models/program.hpp"

namespace tpusim::trace {

/// {"model", "examples_per_step", "mesh": [...], "devices", "ops", "compute_ops",
///  "collectives", "dependencies", "flops", "hbm_bytes_read", "hbm_bytes_written",
///  "measured_ops", "measured_ns", "collectives_by_kind": {kind: {"count", "bytes"}},
///  "collectives_by_group": {"data": {"count", "bytes"}, "all devices": ..., "replica groups":
///  ...}}
/// Bytes are per core, as in the Program.
nlohmann::ordered_json summarize(const Program& program);

}  // namespace tpusim::trace
