#pragma once
// Symmetry-aware simulation (sim.symmetry): when every collective's groups and plans are
// invariant under translations of the torus, every core's timeline equals that of its image in
// a fundamental domain of those translations, and every link's load that of its image. Then
// only the domain's cores run, each collective group is played only where it has members in
// the domain, and every ring keeps only the streams its domain members send, over the domain's
// images of their links (docs/network.md, "Symmetric simulation").
#include <memory>
#include <string>
#include <vector>

#include "models/program.hpp"
#include "sim/collectives/collective_plan.hpp"

namespace tpusim {

class Machine;
class CollectivePlanner;

/// The projection of a run onto the fundamental domain.
struct SymmetricRun {
  std::vector<int> period;    ///< chips per dimension of the domain (a divisor of the dimension)
  std::vector<char> active;   ///< per core: in the domain (simulated)
  std::vector<int> link_rep;  ///< per link (Machine::links() index): its image in the domain
  std::vector<int> core_rep;  ///< per core: its image in the domain (whose timeline it has)
  int active_cores = 0;
  struct OpGroups {
    std::vector<int> active_members;  ///< per group: its members in the domain (0: not played)
    std::vector<std::unique_ptr<GroupPlan>> plans;  ///< per group: projected plan (or null)
    int played = 0;                                 ///< groups with members in the domain
  };
  std::vector<const OpGroups*> ops;  ///< per op index (null: not a collective)
  std::vector<std::unique_ptr<OpGroups>> owned;
  /// "2 of 8192 cores simulated (period 1 x 1 chips)".
  std::string describe() const;
};

struct SymmetrySearch {
  std::unique_ptr<SymmetricRun> run;  ///< null: full simulation
  std::string reason;                 ///< why not, when run is null
};

/// Finds the translations of the machine's torus that map every collective's groups and plans
/// onto themselves (the smallest period per wrapping dimension) and projects the plans onto
/// the fundamental domain. Null with a reason when no translation fits, or when the projection
/// would not be exact (a group or ring whose domain members do not stand for all its members,
/// a route crossing two images of one link off the message level, a link meeting the sends of
/// one step in another order than its image).
/// `multiple_of` (per dimension, may be empty): each period is raised to a multiple of it, so
/// that the domain holds whole blocks (the chips a host feeds). `message_level`: the network
/// is the message level, where a projected route may cross one image of a link several times;
/// at the other levels each period is raised to cover the longest route along its dimension.
SymmetrySearch find_symmetry(const Program& program, const Machine& machine,
                             const CollectivePlanner& planner,
                             const std::vector<int>& multiple_of = {}, bool message_level = false);

}  // namespace tpusim
