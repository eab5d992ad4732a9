// One-shot: a single step in which every member sends to every other member directly, each
// message routed in dimension order. All-reduce: each member sends its whole buffer to the n - 1
// others and sums the n - 1 it receives; reduce-scatter: each sends every other member that
// member's 1/n piece and sums n - 1 pieces; all-gather: each sends its 1/n piece to everyone.
// One latency, but (n-1) x S bytes leave each member of an all-reduce: for tiny messages in
// small groups. Plans hold n (n-1) routes, so groups are limited to kMaxMembers.
#include "core/errors.hpp"
#include "sim/collectives/collective_algorithm.hpp"
#include "sim/machine/machine.hpp"

namespace tpusim {
namespace {

constexpr std::size_t kMaxMembers = 64;

class OneShot : public CollectiveAlgorithm {
 public:
  std::string describe() const override {
    return "one-shot: every member sends to every other in one step (groups of at most 64)";
  }

  GroupPlan plan(const Machine& m, CollectiveKind kind,
                 const std::vector<int>& group) const override {
    const std::size_t n = group.size();
    if (n > kMaxMembers)
      throw ConfigError("collectives.algorithm", "one_shot serves groups of at most " +
                                                     std::to_string(kMaxMembers) +
                                                     " members; this one has " + std::to_string(n));
    std::vector<std::vector<int>> partners(n);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        if (j != i) partners[i].push_back(static_cast<int>(j));
    PlanPhase p;
    p.steps = 1;
    p.kind = kind == CollectiveKind::AllGather ? StepKind::AllGather : StepKind::ReduceScatter;
    p.step_fraction = kind == CollectiveKind::AllReduce ? 1.0 : 1.0 / static_cast<double>(n);
    p.reduce_pieces = static_cast<double>(n - 1);
    p.rings.push_back(make_exchange(m, group, partners));
    GroupPlan plan;
    if (n > 1) plan.phases.push_back(std::move(p));
    return plan;
  }

  /// One step; at best every piece leaves at once, each over its own link.
  Duration lower_bound(const Machine& m, CollectiveKind kind, const std::vector<int>& group,
                       double bytes) const override {
    const std::size_t members = group.size();
    const double piece = kind == CollectiveKind::AllReduce ? bytes : bytes / members;
    return alpha_beta_bound(m.hardware(), 1, piece);
  }
};

const AlgorithmRegistrar kOneShot{"one_shot", []() -> std::unique_ptr<CollectiveAlgorithm> {
                                    return std::make_unique<OneShot>();
                                  }};

}  // namespace
}  // namespace tpusim
