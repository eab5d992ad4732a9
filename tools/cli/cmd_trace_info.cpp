// tpusim trace info TRACE: what a trace holds (ops, collectives, bytes, mesh).
#include <CLI/CLI.hpp>
#include <memory>

#include "tools/cli/commands.hpp"
#include "tools/cli/trace_command_group.hpp"
#include "tools/run/trace_convert.hpp"

namespace tpusim::cli {
namespace {

const CommandRegistrar kTraceInfoRegister{[](CLI::App& app) {
  auto* cmd = trace_command_group(app)->add_subcommand(
      "info", "Summarise a trace: ops, collectives, bytes, mesh");
  auto path = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  cmd->add_option("TRACE", *path, "trace file (.json or .json.gz)")->required();
  cmd->add_flag("--json", *as_json, "print the summary as JSON");
  cmd->callback([=] { print_trace_info(*path, *as_json); });
}};

}  // namespace
}  // namespace tpusim::cli
