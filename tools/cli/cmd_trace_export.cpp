// tpusim trace export TRACE --format chakra --out DIR: a trace as Chakra execution traces, one
// .et file per rank, compute durations from the measured ones or the TensorCore model.
#include <CLI/CLI.hpp>
#include <memory>

#include "tools/cli/commands.hpp"
#include "tools/cli/trace_command_group.hpp"
#include "tools/run/trace_export.hpp"

namespace tpusim::cli {
namespace {

const CommandRegistrar kTraceExportRegister{[](CLI::App& app) {
  auto* cmd = trace_command_group(app)->add_subcommand(
      "export", "Write a trace in another format: Chakra execution traces, one .et per rank");
  auto a = std::make_shared<ExportArgs>();
  cmd->add_option("TRACE", a->trace, "trace file (.json or .json.gz)")->required();
  cmd->add_option("--format", a->format, "output format")
      ->check(CLI::IsMember({"chakra"}))
      ->required();
  cmd->add_option("--out", a->out, "directory to write <prefix>.<rank>.et into")->required();
  cmd->add_option("--prefix", a->prefix, "file name prefix")->capture_default_str();
  cmd->add_flag("--standard-only", a->standard_only,
                "write only Chakra's own fields and attributes, not tpusim's exact cost model "
                "inputs (import then times compute ops by their duration_micros)");
  cmd->add_option("--set", a->sets,
                  "override a hardware parameter for the modelled durations, e.g. "
                  "hardware.clock_hz=1e9");
  cmd->callback([a] { run_export(*a); });
}};

}  // namespace
}  // namespace tpusim::cli
