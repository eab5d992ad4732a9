#pragma once
// `tpusim validate STUDY.json` as a library call: every check of `run` (config, layout, program,
// memory), no simulation.
#include <string>
#include <vector>

namespace tpusim::cli {

/// Checks the study and prints what was checked (text or JSON). Returns the exit code: 1 when
/// the program does not fit the HBM, as `run` would, else 0. Throws ConfigError on bad input.
int validate_study(const std::string& study_path, const std::vector<std::string>& sets,
                   bool as_json);

}  // namespace tpusim::cli
