#pragma once
// The pipeline's bubble in a run's report (docs/pipeline.md): the time each stage waited, from
// the simulated time of the stage program's units.
#include <iosfwd>
#include <nlohmann/json.hpp>

#include "models/program.hpp"
#include "sim/run/simulation.hpp"

namespace tpusim::cli {

/// With a pipeline (Program::pipeline.stages > 1), j["pipeline"]: stages, microbatches,
/// repeats, schedule, stage_iterations_ms (the simulated stage work of every unit: its layers'
/// ops and its permute), stage_wait_ms (per stage: that of the units that are a bubble on it),
/// stage_busy_ms (per stage: the rest, plus embedding_ms on the first stage and head_ms on the
/// last), bubble_ms (the waits' mean), bubble_fraction (of the stage iterations, to compare with
/// the closed form (p - 1) / (m v + p - 1)), bubble_share_of_step, and the bytes each core sends
/// per collective-permute.
void add_pipeline(nlohmann::json& j, const Program& program, const SimReport& r);
/// The text lines of j["pipeline"], if present.
void print_pipeline(std::ostream& out, const nlohmann::json& j);

}  // namespace tpusim::cli
