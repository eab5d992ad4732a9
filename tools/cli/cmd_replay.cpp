// tpusim replay TRACE: plays a recorded or imported trace on a topology and hardware and prints
// the same report as `tpusim run`. By default the trace's recorded topology and hardware.
#include <CLI/CLI.hpp>
#include <memory>

#include "tools/cli/commands.hpp"
#include "tools/run/replay_run.hpp"

namespace tpusim::cli {
namespace {

const CommandRegistrar kReplayRegister{[](CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "replay", "Replay a trace (recorded or imported) on a topology and hardware");
  auto a = std::make_shared<ReplayArgs>();
  cmd->add_option("TRACE", a->trace, "trace file (.json or .json.gz)")->required();
  cmd->add_option("--topology", a->topology,
                  "topology preset, shape (e.g. 4x4) or file; default: the recorded one");
  cmd->add_option("--mesh", a->mesh,
                  "rescale first: new mesh axis sizes, e.g. data=64 (axes not named keep theirs)");
  cmd->add_option("--set", a->sets,
                  "override a study parameter, e.g. hardware.ici.bandwidth_GBps=82");
  cmd->add_option("--durations", a->durations,
                  "for compute ops with a measured duration: use it (measured) or the hardware "
                  "model (model)")
      ->check(CLI::IsMember({"measured", "model"}))
      ->capture_default_str();
  cmd->add_flag("--json", a->json, "print the report as JSON");
  cmd->callback([a] { run_replay(*a); });
}};

}  // namespace
}  // namespace tpusim::cli
