#pragma once
// Pipeline schedules as the SPMD stage program runs them (MaxText's pipeline is SPMD: every stage
// runs the same program in lockstep, iteration by iteration, each iteration one chunk of layers
// on one microbatch, then a collective-permute to the next stage). With p stages, m microbatches
// and v model chunks per stage there are m v + p - 1 forward and as many backward iterations;
// on each stage p - 1 of each are the bubble (no microbatch there), so the step takes
// (m v + p - 1)(t_f + t_b) / v = (m + (p - 1) / v)(t_f + t_b): GPipe and 1F1B (v = 1)
// (m + p - 1)(t_f + t_b).
//
// The schedules differ in the order of the forward and backward iterations, and so in the
// activations held: the Program is stage 0's order (the stage that holds them longest), its real
// forward units (microbatch, chunk) paired with their backward units, whose ops read their
// activations.
//  - gpipe: every forward iteration, then every backward one: m v chunk activations in flight.
//  - 1f1b (v = 1): p forwards, then one backward and one forward alternating: at most p.
//  - interleaved (v > 1): as 1f1b over the chunks, in Megatron's order (groups of p
//    microbatches chunk by chunk), warm-up (v - 1) p + 2 (p - 1) + 1 chunk units.
// The bubble iterations of stage 0 (forward at the end, backward at the start) are units
// without a microbatch: they compute and send as the others do, and keep nothing.
#include <string>
#include <vector>

namespace tpusim {

struct ScheduleUnit {
  bool forward = true;
  int iteration = 0;    ///< among the forward (backward) iterations, lockstep order
  int microbatch = -1;  ///< on stage 0; -1: a bubble iteration there
  int chunk = 0;        ///< model chunk of the stage, 0 .. v - 1
};

/// Stage 0's units for `schedule` ("gpipe", "1f1b", "interleaved") with p stages, m
/// microbatches and v chunks per stage.
std::vector<ScheduleUnit> pipeline_units(const std::string& schedule, int p, int m, int v);

/// Chunk activations of stage 0 in flight at most (forward units done whose backward is not).
int max_units_in_flight(const std::vector<ScheduleUnit>& units);

}  // namespace tpusim
