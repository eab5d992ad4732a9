#pragma once
// The fusion pass: XLA's main fusion kinds over the partitioned Program (docs/compiler.md).
//
// Walking the ops in program order, an op joins the open fusion of one of its producers when
//  - both may fuse (FusionRole): loop fusion of vector ops; output fusion of vector ops into the
//    MXU op (matmul, convolution) producing their input; input fusion of vector producers into an
//    MXU op (at most one MXU op per fusion); multi-output fusion of reductions (batch-norm
//    statistics and their gradient sums) with the op producing their input;
//  - it does not read a reduction of that fusion (a full reduction is complete only when the
//    fusion's pass over its input ends);
//  - the fusion's tiles still fit in VMEM (one tile of every tensor it touches, double-buffered).
// A fusion closes at every collective and infeed (never across them) and as soon as an op outside
// it reads one of its tensors (that tensor must then be in HBM, and the fused op could no longer
// run before that reader).
//
// The fused op runs where its last member ran. It reads from HBM what its members read from
// outside it, writes only the members' tensors read outside it (or by nobody: program results),
// pays one launch, and its MXU, vector and HBM time overlap as one op.
#include "models/program.hpp"

namespace tpusim {

/// The fused Program. `vmem_bytes` bounds each fusion's tiles (HardwareSpec::vmem_bytes_per_core).
/// By value: the ops that stay unfused are moved, not copied, when the caller moves `program` in.
Program fuse(Program program, double vmem_bytes);

/// Bytes of one tile (second-minor tile rows x the padded minor dimension) of `op`'s output:
/// what a fusion holds of it in VMEM at a time.
double tile_bytes(const Op& op);

}  // namespace tpusim
