// One collective cost model (sim/collectives/cost_model): `auto` chooses, for every collective,
// the algorithm whose plans the cost model predicts fastest, ties going to the earlier of
// per_dimension, bidirectional_ring, ring, then the others by name; and every algorithm's lower
// bound is at most the model's prediction of its plan.
#include <algorithm>
#include <catch2/catch.hpp>

#include "core/errors.hpp"
#include "sim/collectives/collective_engine.hpp"
#include "sim/core/core_resources.hpp"
#include "sim/machine/machine.hpp"
#include "tests/sim/sim_fixture.hpp"

using namespace tpusim;
using namespace tpusim::test;

namespace {
class NoCores : public CollectiveListener {
 public:
  void collective_done(int, int) override {}
  CoreResources& resources(int) override { throw std::logic_error("no cores in this test"); }
};

/// A TPU v3 machine of `topology` (the sim tests' defaults otherwise), with its topology,
/// hardware and cores; members in the order they are built (the machine reads the others).
struct CostModelMachine {
  explicit CostModelMachine(const char* topology)
      : cfg(config_with({{"topology", topology}})),
        topo(topology_from_json(cfg.json()["topology"])),
        hw(HardwareSpec::from_config(cfg)),
        cores(topo.num_chips() * hw.devices_per_chip),
        machine("multipod", topo, hw) {}
  const Config cfg;
  const Topology topo;
  const HardwareSpec hw;
  const int cores;
  Machine machine;
};

std::vector<std::string> preference_order() {
  std::vector<std::string> out = {"per_dimension", "bidirectional_ring", "ring"};
  for (const auto& name : algorithm_names())
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  return out;
}

/// Out: ops compared, choices that differ from the argmin, bounds above their prediction,
/// bound plans whose phases differ from the plan's (shape, or a floor above the profile),
/// distinct algorithms chosen.
std::vector<double> check_choices(const Config& cfg) {
  return in_child([&] {
    Topology topo(topology_from_json(cfg.json()["topology"]));
    const HardwareSpec hw = HardwareSpec::from_config(cfg);
    const int cores = topo.num_chips() * hw.devices_per_chip;
    Program program;
    program.mesh = {{"a", 4}, {"b", cores / 4}};
    const std::vector<std::vector<std::string>> axes = {{"a"}, {"b"}, {"a", "b"}};
    for (CollectiveKind kind :
         {CollectiveKind::AllReduce, CollectiveKind::ReduceScatter, CollectiveKind::AllGather})
      for (double bytes : {2e3, 64e3, 2e6, 64e6, 1e9})
        for (const auto& ax : axes) program.ops.push_back(collective_op(kind, bytes, ax));
    const SimOptions options = SimOptions::from_config(cfg);
    DeviceMesh mesh(topo, hw.devices_per_chip, program.mesh);
    EventQueue queue("events");
    Machine machine("multipod", topo, hw);
    auto network = make_network(queue, options.network);
    NoCores listener;
    CollectiveEngine engine(program, mesh, machine, *network, queue, options.collectives, listener);
    engine.prepare();
    const CollectiveCostModel& model = engine.cost_model();
    std::vector<double> scratch;
    double compared = 0, differ = 0, bound_above = 0, shape_differs = 0;
    std::vector<std::string> chosen;
    for (std::size_t i = 0; i < program.ops.size(); ++i) {
      const CollectiveSpec& spec = program.ops[i].collective;
      const auto groups = mesh.groups(spec.axes);
      std::string best_name;
      Duration best;
      for (const auto& name : preference_order()) {
        // test_registries.cpp registers a throwaway algorithm in this binary: not auto's choice.
        if (name.rfind("throwaway", 0) == 0) continue;
        auto algo = make_algorithm(name, "test");
        std::vector<GroupPlan> plans;
        try {
          for (const auto& g : groups) plans.push_back(algo->plan(machine, spec.kind, g));
        } catch (const ConfigError&) {
          // The bound plan refuses the same groups.
          try {
            algo->bound_plan(machine, spec.kind, groups.front());
            shape_differs += plans.empty();
          } catch (const ConfigError&) {
          }
          continue;
        }
        std::vector<GroupPlan*> all;
        for (auto& p : plans) all.push_back(&p);
        profile_plans(machine, all, scratch);
        const std::vector<const GroupPlan*> views(all.begin(), all.end());
        const Duration t = model.predicted_time(views, spec.bytes, spec.dtype);
        const GroupPlan bound = algo->bound_plan(machine, spec.kind, groups.front());
        bound_above += model.predicted_time(bound, spec.bytes, spec.dtype) > t;
        const auto& phases = plans.front().phases;
        shape_differs += bound.phases.size() != phases.size();
        for (std::size_t k = 0; k < std::min(bound.phases.size(), phases.size()); ++k) {
          const PlanPhase &b = bound.phases[k], &p = phases[k];
          shape_differs += b.kind != p.kind || b.steps != p.steps ||
                           b.step_fraction != p.step_fraction ||
                           b.bidirectional != p.bidirectional ||
                           b.reduce_pieces != p.reduce_pieces || !b.rings.empty() ||
                           b.link_s_per_byte > p.link_s_per_byte || b.path_latency > p.path_latency;
        }
        if (best_name.empty() || t < best) best_name = name, best = t;
      }
      const std::string& got = engine.stats().at(static_cast<int>(i)).algorithm;
      ++compared;
      differ += got != best_name;
      if (std::find(chosen.begin(), chosen.end(), got) == chosen.end()) chosen.push_back(got);
    }
    return std::vector<double>{compared, differ, bound_above, shape_differs,
                               static_cast<double>(chosen.size())};
  });
}
}  // namespace

