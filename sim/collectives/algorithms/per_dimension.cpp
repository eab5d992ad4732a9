// Per-dimension collectives: reduce-scatter dimension by dimension (the on-chip step between the
// cores of a chip first, then the grid dimensions), then all-gather back in reverse order.
// Along a dimension the group forms independent rings. A dimension the group spans completely
// and that wraps is a torus ring: neighbours are one hop apart and data goes both ways. Any
// other dimension (an open line, or part of a ring) is walked in "snake" order (even positions
// out, odd positions back), which keeps every hop at most two links and uses each direction of
// each link once per step; data goes one way round that ring.
// Order: the on-chip step, then torus dimensions, then the others, larger extents first: the
// first phases carry the most data, so they go where bandwidth per core is highest.
// Whether a line is a ring is read from the link graph: its members must follow each other
// along the dimension's links, the last back to the first. On a twisted torus a line along a
// k-chip dimension is not one (its wrap link lands k chips along the long dimension).
// A twisted k x k x 2k torus holding the whole group (every chip, each core index the group
// has): its chips are the group Z_2k x Z_k x Z_k, and no two of its link cycles are
// independent (k steps along any dimension reach the same chip), so the rings follow a split
// of that group instead: the long dimension's rings of 2k chips (one hop), then the rings of
// the steps +a -t and +b -t (a, b the k-chip dimensions, t the long one), k chips each, two
// hops a step. Each phase's routes cross every link direction once, as on the plain torus, so
// the phases move the same bytes per link as the plain torus's t, a, b rings.
#include <algorithm>

#include "core/errors.hpp"
#include "sim/collectives/collective_algorithm.hpp"
#include "sim/machine/machine.hpp"

namespace tpusim {
namespace {

/// describe() of per_dimension and of onchip.
const char* const kPerDimensionLines[2] = {
    "per dimension: on-chip step, then rings along each grid dimension",
    "on-chip step between the cores of one chip"};

class PerDimension : public DescribedAlgorithm {
 public:
  explicit PerDimension(bool onchip_only)
      : DescribedAlgorithm(kPerDimensionLines[onchip_only]), onchip_only_(onchip_only) {}

  GroupPlan plan(const Machine& m, CollectiveKind kind,
                 const std::vector<int>& group) const override {
    return phases(m, kind, group, true);
  }

  /// The same phases, the on-chip step over on-chip links, every other over ICI links.
  GroupPlan bound_plan(const Machine& m, CollectiveKind kind,
                       const std::vector<int>& group) const override {
    return phases(m, kind, group, false);
  }

 private:
  GroupPlan phases(const Machine& m, CollectiveKind kind, const std::vector<int>& group,
                   bool routed) const {
    const GroupShape shape = analyse_group(m, group);
    const char* who = onchip_only_ ? "onchip" : "per_dimension";
    if (!shape.is_grid)
      throw ConfigError(
          "collectives.algorithm",
          std::string(who) +
              " needs a group that is a sub-grid of the machine; use ring or bidirectional_ring");
    struct DimInfo {
      int dim;
      bool torus;
      int extent;
      std::vector<std::vector<int>> lines;  ///< lines_along the dimension, found once
    };
    std::vector<DimInfo> dims;
    bool whole = true;  // the group holds every chip
    for (int d = 0; d < static_cast<int>(shape.values.size()); ++d) {
      const int extent = static_cast<int>(shape.values[d].size());
      if (d > 0) whole = whole && extent == m.topology().dim(d - 1);
      if (extent < 2) continue;
      if (onchip_only_ && d > 0)
        throw ConfigError("collectives.algorithm",
                          "onchip serves only groups inside one chip; this group spans chips");
      // Its lines decide whether it closes rings (between chips) and are the routed plan's rings.
      std::vector<std::vector<int>> lines;
      if (d > 0 || routed) lines = lines_along(m, shape, group, d);
      const bool torus = d > 0 && closes_rings(m, lines, d - 1);
      dims.push_back({d, torus, extent, std::move(lines)});
    }
    if (whole && m.topology().twisted_dim() >= 0)
      return twisted_plan(m, kind, shape, group, routed);
    std::stable_sort(dims.begin() + (!dims.empty() && dims.front().dim == 0 ? 1 : 0), dims.end(),
                     [](const DimInfo& a, const DimInfo& b) {
                       return a.torus != b.torus ? a.torus : a.extent > b.extent;
                     });
    std::vector<DimRings> rings;
    for (auto& info : dims) {
      if (routed) {
        rings.push_back(rings_along(std::move(info.lines), info.dim, info.torus));
        continue;
      }
      rings.emplace_back();
      rings.back().rings.emplace_back(info.extent);  // only the rings' size counts
      rings.back().bidirectional = info.torus;
      with_floor(m, rings.back(), info.dim > 0);
    }
    if (rings.empty()) return GroupPlan{};
    return ring_phases(m, kind, rings, routed);
  }

