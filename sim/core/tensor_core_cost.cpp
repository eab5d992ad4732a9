#include "sim/core/tensor_core_cost.hpp"

#include <algorithm>
#include <cmath>

namespace tpusim {
namespace {
double ceil_div(double a, double b) { return std::ceil(a / b); }
}  // namespace

double mxu_cycles(const MxuSpec& mxu, const MatmulShape& s) {
  if (s.batch <= 0 || s.m <= 0 || s.k <= 0 || s.n <= 0) return 0;
  const double tiles =
      static_cast<double>(s.batch) * ceil_div(s.k, mxu.dim) * ceil_div(s.n, mxu.dim);
  const double pass_cycles = ceil_div(s.m, mxu.rows_per_pass) * mxu.pass_cycles;
  const double per_tile = std::max(pass_cycles, static_cast<double>(mxu.weight_load_cycles));
  return ceil_div(tiles, mxu.count) * per_tile + mxu.fill_drain_cycles;
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
  if (c.matmul) t.mxu = hw.cycles(mxu_cycles(hw.mxu, *c.matmul) / hw.mxu_efficiency);
  t.vpu = hw.cycles(vpu_cycles(hw, c.vpu_elements, c.vpu_ops_per_element));
  t.hbm = hbm_time(hw, c.bytes_read + c.bytes_written);
  t.total = max(max(t.mxu, t.vpu), t.hbm) + hw.op_overhead;
  return t;
}

OpDemand op_demand(const HardwareSpec& hw, const ComputeCost& cost, Duration natural) {
  const OpTiming t = compute_op_time(hw, cost);
  OpDemand d{t.mxu, t.vpu, Duration{}, Duration{}};
  if (t.hbm > Duration{}) {
    d.hbm = t.hbm - hw.hbm_latency;
    d.hbm_latency = hw.hbm_latency;
  }
  const Duration longest = t.total - hw.op_overhead;
  if (natural >= t.total || longest <= Duration{}) return d;
  const Duration room = natural - hw.op_overhead;
  return room > Duration{} ? d * (room.seconds() / longest.seconds()) : OpDemand{};
}

}  // namespace tpusim
