// tpusim trace rescale TRACE --mesh data=N --out TRACE2: the trace on another mesh.
#include <CLI/CLI.hpp>
#include <memory>

#include "tools/cli/commands.hpp"
#include "tools/cli/trace_command_group.hpp"
#include "tools/run/trace_convert.hpp"

namespace tpusim::cli {
namespace {

const CommandRegistrar kTraceRescaleRegister{[](CLI::App& app) {
  auto* cmd = trace_command_group(app)->add_subcommand(
      "rescale", "Rewrite a trace for other mesh axis sizes (collective groups follow the axes)");
  auto in = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto mesh = std::make_shared<std::string>();
  cmd->add_option("TRACE", *in, "trace file")->required();
  cmd->add_option("--mesh", *mesh, "new axis sizes, e.g. data=64 (axes not named keep their size)")
      ->required();
  cmd->add_option("--out", *out, "trace to write")->required();
  cmd->callback([=] { rescale_trace(*in, *mesh, *out); });
}};

}  // namespace
}  // namespace tpusim::cli