  /// An unrouted dimension's bounds (ring_phases): over ICI links or on the chip.
  static void with_floor(const Machine& m, DimRings& d, bool offchip) {
    const LinkFloor f = link_floor(m.hardware(), offchip);
    d.link_s_per_byte = f.s_per_byte;
    d.path_latency = f.latency;
  }

  /// The rings along `dim` from its lines: a torus line as it is, an open line walked as a snake.
  static DimRings rings_along(std::vector<std::vector<int>> lines, int dim, bool torus) {
    DimRings out;
    out.bidirectional = torus;
    for (auto& members : lines) {
      std::vector<int> order;
      if (torus || dim == 0) {
        order = std::move(members);
      } else {
        for (std::size_t i = 0; i < members.size(); i += 2) order.push_back(members[i]);
        for (std::size_t i = members.size() - 1 - (members.size() % 2 == 0 ? 0 : 1);; i -= 2) {
          order.push_back(members[i]);
          if (i < 2) break;
        }
      }
      out.rings.push_back(std::move(order));
    }
    return out;
  }

  /// True if every line's members follow each other along `dim`'s links (+ direction), the
  /// last back to the first.
  static bool closes_rings(const Machine& m, const std::vector<std::vector<int>>& lines, int dim) {
    const Topology& topo = m.topology();
    for (const auto& line : lines) {
      if (line.size() < 3) return false;
      for (std::size_t i = 0; i < line.size(); ++i)
        if (topo.neighbor(m.chip_of(line[i]), dim, +1) != m.chip_of(line[(i + 1) % line.size()]))
          return false;
    }
    return true;
  }

  /// The rings of the cosets of one step (`step` maps a chip to the next), each `length`
  /// chips, for each core index the group has.
  template <class Step>
  static DimRings cosets(const Machine& m, const GroupShape& shape, int length, Step step) {
    const int chips = m.topology().num_chips(), cpc = m.hardware().devices_per_chip;
    DimRings out;
    out.bidirectional = true;
    std::vector<char> seen(static_cast<std::size_t>(chips), 0);
    std::vector<std::vector<int>> chip_rings;
    for (int c = 0; c < chips; ++c) {
      if (seen[c]) continue;
      chip_rings.emplace_back();
      for (int x = c, i = 0; i < length; ++i, x = step(x)) {
        seen[x] = 1;
        chip_rings.back().push_back(x);
      }
    }
    for (int core : shape.values[0])
      for (const auto& ring : chip_rings) {
        out.rings.emplace_back();
        for (int chip : ring) out.rings.back().push_back(chip * cpc + core);
      }
    return out;
  }

  /// The whole group on a twisted torus (see the top of the file).
  GroupPlan twisted_plan(const Machine& m, CollectiveKind kind, const GroupShape& shape,
                         const std::vector<int>& group, bool routed) const {
    const Topology& topo = m.topology();
    const int t = topo.twisted_dim(), k = topo.dim(t) / 2;
    std::vector<DimRings> rings;
    if (shape.values[0].size() > 1)
      rings.push_back(rings_along(lines_along(m, shape, group, 0), 0, false));
    rings.push_back(cosets(m, shape, 2 * k, [&](int c) { return topo.translate(c, t, 1); }));
    for (int d = 0; d < topo.num_dims(); ++d)
      if (d != t)
        rings.push_back(cosets(
            m, shape, k, [&, d](int c) { return topo.translate(topo.translate(c, d, 1), t, -1); }));
    if (!routed)
      for (std::size_t i = 0; i < rings.size(); ++i)
        with_floor(m, rings[i], i > 0 || shape.values[0].size() < 2);
    return ring_phases(m, kind, rings, routed);
  }

  bool onchip_only_;
};

const AlgorithmRegistrar kPerDim{"per_dimension", make_variant<PerDimension, false>};
const AlgorithmRegistrar kOnChip{"onchip", make_variant<PerDimension, true>};

}  // namespace
}  // namespace tpusim
