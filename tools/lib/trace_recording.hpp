#pragma once
// `tpusim run STUDY --record-trace FILE`: the Program of a run with the topology and hardware it
// ran on, so `tpusim replay FILE` reproduces the run without the study.
#include <string>

#include "models/program.hpp"
#include "tools/lib/study.hpp"

namespace tpusim::cli {

/// Writes `program` to `path` (gzip if it ends in .gz) with recorded_on = {"source": "tpusim run",
/// "study": study.source, "topology": the study's topology, "hardware": its resolved hardware,
/// "config": the whole resolved study}.
void record_trace(const Study& study, const Program& program, const std::string& path);

}  // namespace tpusim::cli
