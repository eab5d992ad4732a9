// tpusim validate STUDY.json: every check of `run` (config, layout, program, memory), no
// simulation. Exit 1 when the program does not fit the HBM, as `run` would.
#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "models/workload.hpp"
#include "tools/lib/commands.hpp"
#include "tools/lib/memory_report.hpp"
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
                "ops, collectives, fits_memory, memory, config)");
  cmd->callback([=] {
    Study study = load_study_file(*study_path, *sets, LayoutChecks::Program);
    Topology topology(study.topology);
    Program program = build_program(study.config, topology, study.hardware);
    const TimedMemory memory = analyze_timed(program, study.hardware.hbm_bytes_per_core);
    const bool fits = memory.profile.fits();
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
          {"fits_memory", fits},
          {"memory", memory_json(memory.profile, memory.seconds)},
          {"config", study.config.json()}};
      std::cout << out.dump(2) << "\n";
    } else {
      std::cout << (fits ? "ok: " : "out of memory: ") << *study_path << ": " << program.model
                << " on " << topology.describe() << ", " << layout_string(program, study.config)
                << ", " << program.ops.size() << " ops (" << program.num_collectives()
                << " collectives)\n";
      print_memory(std::cout, memory_json(memory.profile, memory.seconds));
    }
    if (!fits) {
      std::cerr << "tpusim: out of memory: " << describe_oom(memory.profile) << "\n";
      set_exit_code(1);
    }
  });
}};

}  // namespace
}  // namespace tpusim::cli
