// tpusim collective: one collective on a topology, with time, bandwidths and link use.
#include <CLI/CLI.hpp>
#include <memory>

#include "sim/collectives/collective_algorithm.hpp"
#include "tools/cli/commands.hpp"
#include "tools/run/collective_run.hpp"

namespace tpusim::cli {
namespace {

// "a, b, c": the registered names as the help writes them.
std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

const CommandRegistrar kCollectiveRegister{[](CLI::App& app) {
  auto args = std::make_shared<CollectiveArgs>();
  auto* cmd = app.add_subcommand("collective", "Simulate one collective on a topology");
  cmd->add_option("--op", args->op,
                  "all-reduce, reduce-scatter, all-gather, all-to-all, collective-permute")
      ->required();
  cmd->add_option("--bytes", args->bytes, "buffer per core, e.g. 64MiB")->required();
  cmd->add_option("--topology", args->topology,
                  "preset, shape (32x128, 128x32:wrap=0,1) or JSON file");
  cmd->add_option("--algorithm", args->algorithm,
                  "all-reduce, reduce-scatter, all-gather: auto, " + join_names(algorithm_names()) +
                      "; all-to-all: auto, " + join_names(all_to_all_names()) +
                      " (collectives.all_to_all_algorithm); collective-permute: none");
  cmd->add_option("--mesh", args->mesh,
                  "mesh axes, e.g. data=4096,model=2 (default: one axis over all cores)");
  cmd->add_option("--axes", args->axes, "the axes the collective spans (default: all)");
  cmd->add_option("--dtype", args->dtype, "bf16 or f32 (reduction cost)");
  cmd->add_option("--preset", args->preset,
                  "hardware preset, e.g. tpu_v3 (default), tpu_v5e, tpu_v7");
  cmd->add_option("--shift", args->shift,
                  "collective-permute: send to the member this many places on");
  cmd->add_option("--set", args->sets, "override a parameter: path.to.key=value");
  cmd->add_flag("--json", args->json, "print one JSON object");
  cmd->add_option("--links-csv", args->links_csv,
                  "write every link's bytes, busy time and utilisation as CSV");
  cmd->callback([args] { run_collective(*args); });
}};

}  // namespace
}  // namespace tpusim::cli
