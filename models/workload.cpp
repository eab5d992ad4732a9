#include "models/workload.hpp"

#include <algorithm>
#include <optional>

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
// Added to `problems`, so that all of them are reported at once.
void check_layout(const Config& cfg, const ModelBuilder& builder, const Layout& l,
                  ProblemList& problems) {
  const std::string model = cfg.string("workload.model");
  if (l.model > 1 && !builder.supports_model_parallel())
    problems.add("parallelism.model", std::to_string(l.model) + ": " + model +
                                          " has no model-parallel split; allowed: 1");
  if (l.spatial > 1 && !builder.supports_spatial())
    problems.add("parallelism.spatial", std::to_string(l.spatial) + ": " + model +
                                            " has no spatial partitioning; allowed: 1");
  const std::int64_t batch = cfg.integer("workload.global_batch");
  if (batch % l.data != 0)
    problems.add("workload.global_batch", std::to_string(batch) +
                                              " examples do not divide over the " + l.describe() +
                                              "; allowed: a multiple of " + std::to_string(l.data));
}

void check_constraints(const OpGraph& g, const Layout& l, ProblemList& problems) {
  for (const auto& c : g.constraints()) {
    const int degree = l.degree(c.axis);
    if (degree > 1 && c.size % degree != 0)
      problems.add("parallelism." + c.axis,
                   std::to_string(degree) + " does not divide " + c.path + " = " +
                       std::to_string(c.size) + " (" + c.what + "); allowed: a divisor of " +
                       std::to_string(c.size) + " that also divides the cores, or set " + c.path +
                       " to a multiple of " + std::to_string(degree) + " (padding)");
  }
}

}  // namespace

std::vector<MeshAxis> workload_mesh_axes(const Config& cfg, const Topology& topology,
                                         const HardwareSpec& hw) {
  return read_layout(cfg, num_cores(topology, hw)).mesh_axes();
}

Program build_program(const Config& cfg, const Topology& topology, const HardwareSpec& hw) {
  const Layout layout = read_layout(cfg, num_cores(topology, hw));
  const auto builder = model_builder_for(cfg);
  ProblemList problems;
  check_layout(cfg, *builder, layout, problems);
  // The graph of one replica is built even if the batch does not divide (its share rounded up),
  // so that the layout's dimension constraints are reported together with the batch.
  const std::int64_t batch = cfg.integer("workload.global_batch");
  const std::int64_t replica_batch =
      std::max<std::int64_t>(1, (batch + layout.data - 1) / layout.data);
  if (layout.model > 1 && !builder->supports_model_parallel()) problems.throw_if_any();
  if (layout.spatial > 1 && !builder->supports_spatial()) problems.throw_if_any();
  std::optional<OpGraph> graph;
  try {
    graph.emplace(builder->build(cfg, replica_batch));
  } catch (const ConfigError& e) {
    for (const auto& p : e.problems()) problems.add(p.where, p.what);
  }
  if (graph) check_constraints(*graph, layout, problems);
  problems.throw_if_any();
  Program program = partition(*graph, layout);
  program.model = cfg.string("workload.model");
  program.validate();
  return program;
}

}  // namespace tpusim
