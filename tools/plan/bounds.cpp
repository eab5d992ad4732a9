#include "tools/plan/bounds.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>

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

// Outside the anonymous namespace: GroupReachCache's entries (declared in the header) hold it.
/// Where a collective's groups reach: a bit per torus dimension along which members differ, and
/// bit num_dims for members on different cores of a chip; the smallest group.
struct Reach {
  unsigned dims = 0;
  double members = 0;
  /// Chips the first group spans if it holds the same number of cores on each, else 0: what
  /// the chip-level least time needs (critical_path_ns; any one group's least time bounds the
  /// collective's).
  double chips = 0;
  double cores_per_chip = 0;  ///< the first group's cores on each of its chips
  /// The fewest ICI links into one of the first group's chips that a route from another member
  /// can arrive on (in_links_of); -1 where routes need not be shortest (a twisted torus, failed
  /// links) or links do not queue (network.contention off): then 2 for every torus dimension
  /// the groups span.
  double in_links = -1;
  bool counted = true;  ///< false: across slices (the data-center network), counted as nothing
};

namespace {

/// Chips `g` spans if it holds the same number of cores on each, else 0.
double uniform_chips(const std::vector<int>& g, int dpc) {
  std::map<int, int> per_chip;
  for (int core : g) ++per_chip[core / dpc];
  for (const auto& [chip, n] : per_chip)
    if (n != per_chip.begin()->second) return 0;
  return static_cast<double>(per_chip.size());
}

/// The fewest ICI links into one of `g`'s chips that a shortest route from another member can
/// arrive on. Along a torus dimension a route arrives from the side it travels from (the signed
/// shortest offset, Topology::offset), so a member at the end of a run of chips that does not
/// close the ring (two chips of an 8-chip ring; any run on a grid without wrap) receives along
/// it over one link, not two. Counting, per dimension, every side from which any member's
/// coordinate is reached (whatever the order of the dimensions in the route) counts at least
/// the links the routes use.
double in_links_of(const std::vector<int>& g, const Topology& topology, int dpc) {
  const int nd = topology.num_dims();
  std::vector<std::vector<int>> sides(static_cast<std::size_t>(nd));  // per dim, per coordinate
  std::vector<int> coords;
  for (int d = 0; d < nd; ++d) {
    coords.clear();
    for (int core : g) coords.push_back(topology.coord(core / dpc, d));
    std::sort(coords.begin(), coords.end());
    coords.erase(std::unique(coords.begin(), coords.end()), coords.end());
    auto& s = sides[static_cast<std::size_t>(d)];
    s.assign(static_cast<std::size_t>(topology.dim(d)), 0);
    for (int x : coords) {
      bool from_minus = false, from_plus = false;
      for (int y : coords) {
        const int off = topology.offset(y, x, d);
        from_minus = from_minus || off > 0;
        from_plus = from_plus || off < 0;
      }
      s[static_cast<std::size_t>(x)] = (from_minus ? 1 : 0) + (from_plus ? 1 : 0);
    }
  }
  int fewest = -1;
  for (int core : g) {
    int n = 0;
    for (int d = 0; d < nd; ++d)
      n += sides[static_cast<std::size_t>(d)]
                [static_cast<std::size_t>(topology.coord(core / dpc, d))];
    fewest = fewest < 0 ? n : std::min(fewest, n);
  }
  return std::max(fewest, 0);
}

Reach reach_of(const std::vector<std::vector<int>>& groups, const Topology& topology, int dpc,
               bool queued_shortest_routes) {
  Reach r;
  const int nd = topology.num_dims();
  r.members = groups.empty() ? 0 : static_cast<double>(groups.front().size());
  r.chips = groups.empty() ? 0 : uniform_chips(groups.front(), dpc);
  if (r.chips > 0) r.cores_per_chip = static_cast<double>(groups.front().size()) / r.chips;
  for (const auto& g : groups) {
    r.members = std::min(r.members, static_cast<double>(g.size()));
    for (int core : g) {
      const int chip = core / dpc, first = g.front() / dpc;
      if (chip >= topology.num_chips() || first >= topology.num_chips()) {
        r.counted = false;
        return r;
      }
      for (int d = 0; d < nd; ++d)
        if (topology.coord(chip, d) != topology.coord(first, d)) r.dims |= 1u << d;
      if (core % dpc != g.front() % dpc) r.dims |= 1u << nd;
    }
  }
  // A twisted torus's wrap links land shifted: its routes may use any dimension.
  if (topology.twisted_dim() >= 0 && (r.dims & ((1u << nd) - 1)) != 0) r.dims |= (1u << nd) - 1;
  if (queued_shortest_routes && topology.twisted_dim() < 0 && !groups.empty())
    r.in_links = in_links_of(groups.front(), topology, dpc);
  return r;
}

/// Bytes per second into one core (`per_core`) or one chip over the links along `dims`.
double link_capacity(unsigned dims, const Topology& topology, const HardwareSpec& hw,
                     bool per_core) {
  const int nd = topology.num_dims(), dpc = hw.devices_per_chip;
  double c = 0;
  for (int d = 0; d < nd; ++d)
    if (dims & (1u << d)) c += 2 * hw.ici_bandwidth.bytes_per_s();  // one link from each side
  if (dims & (1u << nd)) c += (per_core ? 1 : dpc) * (dpc - 1) * hw.onchip_bandwidth.bytes_per_s();
  return c;
}

/// Bytes per second into a core of the group (`per_core`) or its chip over the links its routes
/// can use: link_capacity of the dimensions it spans, or, where routes are shortest, the ICI
/// links into its chip with the fewest (Reach::in_links) and the on-chip path.
double group_capacity(const Reach& r, const Topology& topology, const HardwareSpec& hw,
                      bool per_core) {
  const unsigned torus = r.dims & ((1u << topology.num_dims()) - 1);
  if (r.in_links < 0) return link_capacity(per_core ? r.dims : torus, topology, hw, per_core);
  const double onchip = link_capacity(per_core ? r.dims & ~torus : 0, topology, hw, true);
  return r.in_links * hw.ici_bandwidth.bytes_per_s() + onchip;
}

/// Bytes a member receives of collective `c` over groups of `p`: {each member's least under
/// every algorithm tpusim simulates, the members' average under any} (bounds.hpp).
std::pair<double, double> received(const CollectiveSpec& c, double p) {
  if (p < 2) return {0, 0};
  const double s = c.bytes, others = (p - 1) / p * s;
  switch (c.kind) {
    case CollectiveKind::AllReduce:
      return {2 * others, 2 * others};
    case CollectiveKind::ReduceScatter:
      return {others, others};
    case CollectiveKind::AllGather:
    case CollectiveKind::AllToAll:
      return {others, others};
    case CollectiveKind::CollectivePermute: {
      const double k = std::min<double>(std::abs(c.shift), p);
      if (k == 0 || (c.wrap && static_cast<long long>(k) % static_cast<long long>(p) == 0))
        return {0, 0};
      return {c.wrap ? s : 0, c.wrap ? s : (p - k) / p * s};
    }
  }
  return {0, 0};
}

/// Bytes a chip must take in (or send out) over its ICI links for collective `c` over groups of
/// `g` cores on each of `chips` chips (bounds.hpp, "Critical path"): all-reduce 2 (P-1)/P S,
/// reduce-scatter and all-gather (P-1)/P S, all-to-all g (P-1)/P S, with P the chips; a permute
/// nothing.
double chip_received(const CollectiveSpec& c, double g, double chips) {
  if (chips < 2) return 0;
  const double s = c.bytes, others = (chips - 1) / chips * s;
  switch (c.kind) {
    case CollectiveKind::AllReduce:
      return 2 * others;
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::AllGather:
      return others;
    case CollectiveKind::AllToAll:
      return g * others;
    case CollectiveKind::CollectivePermute:
      return 0;
  }
  return 0;
}

/// The mesh axes that stay inside a slice on a multislice topology (layout.hpp: data, and fsdp
/// or pipeline where the study says so, span the slices).
bool inside_slice(const std::vector<std::string>& axes) {
  for (const auto& a : axes)
    if (a != "model" && a != "model2" && a != "sequence" && a != "spatial") return false;
  return !axes.empty();
}

/// Per collective op: where its groups reach (bisection shares alongside), found once per set
/// of axes.
struct CollectiveGeometry {
  std::vector<Reach> reach;  ///< per op (collectives only)
  std::vector<CutShares> cut;
};

}  // namespace

