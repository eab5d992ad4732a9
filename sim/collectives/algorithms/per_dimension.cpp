// Per-dimension collectives: reduce-scatter dimension by dimension (the on-chip step between the
// cores of a chip first, then the grid dimensions), then all-gather back in reverse order.
// Along a dimension the group forms independent rings. A dimension the group spans completely
// and that wraps is a torus ring: neighbours are one hop apart and data goes both ways. Any
// other dimension (an open line, or part of a ring) is walked in "snake" order (even positions
// out, odd positions back), which keeps every hop at most two links and uses each direction of
// each link once per step; data goes one way round that ring.
// Order: the on-chip step, then torus dimensions, then the others, larger extents first: the
// first phases carry the most data, so they go where bandwidth per core is highest.
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
    };
    std::vector<DimInfo> dims;
    for (int d = 0; d < static_cast<int>(shape.values.size()); ++d) {
      const int extent = static_cast<int>(shape.values[d].size());
      if (extent < 2) continue;
      if (onchip_only_ && d > 0)
        throw ConfigError("collectives.algorithm",
                          "onchip serves only groups inside one chip; this group spans chips");
      const bool torus = d > 0 && m.topology().wraps(d - 1) && extent == m.topology().dim(d - 1);
      dims.push_back({d, torus, extent});
    }
    std::stable_sort(dims.begin() + (!dims.empty() && dims.front().dim == 0 ? 1 : 0), dims.end(),
                     [](const DimInfo& a, const DimInfo& b) {
                       return a.torus != b.torus ? a.torus : a.extent > b.extent;
                     });
    std::vector<DimRings> rings;
    for (const auto& info : dims)
      rings.push_back(rings_along(m, shape, group, info.dim, info.torus));
    if (rings.empty()) return GroupPlan{};
    return ring_phases(m, kind, rings);
  }

 private:
  static DimRings rings_along(const Machine& m, const GroupShape& shape,
                              const std::vector<int>& group, int dim, bool torus) {
    DimRings out;
    out.bidirectional = torus;
    for (auto& members : lines_along(m, shape, group, dim)) {
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

  bool onchip_only_;
};

const AlgorithmRegistrar kPerDim{"per_dimension", make_variant<PerDimension, false>};
const AlgorithmRegistrar kOnChip{"onchip", make_variant<PerDimension, true>};

}  // namespace
}  // namespace tpusim
