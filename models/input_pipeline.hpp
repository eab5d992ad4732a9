#pragma once
// The host input pipeline of a model as the operations it runs per example (JPEG decode, crop,
// resize, flip, colour jitter, normalise, anchor matching, box encoding, mask crops, record
// parsing, packing: what the MLPerf v0.7 code does), each costed by its size in that example
// (pixels, box x anchor pairs, tokens, bytes) times a per-unit CPU cost that all models share
// (hardware.host.cost.*, measured by tools/bench/host_ops.cpp). What-ifs that cache or move a step
// are workload.input.*. docs/train.md has the table of costs and sizes.
#include <string>
#include <vector>

#include "core/config.hpp"

namespace tpusim {

/// One operation of the pipeline, for one example.
struct PipelineOp {
  std::string name;       ///< "jpeg_decode"
  std::string cost_path;  ///< its per-unit cost: "hardware.host.cost.jpeg_decode_ns_per_pixel"
  std::string unit;       ///< "decoded pixels"
  double units = 0;       ///< size of the operation in one example
  double ns_per_unit = 0;
  double ns() const { return units * ns_per_unit; }  ///< CPU time on one host core
};

struct InputPipeline {
  std::vector<PipelineOp> ops;
  /// CPU time of one example on one host core, ns: the sum of its operations.
  double ns_per_example() const;
};

/// The study's model's training pipeline. `record_bytes` is the size of one example's record
/// where the pipeline parses records (the builder's infeed bytes per example: the record holds
/// the same values). A model without its own pipeline (decoder_lm) parses records only.
InputPipeline input_pipeline(const Config& cfg, double record_bytes);

}  // namespace tpusim
