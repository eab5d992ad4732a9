#pragma once
// The layouts `tpusim plan` searches: one axis per parallelism parameter the study's model
// reads (and the global batch when a per-chip batch range is given), each with its candidate
// values; a candidate is one combination. Plain C++, no SystemC.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/limits.hpp"

namespace tpusim::plan {

struct SpaceAxis {
  std::string path;                    ///< a study key, e.g. "parallelism.model"
  std::vector<nlohmann::json> values;  ///< candidate values, in search order
};

struct SearchSpace {
  std::vector<SpaceAxis> axes;
  std::vector<std::string> paths() const;
};

/// The default space for `base` (a resolved study) on `cores` TensorCores:
///   parallelism.model       powers of two up to min(cores, 64) if the model splits layers
///   parallelism.spatial     powers of two up to min(cores, 16) if the model splits images
/// (an axis the model does not split along is left out, not shown as 1)
///   parallelism.spatial_w   powers of two up to 16 (models that declare it; must divide spatial)
///   parallelism.bn_group_cores  0 and powers of two from 2 to 256 (models that declare it)
///   parallelism.weight_update_sharding  false, true
///   parallelism.grad_bucket_MiB  8, 32, 128
///   parallelism.grad_dtype  bf16, f32
///   hardware.megacore       true, false on a chip of several cores whose study turns megacore
///                           on (tpu_v4, tpu_v5p): one device per chip against one per core
/// Combinations the layout rules forbid are in the space; validation rejects them.
SearchSpace default_space(const Config& base, int cores);

/// Applies "--space PATH=V1,V2,..." (values as JSON, else strings): replaces the values of an
/// axis of the space (one value fixes it), or adds an axis for another key the study declares
/// (e.g. workload.rematerialize). Throws ConfigError naming --space when PATH is neither, or a
/// value list is empty.
void override_axis(SearchSpace& space, const std::string& assignment, const Config& base);
/// override_axis for every --space option; an axis given twice is a ConfigError naming it.
void override_axes(SearchSpace& space, const std::vector<std::string>& assignments,
                   const Config& base);

/// Adds (or replaces) the axis workload.global_batch with chips x b for b = lo, 2 lo, 4 lo, ...
/// up to hi ("--batch-per-chip LO:HI"). Throws ConfigError naming --batch-per-chip.
void set_batch_per_chip(SearchSpace& space, const std::string& range, long long chips);

/// One point of the space: values aligned with SearchSpace::axes, and the study to run.
struct Candidate {
  std::vector<nlohmann::json> values;
  nlohmann::json study;  ///< base with the values set (not yet validated)
};

/// Every combination, the first axis outermost. Throws ConfigError, before anything is allocated,
/// if there would be more than `max_candidates` (kMaxPlanLayouts: a space that large is a mistake,
/// not a search).
std::vector<Candidate> enumerate(const SearchSpace& space, const nlohmann::json& base,
                                 std::size_t max_candidates = kMaxPlanLayouts);

/// The values of `study` along the axes of `space` (the study's own layout as a candidate).
Candidate candidate_of(const SearchSpace& space, const nlohmann::json& study);

/// "model=4 spatial=1 wus=on bucket=32 f32": a short label for a candidate.
std::string candidate_label(const SearchSpace& space, const std::vector<nlohmann::json>& values);

}  // namespace tpusim::plan
