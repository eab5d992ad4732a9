#pragma once
// Cycle formulas of one TensorCore: MXU matmuls, vector-unit work, HBM traffic. Plain functions
// (no SystemC) so tests, trace replay and the executor share them.
#include "core/hardware.hpp"
#include "models/program.hpp"

namespace tpusim {

/// The MXU's rate for operands of dtype `d` over its bf16 rate: hardware.mxu.int8_rate for int8,
/// fp8_rate for fp8, 1 otherwise. Throws ConfigError naming the parameter when it is 0 (the chip
/// has no published rate for that dtype).
double mxu_rate(const MxuSpec& mxu, DType d);

/// LHS rows a pass streams for operands of dtype `d`: rows_per_pass times mxu_rate, rounded.
int mxu_rows_per_pass(const MxuSpec& mxu, DType d);

/// MXU cycles of `batch` [m,k]x[k,n] products on one core: weights go in dim x dim tiles (k and
/// n padded up to dim), the LHS streams through in passes of mxu_rows_per_pass rows (m padded
/// up; int8 and fp8 operands stream more rows per pass), tiles are spread over the core's MXUs,
/// loading a tile's weights hides behind the previous tile's passes unless the passes are
/// shorter, and the pipeline fills and drains once.
double mxu_cycles(const MxuSpec& mxu, const MatmulShape& s, DType d = DType::BF16);

/// The two terms of mxu_cycles: the tiles' passes and weight loads, and the fill and drain.
struct MxuCycles {
  double tiles = 0;
  double fill_drain = 0;
};
MxuCycles mxu_cycle_terms(const MxuSpec& mxu, const MatmulShape& s, DType d = DType::BF16);

/// Vector-unit cycles: lanes x sublanes elements per cycle, `ops_per_element` ops each.
double vpu_cycles(const HardwareSpec& hw, double elements, double ops_per_element);

/// HBM time of `bytes`: one latency plus bytes over the achievable bandwidth.
Duration hbm_time(const HardwareSpec& hw, double bytes);

struct OpTiming {
  Duration mxu;             ///< tiles plus fill and drain, over the MXU efficiency
  Duration mxu_fill_drain;  ///< the fill and drain part of `mxu`
  Duration vpu;
  Duration hbm;       ///< one HBM latency plus all the op's bytes at the achievable bandwidth
  Duration launch;    ///< the op's fixed launch cost (hardware.calibration.op_overhead_ns)
  Duration pipeline;  ///< a matmul's first block loaded and last block stored, not overlapped
  Duration fixed() const { return launch + pipeline; }
  Duration total;  ///< max(max(mxu, vpu), hbm) + launch + pipeline
};

/// Time of a compute op on one core. MXU time is the cycle formula over the calibrated MXU
/// efficiency; HBM time uses the calibrated HBM efficiency. MXU and vector unit work in parallel
/// (VLIW bundles) and overlap with HBM traffic, so the op takes the largest of the three plus the
/// launch overhead; a matmul also waits for its first block of operands before its MXUs start
/// and stores its last block of results after they end (hardware.calibration.exposed_block_MiB).
OpTiming compute_op_time(const HardwareSpec& hw, const ComputeCost& cost);

/// What a compute op asks of a core's resources, uncontended. `hbm` is the busy time of its
/// bytes at the achievable bandwidth; the HBM latency comes after it and occupies nothing.
struct OpDemand {
  Duration mxu, vpu, hbm, hbm_latency;
  OpDemand operator*(double f) const { return {mxu * f, vpu * f, hbm * f, hbm_latency * f}; }
  OpDemand& operator+=(const OpDemand& o) {
    mxu += o.mxu;
    vpu += o.vpu;
    hbm += o.hbm;
    hbm_latency += o.hbm_latency;
    return *this;
  }
};

/// The demand of an op that takes `natural` uncontended: the cost model's parts, scaled down
/// when `natural` (a measured duration) is shorter than the model's, so that the largest part
/// plus the op overhead never exceeds `natural`.
OpDemand op_demand(const HardwareSpec& hw, const ComputeCost& cost, Duration natural);

}  // namespace tpusim
