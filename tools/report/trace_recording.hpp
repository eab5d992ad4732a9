#pragma once
// `tpusim run STUDY --record-trace FILE`: the Program of a run with the topology and hardware it
// ran on, so `tpusim replay FILE` reproduces the run without the study.
#include <nlohmann/json.hpp>
#include <string>

#include "models/program.hpp"
#include "tools/study/study.hpp"

namespace tpusim::cli {

/// Writes `program` to `path` (gzip if it ends in .gz) with recorded_on = {"source": "tpusim run",
/// "study": study.source, "topology": the study's topology, "hardware": its resolved hardware,
/// "config": the whole resolved study}.
void record_trace(const Study& study, const Program& program, const std::string& path);

/// The study document a trace was recorded in, without its topology: recorded_on.config if
/// present, else the tpu_v3 preset with recorded_on.hardware laid over it (if present).
nlohmann::json recorded_study_doc(const nlohmann::json& recorded_on);

}  // namespace tpusim::cli
