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

/// What a command builds from a study's layout, for load_study to check on a stand-in when the
/// config has problems.
enum class LayoutChecks {
  None,     ///< no layout (collective, replay, trace export), or one that is searched (plan)
  Program,  ///< the Program of workload.program (run, validate, a sweep point)
  Train,    ///< the training schedule and both Programs, training and eval (train)
};

/// Resolves presets, applies --set overrides, validates (every problem at once), checks the
/// topology's consistency. Throws ConfigError.
///
/// With `checks` other than None, a config with problems does not hide the layout's: the
/// checks run on the stand-in of check_config (the defaults in place of the values with a
/// problem), and the ConfigError lists the config problems, then the layout problems that the
/// stand-in cannot have caused. Left out: a layout problem at a path with a config problem, under
/// one or around one, or whose message names one; the training schedule's problems when a config
/// problem is in train.* or workload.global_batch; all of them when a config problem is in what
/// every layout check counts with (the topology, hardware.cores_per_chip, the parallelism
/// degrees) or in what picks the program or batch checked (workload.program,
/// workload.eval_batch), when the stand-in's hardware or topology cannot be built, or when the
/// checks fail other than with a ConfigError.
Study load_study(const nlohmann::json& doc, const std::vector<std::string>& sets,
                 const std::string& source, LayoutChecks checks = LayoutChecks::None);
Study load_study_file(const std::string& path, const std::vector<std::string>& sets,
                      LayoutChecks checks = LayoutChecks::None);

}  // namespace tpusim::cli
