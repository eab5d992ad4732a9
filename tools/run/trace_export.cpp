#include "tools/run/trace_export.hpp"

#include <iostream>

#include "sim/core/tensor_core_cost.hpp"
#include "tools/report/trace_recording.hpp"
#include "tools/study/study.hpp"
#include "traces/chakra/chakra.hpp"
#include "traces/format/mesh_groups.hpp"
#include "traces/format/trace_format.hpp"

namespace tpusim::cli {
namespace {

// The hardware that times compute ops without a measured duration: the recorded study's (see
// replay), then --set. The topology is only there to make a study; it does not matter here.
HardwareSpec export_hardware(const ExportArgs& a, const nlohmann::json& recorded_on) {
  nlohmann::json doc = recorded_study_doc(recorded_on);
  doc["topology"] = "tpu_v3_2x2";
  return load_study(doc, a.sets, a.trace).hardware;
}

}  // namespace

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

}  // namespace tpusim::cli
