// tpusim profile STUDY.json --out DIR: the op profile of a simulated step, as XProf shows one
// (per op and per layer time, FLOPs, bytes, rates and bound; a roofline; the step's breakdown).
#include <CLI/CLI.hpp>
#include <memory>

#include "tools/cli/commands.hpp"
#include "tools/run/study_run.hpp"

namespace tpusim::cli {
namespace {

const CommandRegistrar kProfileRegister{[](CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  a->profile_command = true;
  auto* cmd = app.add_subcommand(
      "profile",
      "Profile one training step: per op and per layer time, FLOPs, bytes, FLOP/s, GB/s and "
      "bound, a roofline and the step's breakdown (profile.html, profile.json)");
  cmd->add_option("study", a->study, "study JSON file")->required();
  cmd->add_option("--out", a->profile,
                  "folder for profile.html (open in a browser) and profile.json; created if "
                  "missing")
      ->required();
  cmd->add_option("--set", a->sets,
                  "override a parameter: path.to.key=value (value as JSON, else a string)");
  cmd->add_flag("--json", a->json,
                "print the profile (profile.json's content) instead of a summary");
  cmd->add_option("--top", a->top, "how many ops the summary lists by time")
      ->check(CLI::Range(0, 100000));
  cmd->add_flag("--allow-oom", a->allow_oom,
                "profile a program whose peak memory exceeds the HBM capacity instead of stopping "
                "with exit code 1");
  cmd->callback([a] { set_exit_code(run_study(*a)); });
}};

}  // namespace
}  // namespace tpusim::cli
