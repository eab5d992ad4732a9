// tpusim trace import PROFILE --out TRACE: a TPU profile (Chrome trace events) as a trace.
#include <CLI/CLI.hpp>
#include <memory>

#include "tools/cli/commands.hpp"
#include "tools/cli/trace_command_group.hpp"
#include "tools/run/trace_convert.hpp"

namespace tpusim::cli {
namespace {

const CommandRegistrar kTraceImportRegister{[](CLI::App& app) {
  auto* cmd = trace_command_group(app)->add_subcommand(
      "import",
      "Import a TensorFlow/JAX TPU profile (Chrome trace events, .json or .json.gz) or a "
      "directory of Chakra execution traces (--format chakra) as a trace");
  auto a = std::make_shared<ImportArgs>();
  cmd->add_option("PROFILE", a->profile,
                  "profile file (trace.json or trace.json.gz), or with --format chakra the "
                  "directory of <prefix>.<rank>.et files")
      ->required();
  cmd->add_option("--format", a->format,
                  "profile: a TPU profile; chakra: Chakra execution traces, one .et per rank")
      ->check(CLI::IsMember({"profile", "chakra"}))
      ->capture_default_str();
  cmd->add_option("--out", a->out, "trace to write (.json, or .json.gz to compress)")->required();
  cmd->add_option("--sizes", a->sizes,
                  "JSON map op name -> bytes (or {bytes, dtype, axes, replica_groups, shift, "
                  "wrap}) for collectives the profile does not size");
  cmd->add_option("--mesh", a->mesh,
                  "the job's device mesh, e.g. data=8 or data=2,model=4 (default: data = TPU "
                  "devices in the profile)");
  cmd->add_option("--model", a->options.model, "model name to record")->capture_default_str();
  cmd->add_option("--examples-per-step", a->options.examples_per_step, "global batch of the step")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--device", a->options.device,
                  "TPU id whose ops form the program (default: lowest with ops)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--step", a->options.step,
                  "import only step K (0-based) of the device's \"Steps\" track")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--ops-thread", a->options.ops_thread, "device thread whose events are ops")
      ->capture_default_str();
  cmd->callback([a, cmd] {
    a->model_given = cmd->get_option("--model")->count() > 0;
    a->examples_per_step_given = cmd->get_option("--examples-per-step")->count() > 0;
    for (const char* only : {"--sizes", "--device", "--step", "--ops-thread"})
      if (cmd->get_option(only)->count() > 0) a->profile_only_given.push_back(only);
    import_trace(*a);
  });
}};

}  // namespace
}  // namespace tpusim::cli