struct GroupReachCache::Entries {
  std::map<std::vector<std::string>, std::pair<Reach, CutShares>> by_axes;
};
GroupReachCache::GroupReachCache() : entries(std::make_unique<Entries>()) {}
GroupReachCache::~GroupReachCache() = default;

namespace {

CollectiveGeometry geometry(const Program& program, const Topology& topology,
                            const HardwareSpec& hw, GroupReachCache* cache,
                            bool queued_shortest_routes) {
  CollectiveGeometry g;
  g.reach.resize(program.ops.size());
  g.cut.resize(program.ops.size());
  // Placed only when a set of axes is not in the cache.
  std::optional<DeviceMesh> mesh;
  std::vector<int> placed;  // as the simulation places the mesh
  const Cut cut(topology, hw.devices_per_chip);
  GroupReachCache own;
  auto& by_axes = (cache ? cache : &own)->entries->by_axes;
  const bool multislice = topology.slices() > 1;
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    if (!op.is_collective) continue;
    const CollectiveSpec& c = op.collective;
    std::pair<Reach, CutShares> rc;
    if (!c.replica_groups.empty()) {
      rc = {reach_of(c.replica_groups, topology, hw.devices_per_chip, queued_shortest_routes),
            cut.shares(c.replica_groups)};
      rc.first.counted = rc.first.counted && !multislice;
    } else {
      auto it = by_axes.find(c.axes);
      if (it == by_axes.end()) {
        if (!mesh) {
          mesh.emplace(topology, hw.devices_per_chip, program.mesh);
          placed = placed_cores(*mesh, topology);
        }
        const auto groups = placed_groups(*mesh, placed, c.axes);
        Reach r = reach_of(groups, topology, hw.devices_per_chip, queued_shortest_routes);
        r.counted = r.counted && (!multislice || inside_slice(c.axes));
        it = by_axes.emplace(c.axes, std::pair{r, cut.shares(groups)}).first;
      }
      rc = it->second;
    }
    g.reach[i] = rc.first;
    g.cut[i] = rc.second;
  }
  return g;
}

