#pragma once
// What the hosts feed per model: the preprocessing rate of one host and the infeed bytes of one
// example (workload.host_examples_per_s, workload.infeed_bytes_per_example; declared with their
// sources or assumptions in models/input_pipeline.cpp, explained in docs/train.md).
#include "core/config.hpp"

namespace tpusim {

struct InputPipeline {
  double examples_per_s_per_host = 0;
  double bytes_per_example = 0;
};

InputPipeline read_input_pipeline(const Config& cfg);

}  // namespace tpusim
