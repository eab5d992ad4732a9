// tpusim train STUDY.json: time to train. Simulates one device loop (a few training steps, a few
// eval steps, the first training step of the next loop) with the hosts feeding every core, then
// composes the whole run from it (models/train_schedule.hpp). docs/train.md.
#include <CLI/CLI.hpp>
#include <memory>

#include "tools/cli/commands.hpp"
#include "tools/run/train_run.hpp"

namespace tpusim::cli {
namespace {

const CommandRegistrar kTrainRegister{[](CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  auto* cmd = app.add_subcommand(
      "train", "Predict the time to train of a study: device loops, hosts and evaluation");
  cmd->add_option("study", a->study, "study JSON file (with its train.* facts)")->required();
  cmd->add_option("--set", a->sets,
                  "override a parameter: path.to.key=value (value as JSON, else a string)");
  cmd->add_flag("--json", a->json, "print the report as one JSON object");
  cmd->add_option("--timeline", a->timeline,
                  "write a Chrome trace of the whole run (the simulated steps on the chips' "
                  "tracks, each device loop as one span, the host evaluation on a host track); "
                  ".gz compresses it");
  cmd->callback([a] { run_train(*a); });
}};

}  // namespace
}  // namespace tpusim::cli
