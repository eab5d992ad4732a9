#pragma once
// A study as the commands use it: the validated config plus the typed hardware and topology.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/hardware.hpp"
#include "topologies/topology.hpp"

namespace tpusim::cli {

struct Study {
  std::string source;  ///< file name or "(command line)"
  Config config;
  HardwareSpec hardware;
  TopologySpec topology;
};

/// Resolves presets, applies --set overrides, validates (every problem at once), checks the
/// topology's consistency. Throws ConfigError.
Study load_study(const nlohmann::json& doc, const std::vector<std::string>& sets,
                 const std::string& source);
Study load_study_file(const std::string& path, const std::vector<std::string>& sets);

}  // namespace tpusim::cli
