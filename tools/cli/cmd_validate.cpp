// tpusim validate STUDY.json: every check of `run` (config, layout, program, memory), no
// simulation. Exit 1 when the program does not fit the HBM, as `run` would.
#include <CLI/CLI.hpp>
#include <memory>

#include "tools/cli/commands.hpp"
#include "tools/run/validate_run.hpp"

namespace tpusim::cli {
namespace {

const CommandRegistrar kValidateRegister{[](CLI::App& app) {
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
  cmd->callback([=] { set_exit_code(validate_study(*study_path, *sets, *as_json)); });
}};

}  // namespace
}  // namespace tpusim::cli
