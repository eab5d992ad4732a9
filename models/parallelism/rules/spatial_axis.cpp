// The spatial axis (spatial partitioning of convolutional models, models/parallelism/spatial.hpp,
// docs/cnn.md): each image is split over "spatial" along H (and W). Before a window op each core
// exchanges halos with its neighbours: per split dimension two collective-permutes (+d, -d)
// along "spatial". Statistics, pooled features and per-box losses are partial over the axis
// (OpSplit::spatial = K). Each core holds 1/spatial of every infeed image; the weights are
// replicated over the axis and their gradients summed over it.
#include "models/parallelism/rules/sharding_rule.hpp"
#include "models/parallelism/spatial.hpp"

namespace tpusim {
namespace {

class SpatialAxis final : public ShardingRule {
 public:
  bool live(const Layout& l) const override { return l.spatial > 1; }

  // The permutes wait for what the op waits for so far; the op waits for them and reads them.
  void before_op(PartitionState& s, int v, std::vector<int>& deps,
                 std::vector<int>& reads) override {
    const OpNode& n = s.graph.node(v);
    const std::vector<int> before = deps;
    for (const HaloExchange& h : halo_exchanges(n, s.layout))
      for (int sign : {+1, -1}) {
        const int p = s.emit_collective(n.name + ".halo" + h.dim + (sign > 0 ? "+1" : "-1"),
                                        CollectiveKind::CollectivePermute, n.phase,
                                        h.bytes_per_side, DType::BF16, {"spatial"}, before);
        s.program.ops[p].collective.shift = sign * h.stride;
        s.program.ops[p].output.cls = MemoryClass::Halos;
        deps.push_back(p);
        reads.push_back(p);
      }
  }

  bool partial(const OpNode& n, const Layout& l) const override {
    return n.split.spatial == SplitDim::K;
  }

  double example_divisor(const Layout& l) const override { return l.spatial; }
};

const ShardingRuleRegistrar kSpatialAxisRule{"spatial", 50,
                                             [] { return std::make_unique<SpatialAxis>(); }};

}  // namespace
}  // namespace tpusim
