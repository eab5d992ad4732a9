#include "tools/plan/evaluate.hpp"

#include "compiler/compiler.hpp"
#include "core/errors.hpp"
#include "models/memory/memory_model.hpp"
#include "models/workload.hpp"
#include "tools/study/study.hpp"
#include "tools/sweep/expand.hpp"

namespace tpusim::cli {

CandidateCheck check_candidate(const nlohmann::json& study, OpGraphCache* graphs) {
  CandidateCheck c;
  try {
    Study s = load_study(study, {}, "(plan candidate)");
    c.resolved = s.config.json();
    const Topology topology(s.topology);
    const Program program =
        compile(build_program_of(s.config, topology, s.hardware, program_kind(s.config), graphs),
                s.hardware, compiler_options(s.config));
    const MemoryProfile memory = analyze_memory(program, s.hardware.hbm_bytes_per_core, 3);
    c.peak_bytes = memory.peak_bytes;
    c.capacity_bytes = memory.capacity_bytes;
    c.examples_per_step = static_cast<double>(program.examples_per_step);
    c.chips = topology.num_chips() * topology.slices();  // every slice's, as a run's
    c.tokens_per_step = static_cast<double>(program.examples_per_step) *
                        static_cast<double>(program.tokens_per_example);
    c.model_flops = program.model_flops;
    c.peak_flops_per_chip = s.hardware.peak_flops_per_core() * s.hardware.devices_per_chip;
    if (!memory.fits()) {
      c.rejected_class = "does not fit in HBM";
      c.reason = describe_oom(memory);
      return c;
    }
    c.bound = plan::step_lower_bound(program, topology, s.hardware);
    c.program_fingerprint = program_fingerprint(program);
  } catch (const ConfigError& e) {
    const Problem& p = e.problems().front();
    c.rejected_class = "invalid " + (p.where.empty() ? std::string("layout") : p.where);
    c.reason = p.line();
  }
  return c;
}

std::string program_fingerprint(const Program& program) {
  std::string text;
  auto num = [&](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g,", v);
    text += buf;
  };
  for (const auto& a : program.mesh) text += a.name + "=" + std::to_string(a.size) + ",";
  num(static_cast<double>(program.examples_per_step));
  for (const Op& op : program.ops) {
    text += "|" + op.kind + (op.is_collective ? "C" : "c") + to_string(op.dtype) +
            to_string(op.phase) + ",";
    for (int d : op.deps) num(d);
    if (op.is_collective) {
      const CollectiveSpec& c = op.collective;
      text += std::string(to_string(c.kind)) + to_string(c.dtype) + (c.wrap ? "w" : "o");
      num(c.bytes);
      num(c.shift);
      for (const auto& axis : c.axes) text += axis + ",";
      for (const auto& g : c.replica_groups) {
        text += "[";
        for (int m : g) num(m);
      }
      continue;
    }
    const ComputeCost& k = op.compute;
    if (k.matmul)
      for (double v :
           {double(k.matmul->batch), double(k.matmul->m), double(k.matmul->k), double(k.matmul->n)})
        num(v);
    for (double v : {k.vpu_elements, k.vpu_ops_per_element, k.bytes_read, k.bytes_written, k.flops})
      num(v);
    if (k.measured_ns) num(*k.measured_ns);
  }
  return sweep::fnv1a_hex(text);
}

void add_rejection(Rejections& r, const std::string& cls, const std::string& label,
                   const std::string& reason, std::size_t count) {
  RejectedClass& rc = r[cls];
  if (rc.count == 0) {
    rc.example = label;
    rc.reason = reason;
  }
  rc.count += count;
}

}  // namespace tpusim::cli
