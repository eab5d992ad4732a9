#pragma once
// CMEM placement: a chip's common memory (TPU v4: 128 MiB shared by its two cores) holds buffers
// XLA would otherwise put in HBM; reads and writes of a buffer placed there reach no HBM.
//
// Rule (stated, not fitted): the buffers are the compute ops' outputs, each live from its
// producer to its last reader; they are taken in order of accessed bytes (written once plus every
// read) per byte held, most first, and a buffer is placed when, throughout its lifetime, it fits
// beside those already placed in the core's share of CMEM. Ties go to the earlier buffer.
#include "models/program.hpp"

namespace tpusim {

/// Places buffers in `capacity_bytes` of CMEM per core; removes their traffic from HBM (recorded
/// in Op::cmem_bytes) and their bytes from the HBM memory model.
void place_in_cmem(Program& program, double capacity_bytes);

/// As if every buffer that fits alone in `capacity_bytes` were in CMEM (a bound, not a
/// placement): no placement under the rule above moves more of any op's traffic off HBM, since it
/// places only such buffers, each wholly. Each op's HBM bytes then depend on its own operands
/// alone, so a Program built of identical layers has identical layers after it too; `tpusim
/// plan` bounds a decoder's step from its shallow Programs with it (docs/plan.md, "Memory").
void place_in_cmem_optimistic(Program& program, double capacity_bytes);

}  // namespace tpusim
