#include "sim/core/tensor_core_cost.hpp"

#include <algorithm>
#include <cmath>

#include "core/errors.hpp"

namespace tpusim {
namespace {
double ceil_div(double a, double b) { return std::ceil(a / b); }
}  // namespace

double mxu_rate(const MxuSpec& mxu, DType d) {
  if (!is_8bit(d)) return 1;
  const bool int8 = d == DType::I8;
  const double rate = int8 ? mxu.int8_rate : mxu.fp8_rate;
  if (rate <= 0)
    throw ConfigError(int8 ? "hardware.mxu.int8_rate" : "hardware.mxu.fp8_rate",
                      std::string("is 0 (the chip has no published ") + to_string(d) +
                          " rate) but the program has " + to_string(d) +
                          " matmuls; allowed: a rate above 0, or bf16 matmuls");
  return rate;
}

int mxu_rows_per_pass(const MxuSpec& mxu, DType d) {
  return std::max(1, static_cast<int>(std::lround(mxu.rows_per_pass * mxu_rate(mxu, d))));
}

MxuCycles mxu_cycle_terms(const MxuSpec& mxu, const MatmulShape& s, DType d) {
  if (s.batch <= 0 || s.m <= 0 || s.k <= 0 || s.n <= 0) return {};
  const double tiles =
      static_cast<double>(s.batch) * ceil_div(s.k, mxu.dim) * ceil_div(s.n, mxu.dim);
  const double pass_cycles = ceil_div(s.m, mxu_rows_per_pass(mxu, d)) * mxu.pass_cycles;
  const double per_tile = std::max(pass_cycles, static_cast<double>(mxu.weight_load_cycles));
  return {ceil_div(tiles, mxu.count) * per_tile, static_cast<double>(mxu.fill_drain_cycles)};
}

double mxu_cycles(const MxuSpec& mxu, const MatmulShape& s, DType d) {
  const MxuCycles c = mxu_cycle_terms(mxu, s, d);
  return c.tiles + c.fill_drain;
}

double vpu_cycles(const HardwareSpec& hw, double elements, double ops_per_element) {
  if (elements <= 0) return 0;
  return ceil_div(elements, static_cast<double>(hw.vpu_lanes) * hw.vpu_sublanes) * ops_per_element;
}

Duration hbm_time(const HardwareSpec& hw, double bytes) {
  if (bytes <= 0) return Duration{};
  return hw.hbm_latency + (hw.hbm_bandwidth_per_core * hw.hbm_efficiency).time_for(bytes);
}

OpTiming compute_op_time(const HardwareSpec& hw, const ComputeCost& c) {
  OpTiming t;
  if (c.matmul) {
    const MxuCycles m = mxu_cycle_terms(hw.mxu, *c.matmul, c.mxu_dtype);
    t.mxu = hw.cycles((m.tiles + m.fill_drain) / hw.mxu_efficiency);
    t.mxu_fill_drain = hw.cycles(m.fill_drain / hw.mxu_efficiency);
    // The first block of operands arrives before the first tile, the last block of results
    // leaves after the last; the HBM bytes between overlap the MXUs.
    const Bandwidth bw = hw.hbm_bandwidth_per_core * hw.hbm_efficiency;
    const double exposed = std::min(c.bytes_read, hw.exposed_block_bytes) +
                           std::min(c.bytes_written, hw.exposed_block_bytes);
    if (exposed > 0 && t.mxu > Duration{}) t.pipeline = bw.time_for(exposed);
  }
  t.vpu = hw.cycles(vpu_cycles(hw, c.vpu_elements, c.vpu_ops_per_element));
  t.hbm = hbm_time(hw, c.bytes_read + c.bytes_written);
  t.launch = hw.op_overhead;
  t.total = max(max(t.mxu, t.vpu), t.hbm) + t.fixed();
  return t;
}

OpDemand op_demand(const HardwareSpec& hw, const ComputeCost& cost, Duration natural) {
  const OpTiming t = compute_op_time(hw, cost);
  OpDemand d{t.mxu, t.vpu, Duration{}, Duration{}};
  if (t.hbm > Duration{}) {
    d.hbm = t.hbm - hw.hbm_latency;
    d.hbm_latency = hw.hbm_latency;
  }
  const Duration longest = t.total - t.fixed();
  if (natural >= t.total || longest <= Duration{}) return d;
  const Duration room = natural - t.fixed();
  return room > Duration{} ? d * (room.seconds() / longest.seconds()) : OpDemand{};
}

}  // namespace tpusim
