#include "tools/plan/bounds.hpp"

#include <algorithm>
#include <map>

#include "sim/collectives/cost_model.hpp"
#include "sim/core/tensor_core_cost.hpp"
#include "topologies/device_mesh.hpp"
#include "topologies/mesh_placement.hpp"

namespace tpusim::plan {
namespace {

class Cut {
 public:
  Cut(const Topology& topology, int devices_per_chip) : devices_per_chip_(devices_per_chip) {
    const auto& dims = topology.spec().dims;
    dim_ = static_cast<int>(std::max_element(dims.begin(), dims.end()) - dims.begin());
    side_.resize(static_cast<std::size_t>(topology.num_chips()));
    for (int c = 0; c < topology.num_chips(); ++c)
      side_[c] = topology.coord(c, dim_) < dims[dim_] / 2;
  }
  CutShares shares(const std::vector<std::vector<int>>& groups) const {
    CutShares s;
    for (const auto& g : groups) {
      double a = 0;
      for (int core : g) a += side_[core / devices_per_chip_] ? 1 : 0;
      const double n = static_cast<double>(g.size()), b = n - a;
      if (a == 0 || b == 0) continue;
      s.straddling += 1;
      s.a_over_n += a / n;
      s.b_over_n += b / n;
      s.ab_over_n += a * b / n;
    }
    return s;
  }

 private:
  int devices_per_chip_;
  int dim_ = 0;
  std::vector<bool> side_;  ///< per chip: true on side A
};

}  // namespace

StepBound step_lower_bound(const Program& program, const Topology& topology,
                           const HardwareSpec& hw) {
  StepBound b;
  double compute_ns = 0;
  for (const Op& op : program.ops)
    if (!op.is_collective) compute_ns += compute_op_time(hw, op.compute).total.ns();
  b.compute_ms = compute_ns * 1e-6;

  const double cut_bytes_per_s = topology.bisection_links() * hw.ici_bandwidth.bytes_per_s();
  if (cut_bytes_per_s <= 0) return b;
  const DeviceMesh mesh(topology, hw.devices_per_chip, program.mesh);
  const std::vector<int> placed = placed_cores(mesh, topology);  // as the simulation places it
  const Cut cut(topology, hw.devices_per_chip);
  std::map<std::vector<std::string>, CutShares> by_axes;  // groups along the same axes repeat
  double a_to_b = 0, b_to_a = 0;
  for (const Op& op : program.ops) {
    if (!op.is_collective) continue;
    const CollectiveSpec& c = op.collective;
    CutShares s;
    if (!c.replica_groups.empty()) {
      s = cut.shares(c.replica_groups);
    } else {
      auto it = by_axes.find(c.axes);
      if (it == by_axes.end())
        it = by_axes.emplace(c.axes, cut.shares(placed_groups(mesh, placed, c.axes))).first;
      s = it->second;
    }
    const auto [ab, ba] = crossing_per_byte(c.kind, s);
    a_to_b += ab * c.bytes;
    b_to_a += ba * c.bytes;
  }
  b.bisection_ms = std::max(a_to_b, b_to_a) / cut_bytes_per_s * 1e3;
  return b;
}

}  // namespace tpusim::plan
