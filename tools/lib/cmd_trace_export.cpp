// tpusim trace export TRACE --format chakra --out DIR: a trace as Chakra execution traces, one
// .et file per rank, compute durations from the measured ones or the TensorCore model.
#include <CLI/CLI.hpp>
#include <iostream>

#include "models/trace/chakra.hpp"
#include "models/trace/mesh_groups.hpp"
#include "models/trace/trace_format.hpp"
#include "sim/core/tensor_core_cost.hpp"
#include "tools/lib/commands.hpp"
#include "tools/lib/study.hpp"
#include "tools/lib/trace_command_group.hpp"
#include "tools/lib/trace_recording.hpp"

namespace tpusim::cli {
namespace {

struct ExportArgs {
  std::string trace, out, format = "chakra", prefix = "tpusim";
  std::vector<std::string> sets;
  bool standard_only = false;
};

// The hardware that times compute ops without a measured duration: the recorded study's (see
// replay), then --set. The topology is only there to make a study; it does not matter here.
HardwareSpec export_hardware(const ExportArgs& a, const nlohmann::json& recorded_on) {
  nlohmann::json doc = recorded_study_doc(recorded_on);
  doc["topology"] = "tpu_v3_2x2";
  return load_study(doc, a.sets, a.trace).hardware;
}

void run_export(const ExportArgs& a) {
  const trace::TraceFile t = trace::read_trace_file(a.trace);
  const HardwareSpec hw = export_hardware(a, t.recorded_on);
  std::vector<double> duration_ns;
  for (const Op& op : t.program.ops)
    duration_ns.push_back(op.is_collective         ? 0
                          : op.compute.measured_ns ? *op.compute.measured_ns
                                                   : compute_op_time(hw, op.compute).total.ns());
  trace::ChakraExportOptions options;
  options.prefix = a.prefix;
  options.tpusim_attributes = !a.standard_only;
  const auto s = trace::write_chakra(t.program, t.recorded_on, duration_ns, a.out, options);
  std::cout << "exported " << t.program.ops.size() << " ops (" << s.nodes_per_rank
            << " Chakra nodes per rank) for " << s.ranks << " ranks ("
            << trace::describe_mesh(t.program.mesh) << "), " << s.bytes << " bytes -> " << a.out
            << "/" << a.prefix << ".<rank>.et\n";
}

const CommandRegistrar kRegister{[](CLI::App& app) {
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
