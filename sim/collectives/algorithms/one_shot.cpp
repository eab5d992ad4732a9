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
    const std::size_t n = checked_size(group);
    std::vector<std::vector<int>> partners(n);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        if (j != i) partners[i].push_back(static_cast<int>(j));
    PlanPhase p = step(kind, n);
    p.rings.push_back(make_exchange(m, group, partners));
    GroupPlan plan;
    if (n > 1) plan.phases.push_back(std::move(p));
    return plan;
  }

  /// The one step, over at least one ICI link if the group spans chips.
  GroupPlan bound_plan(const Machine& m, CollectiveKind kind,
                       const std::vector<int>& group) const override {
    const std::size_t n = checked_size(group);
    PlanPhase p = step(kind, n);
    const LinkFloor f = link_floor(m.hardware(), spans_chips(m, group));
    p.link_s_per_byte = f.s_per_byte;
    p.path_latency = f.latency;
    GroupPlan plan;
    if (n > 1) plan.phases.push_back(std::move(p));
    return plan;
  }

 private:
  static std::size_t checked_size(const std::vector<int>& group) {
    const std::size_t n = group.size();
    if (n > kMaxMembers)
      throw ConfigError("collectives.algorithm", "one_shot serves groups of at most " +
                                                     std::to_string(kMaxMembers) +
                                                     " members; this one has " + std::to_string(n));
    return n;
  }

  static PlanPhase step(CollectiveKind kind, std::size_t n) {
    PlanPhase p;
    p.steps = 1;
    p.kind = kind == CollectiveKind::AllGather ? StepKind::AllGather : StepKind::ReduceScatter;
    p.step_fraction = kind == CollectiveKind::AllReduce ? 1.0 : 1.0 / static_cast<double>(n);
    p.reduce_pieces = static_cast<double>(n - 1);
    return p;
  }
};

const AlgorithmRegistrar kOneShot{"one_shot", []() -> std::unique_ptr<CollectiveAlgorithm> {
                                    return std::make_unique<OneShot>();
                                  }};

}  // namespace
}  // namespace tpusim