// A torus, a Multipod-like grid whose X is an open line, a 3D slice and megacore chips.
TEST_CASE("auto's choice is the argmin of the cost model over the algorithms that serve") {
  for (const nlohmann::json& overrides :
       {nlohmann::json{{"topology", "4x4"}}, nlohmann::json{{"topology", "8x4:wrap=0,1"}},
        nlohmann::json{{"topology", "4x4x4"}},
        nlohmann::json{{"preset", "tpu_v4"}, {"topology", "4x4"}}}) {
    INFO(overrides.dump());
    const auto v = check_choices(config_with(overrides));
    REQUIRE(v.size() == 5);
    CHECK(v[0] == 3 * 5 * 3);
    CHECK(v[1] == 0);
    CHECK(v[2] == 0);
    CHECK(v[3] == 0);
    CHECK(v[4] >= 2);  // the sizes and groups make auto choose differently
  }
}

namespace {
bool same_plan(const GroupPlan& a, const GroupPlan& b) {
  if (a.phases.size() != b.phases.size()) return false;
  for (std::size_t k = 0; k < a.phases.size(); ++k) {
    const PlanPhase &p = a.phases[k], &q = b.phases[k];
    if (p.kind != q.kind || p.steps != q.steps || p.step_fraction != q.step_fraction ||
        p.bidirectional != q.bidirectional || p.reduce_pieces != q.reduce_pieces ||
        p.rings.size() != q.rings.size())
      return false;
    for (std::size_t r = 0; r < p.rings.size(); ++r) {
      const Ring &x = p.rings[r], &y = q.rings[r];
      if (x.members != y.members || x.next != y.next || x.prev != y.prev ||
          x.next_from != y.next_from || x.path_latency != y.path_latency)
        return false;
    }
  }
  return true;
}
}  // namespace

