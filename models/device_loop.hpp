#pragma once
// A device loop as one Program: steps (training and evaluation Programs of one mesh) played
// back to back, each preceded by an infeed op that dequeues the step's input batch. As in an
// XLA while loop, a step begins only when the previous one has ended: its infeed op waits for
// every collective and the last compute op of the previous step.
#include <cstdint>
#include <vector>

#include "core/units.hpp"
#include "models/program.hpp"

namespace tpusim {

struct DeviceLoop {
  Program program;
  std::vector<int> op_batch;   ///< per op: the step (batch) its infeed op dequeues, or -1
  std::vector<int> infeed_op;  ///< per step: the index of its infeed op
};

/// Concatenates `steps` in order. Every Program must have the same mesh (throws ConfigError
/// otherwise). Each infeed op takes `iteration` (a measured duration: the loop iteration's fixed
/// cost, hardware.calibration.loop_iteration_ns) once its batch is there; it does no other work.
DeviceLoop make_device_loop(const std::vector<const Program*>& steps, Duration iteration = {});

}  // namespace tpusim
