#include "models/workload.hpp"

#include <algorithm>
#include <limits>
#include <optional>

#include "core/errors.hpp"
#include "core/param_handle.hpp"
#include "core/params.hpp"
#include "models/model_builder.hpp"
#include "models/parallelism/layout.hpp"
#include "models/parallelism/mesh_on_torus.hpp"
#include "models/parallelism/partitioner.hpp"

namespace tpusim {
namespace {
using T = ParamType;

// One parameter per line reads as a table.
// clang-format off
const Param<std::string> kWorkloadProgram{{"workload.program", T::String, "", "train", "the program tpusim run simulates: train (one training step) or eval (one evaluation step: forward and the model's on-device post-processing at workload.eval_batch)", -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity(), {"train", "eval"}}};
const Param<std::int64_t> kWorkloadMicrobatches{{"workload.microbatches", T::Integer, "", 1, "gradient accumulation: each replica runs its share of the global batch as this many forward and backward passes, summing the weight gradients in place (f32 accumulators), then syncs gradients and updates once", 1, 1 << 16}};
const Param<std::int64_t> kWorkloadEvalBatch{{"workload.eval_batch", T::Integer, "examples", 0, "examples per evaluation step over all replicas; 0: workload.global_batch", 0, 1e9}};
// clang-format on

int num_cores(const Topology& topology, const HardwareSpec& hw) {
  return topology.num_chips() * hw.devices_per_chip;
}

// The layout errors that depend on the model: supported axes, batch and dimension divisibility.
// Added to `problems`, so that all of them are reported at once.
void check_layout(const Config& cfg, const ModelBuilder& builder, const Layout& l,
                  ProblemList& problems) {
  const std::string model = kWorkloadModel(cfg);
  if (l.model > 1 && !builder.supports_model_parallel())
    problems.add("parallelism.model", std::to_string(l.model) + ": " + model +
                                          " has no model-parallel split; allowed: 1");
  if (l.spatial > 1 && !builder.supports_spatial())
    problems.add("parallelism.spatial", std::to_string(l.spatial) + ": " + model +
                                            " has no spatial partitioning; allowed: 1");
}

void check_batch(const std::string& path, std::int64_t batch, const Layout& l,
                 ProblemList& problems) {
  const std::int64_t replicas = static_cast<std::int64_t>(l.data) * l.slices;
  if (batch % replicas != 0)
    problems.add(path, std::to_string(batch) + " examples do not divide over the " + l.describe() +
                           (l.slices > 1 ? " in each of " + std::to_string(l.slices) + " slices"
                                         : std::string()) +
                           "; allowed: a multiple of " + std::to_string(replicas));
}

// Multislice: the data axis spans every slice of the topology (MaxText's dcn_data_parallelism);
// fsdp, sequence and model axes stay inside each slice (ici_*). A sharded optimizer over the data
// replicas across slices is not modelled.
void check_slices(const Layout& l, const Topology& topology, ProblemList& problems) {
  if (l.slices != topology.slices())
    problems.add("parallelism.slices",
                 std::to_string(l.slices) +
                     " is not allowed with topology.slices = " + std::to_string(topology.slices()) +
                     "; allowed: " + std::to_string(topology.slices()) +
                     " (the data axis spans every slice)");
  if (l.slices > 1 && l.weight_update_sharding)
    problems.add("parallelism.weight_update_sharding",
                 "true with parallelism.slices = " + std::to_string(l.slices) +
                     ": a sharded optimizer across slices is not modelled; allowed: false");
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

ProgramKind program_kind(const Config& cfg) {
  return kWorkloadProgram(cfg) == "eval" ? ProgramKind::Eval : ProgramKind::Train;
}

std::int64_t step_examples(const Config& cfg, ProgramKind kind) {
  const std::int64_t eval = kWorkloadEvalBatch(cfg);
  return kind == ProgramKind::Eval && eval > 0 ? eval : global_batch_param()(cfg);
}

Program build_program(const Config& cfg, const Topology& topology, const HardwareSpec& hw) {
  return build_program_of(cfg, topology, hw, program_kind(cfg));
}

Program build_program_of(const Config& cfg, const Topology& topology, const HardwareSpec& hw,
                         ProgramKind kind) {
  const Layout layout = read_layout(cfg, num_cores(topology, hw));
  const auto builder = model_builder_for(cfg);
  ProblemList problems;
  check_mesh_on_torus(layout, topology, hw.devices_per_chip, problems);
  check_layout(cfg, *builder, layout, problems);
  check_slices(layout, topology, problems);
  const bool eval = kind == ProgramKind::Eval;
  const std::int64_t batch = step_examples(cfg, kind);
  check_batch(
      eval && kWorkloadEvalBatch(cfg) > 0 ? kWorkloadEvalBatch.path() : global_batch_param().path(),
      batch, layout, problems);
  // The graph of one replica is built even if the batch does not divide (its share rounded up),
  // so that the layout's dimension constraints are reported together with the batch.
  const std::int64_t replicas = static_cast<std::int64_t>(layout.data) * layout.slices;
  const std::int64_t replica_batch = std::max<std::int64_t>(1, (batch + replicas - 1) / replicas);
  const int micro = eval ? 1 : static_cast<int>(kWorkloadMicrobatches(cfg));
  if (replica_batch % micro != 0)
    problems.add(
        kWorkloadMicrobatches.path(),
        std::to_string(micro) + " microbatches do not divide the " + std::to_string(replica_batch) +
            " examples of a replica; allowed: a divisor of " + std::to_string(replica_batch));
  const std::int64_t micro_batch = std::max<std::int64_t>(1, replica_batch / micro);
  if (layout.model > 1 && !builder->supports_model_parallel()) problems.throw_if_any();
  if (layout.spatial > 1 && !builder->supports_spatial()) problems.throw_if_any();
  std::optional<OpGraph> graph;
  try {
    if (eval) {
      graph = builder->build_eval(cfg, micro_batch);
      // The study asked for the eval step (workload.program), or tpusim train needs the model's
      // evaluation (the study did not say eval): name what the user wrote.
      if (!graph && kWorkloadProgram(cfg) == "eval")
        problems.add(kWorkloadProgram.path(), "eval: " + kWorkloadModel(cfg) +
                                                  " has no evaluation program in this build; "
                                                  "allowed: train");
      else if (!graph)
        problems.add(kWorkloadModel.path(),
                     kWorkloadModel(cfg) +
                         " has no evaluation program in this build, which tpusim train "
                         "simulates at every evaluation; allowed with train: a model that has "
                         "one (bert_large, resnet50, ssd, maskrcnn, transformer_big), or tpusim "
                         "run for its step");
    } else {
      graph.emplace(builder->build(cfg, micro_batch));
      graph->microbatches = micro;
    }
  } catch (const ConfigError& e) {
    for (const auto& p : e.problems()) problems.add(p.where, p.what);
  }
  if (graph) check_constraints(*graph, layout, problems);
  problems.throw_if_any();
  Program program = partition(*graph, layout);
  // One slice's Program; the other slices run the same on their share of the batch.
  program.examples_per_step *= layout.slices;
  program.model_flops *= layout.slices;
  program.model = kWorkloadModel(cfg);
  program.validate();
  return program;
}

}  // namespace tpusim