// Planning builds one plan per group shape and moves it to the groups that are its translations
// (chip_shift, shifted_plan): the moved plan must be the plan the algorithm builds for the group.
TEST_CASE("a plan moved to a translated group is the plan built for that group") {
  for (const char* topology : {"4x4", "8x4:wrap=0,1", "4x4x4"}) {
    INFO(topology);
    // Out: plans compared, moved plans that differ from the built ones, groups not translations.
    const auto v = in_child([&] {
      CostModelMachine m(topology);
      double compared = 0, differ = 0, not_moved = 0;
      for (const std::vector<MeshAxis>& axes :
           std::vector<std::vector<MeshAxis>>{{{"a", 4}, {"b", m.cores / 4}},
                                              {{"a", m.cores / 8}, {"b", 8}},
                                              {{"a", 2}, {"b", 2}, {"c", m.cores / 4}}}) {
        DeviceMesh mesh(m.topo, m.hw.devices_per_chip, axes);
        for (const auto& ax : std::vector<std::vector<std::string>>{{"a"}, {"b"}}) {
          const auto groups = mesh.groups(ax);
          auto plans_of = [&](const std::vector<int>& g) {
            std::vector<GroupPlan> out;
            for (const auto& name : algorithm_names()) try {
                out.push_back(
                    make_algorithm(name, "test")->plan(m.machine, CollectiveKind::AllReduce, g));
              } catch (const ConfigError&) {
              }
            for (const auto& name : all_to_all_names())
              out.push_back(all_to_all_plan(m.machine, g, name));
            out.push_back(permute_plan(m.machine, g, 1, true));
            return out;
          };
          const auto first = plans_of(groups.front());
          for (std::size_t g = 1; g < groups.size(); ++g) {
            std::vector<int> by;
            if (!chip_shift(m.machine, groups.front(), groups[g], by)) {
              ++not_moved;
              continue;
            }
            const auto built = plans_of(groups[g]);
            for (std::size_t i = 0; i < first.size(); ++i, ++compared)
              differ += !same_plan(shifted_plan(m.machine, first[i], by), built[i]);
          }
        }
      }
      return std::vector<double>{compared, differ, not_moved};
    });
    REQUIRE(v.size() == 3);
    CHECK(v[0] > 0);
    CHECK(v[1] == 0);
  }
}

// profile_plans counts a moved group's routes from the first group's plan and its shift, without
// building the moved plan (CollectivePlanner keeps such groups unbuilt until a run plays them):
// every phase's link load and path latency must be those of profiling the built plans.
TEST_CASE("profiling moved groups unbuilt gives the profile of their built plans") {
  for (const char* topology : {"4x4", "8x4:wrap=0,1", "4x4x4"}) {
    INFO(topology);
    // Out: phases compared, phases whose link load or path latency differ.
    const auto v = in_child([&] {
      CostModelMachine m(topology);
      double compared = 0, differ = 0;
      std::vector<double> scratch;
      DeviceMesh mesh(m.topo, m.hw.devices_per_chip, {{"a", 4}, {"b", m.cores / 4}});
      for (const auto& ax : std::vector<std::vector<std::string>>{{"a"}, {"b"}}) {
        const auto groups = mesh.groups(ax);
        for (const auto& name : algorithm_names()) {
          std::vector<GroupPlan> built;
          try {
            built.push_back(make_algorithm(name, "test")
                                ->plan(m.machine, CollectiveKind::AllReduce, groups[0]));
          } catch (const ConfigError&) {
            continue;
          }
          GroupPlan unbuilt = built.front();
          std::vector<std::vector<int>> moved(1);
          std::vector<int> by;
          for (std::size_t g = 1; g < groups.size(); ++g)
            if (chip_shift(m.machine, groups.front(), groups[g], by)) {
              built.push_back(shifted_plan(m.machine, built.front(), by));
              moved.push_back(by);
            }
          std::vector<GroupPlan*> all, stand_ins(moved.size(), &unbuilt);
          for (auto& p : built) all.push_back(&p);
          profile_plans(m.machine, all, scratch);
          profile_plans(m.machine, stand_ins, scratch, &moved);
          for (std::size_t k = 0; k < unbuilt.phases.size(); ++k, ++compared)
            differ += unbuilt.phases[k].link_s_per_byte != built[0].phases[k].link_s_per_byte ||
                      unbuilt.phases[k].path_latency != built[0].phases[k].path_latency;
        }
      }
      return std::vector<double>{compared, differ};
    });
    REQUIRE(v.size() == 2);
    CHECK(v[0] > 0);
    CHECK(v[1] == 0);
  }
}
