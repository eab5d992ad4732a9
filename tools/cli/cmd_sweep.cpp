// tpusim sweep: runs every point of a sweep file in its own process, N at a time, resumable,
// shardable, with optional regression check against a golden CSV.
#include <CLI/CLI.hpp>
#include <memory>

#include "tools/cli/cli.hpp"
#include "tools/cli/commands.hpp"
#include "tools/launch/fork_server.hpp"
#include "tools/run/sweep_run.hpp"

namespace tpusim::cli {
namespace {

const CommandRegistrar kSweepRegister{[](CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "sweep", "Run every point of a sweep file, each in its own process (see docs/studies.md)");
  auto a = std::make_shared<SweepArgs>();
  cmd->add_option("sweep", a->sweep_file, "sweep file (JSON): base study and axes")->required();
  cmd->add_option("-j,--jobs", a->jobs, "points run at the same time")->check(CLI::Range(1, 1024));
  cmd->add_option("--out", a->out_dir,
                  "output directory (default out/sweep_<name of the sweep file>)");
  cmd->add_option("--shard", a->shard, "run only shard I of N (1-based), e.g. 2/4");
  cmd->add_option("--check", a->golden, "compare step time and comm share with this golden CSV");
  cmd->add_option("--tolerance", a->tolerance, "allowed drift for --check (default 2%)");
  cmd->add_flag("--update-golden", a->update_golden, "rewrite the --check file from this run");
  cmd->add_option("--set", a->sets, "override path=value in every point's base study (repeatable)");
  cmd->callback([a] {
    const auto server = launch::ForkServer::start(&cli::main);  // while this process is small
    a->server = server.get();
    set_exit_code(run_sweep(*a));
  });
}};

}  // namespace
}  // namespace tpusim::cli
