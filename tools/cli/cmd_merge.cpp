// tpusim merge: joins the output directories of sweep shards into one directory and results.csv.
#include <CLI/CLI.hpp>
#include <memory>

#include "tools/cli/commands.hpp"
#include "tools/sweep/merge_shards.hpp"

namespace tpusim::cli {
namespace {

const CommandRegistrar kMergeRegister{[](CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "merge", "Join the output directories of sweep shards into one results.csv");
  auto dirs = std::make_shared<std::vector<std::string>>();
  auto out = std::make_shared<std::string>();
  cmd->add_option("dirs", *dirs, "output directories of `tpusim sweep --shard I/N`")->required();
  cmd->add_option("--out", *out, "directory for the merged sweep")->required();
  cmd->callback([dirs, out] { set_exit_code(run_merge(*dirs, *out)); });
}};

}  // namespace
}  // namespace tpusim::cli
