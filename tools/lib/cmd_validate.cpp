// tpusim validate STUDY.json: every check of `run` (config, layout, program), no simulation.
#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "models/workload.hpp"
#include "tools/lib/commands.hpp"
#include "tools/lib/report.hpp"
#include "tools/lib/study.hpp"

namespace tpusim::cli {
namespace {

const CommandRegistrar kRegister{[](CLI::App& app) {
  auto study_path = std::make_shared<std::string>();
  auto sets = std::make_shared<std::vector<std::string>>();
  auto as_json = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("validate",
                                 "Check a study (config, layout, program) without simulating it");
  cmd->add_option("study", *study_path, "study JSON file")->required();
  cmd->add_option("--set", *sets, "override a parameter: path.to.key=value");
  cmd->add_flag("--json", *as_json,
                "print what was checked as JSON (study, model, topology, chips, cores, layout, "
                "ops, collectives, config)");
  cmd->callback([=] {
    Study study = load_study_file(*study_path, *sets);
    Topology topology(study.topology);
    Program program = build_program(study.config, topology, study.hardware);
    if (*as_json) {
      const nlohmann::json out = {
          {"study", *study_path},
          {"model", program.model},
          {"topology", topology.describe()},
          {"chips", topology.num_chips()},
          {"cores", static_cast<long long>(topology.num_chips()) * study.hardware.cores_per_chip},
          {"layout", layout_string(program, study.config)},
          {"ops", program.ops.size()},
          {"collectives", program.num_collectives()},
          {"config", study.config.json()}};
      std::cout << out.dump(2) << "\n";
      return;
    }
    std::cout << "ok: " << *study_path << ": " << program.model << " on " << topology.describe()
              << ", " << layout_string(program, study.config) << ", " << program.ops.size()
              << " ops (" << program.num_collectives() << " collectives)\n";
  });
}};

}  // namespace
}  // namespace tpusim::cli
