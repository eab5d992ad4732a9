#pragma once
// `tpusim trace ...`: the parent of the trace subcommands. Each subcommand's file adds itself
// under it; whichever registers first creates the group (static registration order is unknown).
#include <CLI/CLI.hpp>

namespace tpusim::cli {

inline CLI::App* trace_command_group(CLI::App& app) {
  auto found = app.get_subcommands([](CLI::App* sub) { return sub->get_name() == "trace"; });
  if (!found.empty()) return found.front();
  CLI::App* trace =
      app.add_subcommand("trace", "Import, inspect and rescale traces (recorded SPMD programs)");
  trace->require_subcommand(1);
  return trace;
}

}  // namespace tpusim::cli
