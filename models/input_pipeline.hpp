#pragma once
// The preprocessing rate of one host per model (workload.host_examples_per_s; declared with its
// assumption in models/input_pipeline.cpp, explained in docs/train.md). The infeed bytes of an
// example come from the model's builder (Program::infeed_bytes_per_example).
#include "core/config.hpp"

namespace tpusim {

/// Examples one host preprocesses per second, for the study's model.
double host_examples_per_s(const Config& cfg);

}  // namespace tpusim
