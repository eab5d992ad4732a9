// tpusim trace rescale TRACE --mesh data=N --out TRACE2: the trace on another mesh.
#include <CLI/CLI.hpp>
#include <iostream>

#include "core/errors.hpp"
#include "models/trace/mesh_groups.hpp"
#include "models/trace/rescale.hpp"
#include "models/trace/trace_format.hpp"
#include "tools/lib/commands.hpp"
#include "tools/lib/trace_command_group.hpp"

namespace tpusim::cli {
namespace {

const CommandRegistrar kRegister{[](CLI::App& app) {
  auto* cmd = trace_command_group(app)->add_subcommand(
      "rescale", "Rewrite a trace for other mesh axis sizes (collective groups follow the axes)");
  auto in = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto mesh = std::make_shared<std::string>();
  cmd->add_option("TRACE", *in, "trace file")->required();
  cmd->add_option("--mesh", *mesh, "new axis sizes, e.g. data=64 (axes not named keep their size)")
      ->required();
  cmd->add_option("--out", *out, "trace to write")->required();
  cmd->callback([=] {
    trace::TraceFile t = trace::read_trace_file(*in);
    const auto axes = trace::parse_mesh_axes(*mesh, "--mesh");
    Program rescaled;
    try {
      rescaled = rescale(t.program, axes);
    } catch (const ConfigError& e) {  // name the file in front of "ops[8] (...)"
      std::vector<Problem> problems = e.problems();
      for (auto& p : problems) p.where = *in + ": " + p.where;
      throw ConfigError(problems);
    }
    nlohmann::json recorded_on =
        t.recorded_on.is_object() ? t.recorded_on : nlohmann::json::object();
    // The recorded topology no longer fits the rescaled mesh; keep where it came from instead.
    recorded_on.erase("topology");
    recorded_on["rescaled_from"] = trace::describe_mesh(t.program.mesh);
    write_trace(rescaled, *out, recorded_on);
    std::cout << "rescaled " << trace::describe_mesh(t.program.mesh) << " -> "
              << trace::describe_mesh(rescaled.mesh) << ": " << *out << "\n";
  });
}};

}  // namespace
}  // namespace tpusim::cli
