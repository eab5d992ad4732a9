#include "models/device_loop.hpp"

#include "core/errors.hpp"

namespace tpusim {

DeviceLoop make_device_loop(const std::vector<const Program*>& steps, Duration iteration) {
  DeviceLoop loop;
  Program& p = loop.program;
  if (steps.empty()) return loop;
  p.model = steps.front()->model;
  p.mesh = steps.front()->mesh;
  p.examples_per_step = steps.front()->examples_per_step;
  p.infeed_bytes_per_example = steps.front()->infeed_bytes_per_example;
  std::vector<int> previous;  // what the next infeed op waits for
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const Program& s = *steps[k];
    if (s.mesh.size() != p.mesh.size())
      throw ConfigError("parallelism", "the steps of a device loop must share one mesh");
    for (std::size_t a = 0; a < s.mesh.size(); ++a)
      if (s.mesh[a].name != p.mesh[a].name || s.mesh[a].size != p.mesh[a].size)
        throw ConfigError("parallelism", "the steps of a device loop must share one mesh");
    Op infeed;
    infeed.name = "infeed." + std::to_string(k);
    infeed.kind = "infeed";
    infeed.phase = Phase::Other;
    infeed.compute.measured_ns = iteration.ns();
    infeed.deps = previous;
    const int base = static_cast<int>(p.ops.size()) + 1;
    loop.infeed_op.push_back(base - 1);
    p.ops.push_back(std::move(infeed));
    loop.op_batch.push_back(static_cast<int>(k));
    previous.clear();
    int last_compute = -1;
    for (std::size_t i = 0; i < s.ops.size(); ++i) {
      Op op = s.ops[i];
      for (int& d : op.deps) d += base;
      if (op.output.last_use >= 0) op.output.last_use += base;
      for (OpOutput& o : op.more_outputs)
        if (o.last_use >= 0) o.last_use += base;
      for (DataRead& r : op.reads) r.producer += base;
      const int index = base + static_cast<int>(i);
      if (op.is_collective)
        previous.push_back(index);
      else
        last_compute = index;
      p.ops.push_back(std::move(op));
      loop.op_batch.push_back(-1);
    }
    if (last_compute >= 0) previous.push_back(last_compute);
  }
  p.validate();
  return loop;
}

}  // namespace tpusim
