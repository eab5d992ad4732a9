// All-to-all: the registry of its algorithms (sim/collectives/algorithms/all_to_all_*.cpp) and
// the exchange they are built of: every member's buffer is cut into one piece per member, and the
// pieces travel at once, routed in dimension order, so they contend for links. On a ring of n
// chips the busiest link then carries (S/n) x (1 + 2 + ... + n/2) bytes, against the bisection
// bound n S / 8 per direction (see docs/network.md).
#include "core/errors.hpp"
#include "core/limits.hpp"
#include "core/registry.hpp"
#include "sim/collectives/collective_algorithm.hpp"
#include "sim/machine/machine.hpp"

namespace tpusim {
namespace {
Registry<AllToAllFactory>& all_to_all_registry() {
  static Registry<AllToAllFactory> r{"all-to-all algorithm"};
  return r;
}
}  // namespace

AllToAllRegistrar::AllToAllRegistrar(const char* name, AllToAllFactory make) {
  all_to_all_registry().add(name, make);
}

std::unique_ptr<AllToAllAlgorithm> make_all_to_all(const std::string& name) {
  const AllToAllFactory* make = all_to_all_registry().find(name);
  if (!make)
    throw ConfigError("collectives.all_to_all_algorithm", "unknown all-to-all algorithm '" + name +
                                                              "'; allowed: auto, " +
                                                              all_to_all_registry().names_text());
  return (*make)();
}

std::vector<std::string> all_to_all_names() { return all_to_all_registry().names(); }

Ring all_pairs_exchange(const Machine& m, const std::vector<int>& members) {
  const std::size_t n = members.size();
  const double transfers = static_cast<double>(n) * static_cast<double>(n - 1);
  if (transfers > static_cast<double>(kMaxCollectiveTransfers))
    throw ConfigError(
        "all-to-all",
        "over " + std::to_string(n) + " cores it is " +
            std::to_string(static_cast<std::int64_t>(transfers)) + " point-to-point transfers, " +
            past_limit(static_cast<double>(kMaxCollectiveTransfers), "transfers",
                       "kMaxCollectiveTransfers") +
            "; use collectives.all_to_all_algorithm=per_dimension or a smaller group");
  std::vector<std::vector<int>> partners(n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 1; j < n; ++j) partners[i].push_back(static_cast<int>((i + j) % n));
  return make_exchange(m, members, partners);
}

PlanPhase exchange_phase(double fraction) {
  PlanPhase p;
  p.kind = StepKind::Exchange;
  p.steps = 1;
  p.step_fraction = fraction;
  return p;
}

double all_to_all_transfers(const Machine& m, const std::vector<int>& group,
                            const std::string& algorithm) {
  if (group.size() < 2) return 0;
  return make_all_to_all(algorithm)->transfers(m, group);
}

GroupPlan all_to_all_plan(const Machine& m, const std::vector<int>& group,
                          const std::string& algorithm) {
  if (group.size() < 2) return GroupPlan{};
  return make_all_to_all(algorithm)->plan(m, group);
}

}  // namespace tpusim