/// The ops in program order, compute ops one at a time, each collective at its members' least
/// time (bounds.hpp, "Critical path"); in ns.
double critical_path_ns(const Program& program, const std::vector<double>& compute_ns,
                        const CollectiveGeometry& g, const Topology& topology,
                        const HardwareSpec& hw) {
  std::vector<double> finish(program.ops.size(), 0.0);
  double core = 0, last = 0;
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    double ready = 0;
    for (int d : op.deps) ready = std::max(ready, finish[d]);
    const double start = std::max(core, ready);
    if (!op.is_collective) {
      core = finish[i] = start + compute_ns[i];
      continue;
    }
    double least = 0;
    const Reach& r = g.reach[i];
    const double cap = group_capacity(r, topology, hw, true);
    if (r.counted && cap > 0) least = received(op.collective, r.members).first / cap * 1e9;
    // The chip's cores share its ICI links: what the chip as a whole must take in over them.
    const double chip_cap = group_capacity(r, topology, hw, false);
    if (r.counted && chip_cap > 0)
      least =
          std::max(least, chip_received(op.collective, r.cores_per_chip, r.chips) / chip_cap * 1e9);
    finish[i] = start + least;
    last = std::max(last, finish[i]);
    // Without async collectives a core waits for each collective it issues.
    if (!hw.async_collectives) core = finish[i];
  }
  return std::max(core, last);
}

/// What a chip's cores receive over the links into it (bounds.hpp, "Ingress"); in ns.
double ingress_ns(const Program& program, const CollectiveGeometry& g, const Topology& topology,
                  const HardwareSpec& hw) {
  std::map<unsigned, double> bytes;  // per set of dimensions, what a chip receives on average
  unsigned all = 0;
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    const Reach& r = g.reach[i];
    if (!op.is_collective || !r.counted || r.dims == 0) continue;
    bytes[r.dims] += hw.devices_per_chip * received(op.collective, r.members).second;
    all |= r.dims;
  }
  double worst = 0;
  for (unsigned x = all;; x = (x - 1) & all) {  // every subset of the dimensions used
    double b = 0;
    for (const auto& [dims, v] : bytes)
      if ((dims & ~x) == 0) b += v;
    const double cap = link_capacity(x, topology, hw, false);
    if (cap > 0) worst = std::max(worst, b / cap * 1e9);
    if (x == 0) break;
  }
  return worst;
}

}  // namespace

double StepBound::step_ms() const {
  return std::max({compute_ms, bisection_ms, critical_ms, ingress_ms});
}

StepBound step_lower_bound(const Program& program, const Topology& topology, const HardwareSpec& hw,
                           GroupReachCache* reach, bool queued_shortest_routes) {
  StepBound b;
  std::vector<double> compute_ns(program.ops.size(), 0.0);
  double compute_sum = 0;
  for (std::size_t i = 0; i < program.ops.size(); ++i)
    if (!program.ops[i].is_collective)
      compute_sum += compute_ns[i] = compute_op_time(hw, program.ops[i].compute).total.ns();
  b.compute_ms = compute_sum * 1e-6;

  const CollectiveGeometry g = geometry(program, topology, hw, reach, queued_shortest_routes);
  b.critical_ms = critical_path_ns(program, compute_ns, g, topology, hw) * 1e-6;
  b.ingress_ms = ingress_ns(program, g, topology, hw) * 1e-6;
  const double cut_bytes_per_s = topology.bisection_links() * hw.ici_bandwidth.bytes_per_s();
  if (cut_bytes_per_s <= 0) return b;
  double a_to_b = 0, b_to_a = 0;
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    if (!op.is_collective) continue;
    const auto [ab, ba] = crossing_per_byte(op.collective.kind, g.cut[i]);
    a_to_b += ab * op.collective.bytes;
    b_to_a += ba * op.collective.bytes;
  }
  b.bisection_ms = std::max(a_to_b, b_to_a) / cut_bytes_per_s * 1e3;
  return b;
}

}  // namespace tpusim::plan
