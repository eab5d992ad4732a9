#include "models/workload.hpp"

#include "core/errors.hpp"
#include "models/model_builder.hpp"
#include "models/parallelism/layout.hpp"
#include "models/parallelism/partitioner.hpp"

namespace tpusim {
namespace {

int num_cores(const Topology& topology, const HardwareSpec& hw) {
  return topology.num_chips() * hw.cores_per_chip;
}

// The layout errors that depend on the model: supported axes, batch and dimension divisibility.
void check_layout(const Config& cfg, const ModelBuilder& builder, const Layout& l) {
  const std::string model = cfg.string("workload.model");
  if (l.model > 1 && !builder.supports_model_parallel())
    throw ConfigError("parallelism.model", std::to_string(l.model) + ": " + model +
                                               " has no model-parallel split; allowed: 1");
  if (l.spatial > 1 && !builder.supports_spatial())
    throw ConfigError("parallelism.spatial", std::to_string(l.spatial) + ": " + model +
                                                 " has no spatial partitioning; allowed: 1");
  const std::int64_t batch = cfg.integer("workload.global_batch");
  if (batch % l.data != 0)
    throw ConfigError("workload.global_batch",
                      std::to_string(batch) + " examples do not divide over the " + l.describe() +
                          "; allowed: a multiple of " + std::to_string(l.data));
}

void check_constraints(const OpGraph& g, const Layout& l) {
  ProblemList problems;
  for (const auto& c : g.constraints()) {
    const int degree = l.degree(c.axis);
    if (degree > 1 && c.size % degree != 0)
      problems.add("parallelism." + c.axis,
                   std::to_string(degree) + " does not divide " + c.path + " = " +
                       std::to_string(c.size) + " (" + c.what + "); allowed: a divisor of " +
                       std::to_string(c.size) + " that also divides the cores, or set " + c.path +
                       " to a multiple of " + std::to_string(degree) + " (padding)");
  }
  problems.throw_if_any();
}

}  // namespace

std::vector<MeshAxis> workload_mesh_axes(const Config& cfg, const Topology& topology,
                                         const HardwareSpec& hw) {
  return read_layout(cfg, num_cores(topology, hw)).mesh_axes();
}

Program build_program(const Config& cfg, const Topology& topology, const HardwareSpec& hw) {
  const Layout layout = read_layout(cfg, num_cores(topology, hw));
  const auto builder = model_builder_for(cfg);
  check_layout(cfg, *builder, layout);
  const std::int64_t replica_batch = cfg.integer("workload.global_batch") / layout.data;
  const OpGraph graph = builder->build(cfg, replica_batch);
  check_constraints(graph, layout);
  Program program = partition(graph, layout);
  program.model = cfg.string("workload.model");
  program.validate();
  return program;
}

}  // namespace tpusim
