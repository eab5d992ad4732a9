// tpusim validate STUDY.json: every check of `run` (config, layout, program), no simulation.
#include <CLI/CLI.hpp>
#include <iostream>

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
  auto* cmd = app.add_subcommand("validate",
                                 "Check a study (config, layout, program) without simulating it");
  cmd->add_option("study", *study_path, "study JSON file")->required();
  cmd->add_option("--set", *sets, "override a parameter: path.to.key=value");
  cmd->callback([=] {
    Study study = load_study_file(*study_path, *sets);
    Topology topology(study.topology);
    Program program = build_program(study.config, topology, study.hardware);
    std::cout << "ok: " << *study_path << ": " << program.model << " on " << topology.describe()
              << ", " << layout_string(program, study.config) << ", " << program.ops.size()
              << " ops (" << program.num_collectives() << " collectives)\n";
    const TimedMemory memory = analyze_timed(program, study.hardware.hbm_bytes_per_core);
    print_memory(std::cout, memory_json(memory.profile, memory.seconds));
  });
}};

}  // namespace
}  // namespace tpusim::cli
