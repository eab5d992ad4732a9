#pragma once
// The module statistics export (tpusim run --stats FILE): every statistic of the module tree
// (sim/kernel/stats.hpp), named as the tree, with the units and meanings of its kinds; as gem5's
// stats.txt and SST's statistics outputs are, but one JSON document (docs/systemc.md).
#include <nlohmann/json.hpp>
#include <string>

#include "sim/run/simulation.hpp"

namespace tpusim::cli {

/// {"schema_version", "study", "simulation", "stats": {name: value}, "descriptions": {kind:
/// {"unit", "description"}}}.
nlohmann::json stats_json(const std::string& study, const SimReport& report);
/// Writes stats_json to `path` (core/output_file.hpp).
void write_stats_file(const std::string& path, const std::string& study, const SimReport& report);

}  // namespace tpusim::cli
