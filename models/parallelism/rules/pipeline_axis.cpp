// The pipeline axis (parallelism.pipeline; docs/pipeline.md): the decoder layers are divided into
// stages along the outermost mesh axis, contiguous or circular (parallelism.pipeline_repeats model
// chunks per stage, MaxText's num_pipeline_repeats), and the microbatches (workload.microbatches)
// flow through them by collective-permute. Weights are not replicated over the axis: each stage
// holds its own layers (the partitioner emits only stage 0's, models/parallelism/
// pipeline_schedule.hpp), and the batch is not split over it. The walk in schedule order is the
// partitioner's; this file declares the axis and its options.
#include "core/errors.hpp"
#include "core/param_handle.hpp"
#include "models/op_graph.hpp"
#include "models/parallelism/layout.hpp"
#include "models/parallelism/rules/axis_registry.hpp"

namespace tpusim {
namespace {
using T = ParamType;

// One parameter per line reads as a table.
// clang-format off
const Param<std::int64_t> kPipeline{{"parallelism.pipeline", T::Integer, "cores", 1, "pipeline stages in all (MaxText ici_pipeline_parallelism, times dcn_pipeline_parallelism with parallelism.dcn_pipeline): the outermost mesh axis, pipeline / slices of it in each slice with parallelism.dcn_pipeline; each stage holds layers / pipeline of the decoder layers, and the microbatches (workload.microbatches) flow through the stages by collective-permute; the embedding and the output head run on every stage", 1, 1 << 20}};
const Param<std::int64_t> kPipelineRepeats{{"parallelism.pipeline_repeats", T::Integer, "", 1, "model chunks per pipeline stage (MaxText num_pipeline_repeats): > 1 assigns the layers to the stages circularly, each stage holding this many non-adjacent chunks of layers / (pipeline x repeats) layers; the bubble shrinks by this factor", 1, 1024}};
const Param<std::string> kPipelineSchedule{{"parallelism.pipeline_schedule", T::String, "", "gpipe", "pipeline schedule: gpipe (every microbatch's forward, then every backward: activations of all microbatches in flight), 1f1b (one forward, one backward: at most pipeline microbatches in flight; needs pipeline_repeats = 1), interleaved (1F1B over pipeline_repeats > 1 model chunks per stage, Narayanan et al. 2021)", -kInf, kInf, {"gpipe", "1f1b", "interleaved"}}};
// clang-format on

void read_pipeline_options(const Config& cfg, Layout& l) {
  l.pipeline_repeats = static_cast<int>(kPipelineRepeats(cfg));
  l.pipeline_schedule = kPipelineSchedule(cfg);
  ProblemList problems;
  if (l.pipeline_schedule == "interleaved" && l.pipeline_repeats < 2)
    problems.add(kPipelineSchedule.path(),
                 "interleaved with parallelism.pipeline_repeats = 1: interleaving needs several "
                 "model chunks per stage; allowed: gpipe or 1f1b, or pipeline_repeats >= 2");
  if (l.pipeline_schedule == "1f1b" && l.pipeline_repeats > 1)
    problems.add(kPipelineRepeats.path(),
                 std::to_string(l.pipeline_repeats) +
                     " with parallelism.pipeline_schedule = 1f1b: 1F1B over several chunks per "
                     "stage is the interleaved schedule; allowed: 1, or pipeline_schedule = "
                     "interleaved");
  problems.throw_if_any();
}

bool has_backward(const OpGraph& g) {
  for (int v = 0; v < g.size(); ++v)
    if (g.node(v).phase == Phase::Backward) return true;
  return false;
}

// The layers must divide into pipeline x repeats equal chunks; only a training step is pipelined.
void check_pipeline(const OpGraph& g, const Layout& l, ProblemList& problems) {
  const int p = l.pipeline_stages(), v = l.pipeline_repeats, layers = g.layers();
  const std::string what = std::to_string(p) + ": ";
  if (layers == 0)
    return problems.add(kPipeline.path(),
                        what + g.model + " has no layers to divide into stages; allowed: 1");
  if (!has_backward(g))
    return problems.add(kPipeline.path(),
                        what + "only the training step is pipelined in this build; allowed: 1");
  if (layers % p != 0)
    return problems.add(kPipeline.path(), what + "does not divide the " + std::to_string(layers) +
                                              " layers of " + g.model + "; allowed: a divisor of " +
                                              std::to_string(layers));
  if (layers % (p * v) != 0)
    problems.add(kPipelineRepeats.path(),
                 std::to_string(v) + ": " + std::to_string(p) + " stages x " + std::to_string(v) +
                     " chunks do not divide the " + std::to_string(layers) +
                     " layers (no layers to spare for so many chunks); allowed: a divisor of " +
                     std::to_string(layers / p) + " (the layers of a stage)");
  if (l.pipeline_schedule == "interleaved" && g.microbatches % p != 0)
    problems.add("workload.microbatches",
                 std::to_string(g.microbatches) +
                     " with parallelism.pipeline_schedule = interleaved over " + std::to_string(p) +
                     " stages: the interleaved schedule runs groups of one microbatch per stage; "
                     "allowed: a multiple of " +
                     std::to_string(p));
}

const AxisRegistrar kPipelineAxis{{"pipeline", &kPipeline, kPlaceOutsideData, false, false,
                                   &read_pipeline_options, &check_pipeline}};

}  // namespace
}  // namespace tpusim
