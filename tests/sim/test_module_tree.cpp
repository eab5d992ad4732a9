// The SystemC module tree reads as the hardware: multipod.chip(x,y) per chip, each with its
// TensorCores (core0, core1, each with mxu, vpu, hbm, dma), its ICI ports (ici.x+, ici.x-, ...)
// and its on-chip links. The expected names come from the grid and the config.
#include <catch2/catch.hpp>
#include <set>
#include <systemc>

#include "tests/sim/sim_fixture.hpp"

using namespace tpusim;
using namespace tpusim::test;

namespace {
void walk(const sc_core::sc_object* o, std::set<std::string>& names) {
  names.insert(o->name());
  for (const sc_core::sc_object* c : o->get_child_objects()) walk(c, names);
}
/// Children of `parent` whose base name starts with `prefix`.
int children_named(const sc_core::sc_object* parent, const std::string& prefix) {
  int n = 0;
  for (const sc_core::sc_object* c : parent->get_child_objects())
    n += std::string(c->basename()).rfind(prefix, 0) == 0;
  return n;
}
}  // namespace

TEST_CASE("the module tree of a 2x2 machine is multipod.chip(x,y) with cores and ICI ports") {
  const int X = 2, Y = 2;
  const Config cfg = config_with({{"topology", "2x2"}});
  const int cpc = static_cast<int>(cfg.integer("hardware.cores_per_chip"));
  REQUIRE(cpc == 2);
  // Out: the number of top-level modules named multipod, the expected names missing, then per
  // chip (x fastest) its cores and its ICI ports.
  auto v = in_child([&] {
    Topology topo(topology_from_json(cfg.json()["topology"]));
    simulate(one_op(X * Y * cpc, collective_op(CollectiveKind::AllReduce, 1 << 20)), topo,
             HardwareSpec::from_config(cfg), SimOptions::from_config(cfg));
    std::set<std::string> names;
    double multipods = 0;
    const sc_core::sc_object* multipod = nullptr;
    for (const sc_core::sc_object* o : sc_core::sc_get_top_level_objects()) {
      walk(o, names);
      if (std::string(o->name()) == "multipod") ++multipods, multipod = o;
    }
    std::vector<std::string> expected = {"multipod.chip(1,0).core1.hbm",
                                         "multipod.chip(0,1).ici.y-"};
    for (int y = 0; y < Y; ++y)
      for (int x = 0; x < X; ++x) {
        const std::string chip = "multipod.chip(" + std::to_string(x) + "," + std::to_string(y) + ")";
        for (int k = 0; k < cpc; ++k)
          for (const char* r : {"mxu", "vpu", "hbm", "dma"})
            expected.push_back(chip + ".core" + std::to_string(k) + "." + r);
        for (const char* port : {"x+", "x-", "y+", "y-"}) expected.push_back(chip + ".ici." + port);
        expected.push_back(chip + ".onchip.0to1");
        expected.push_back(chip + ".onchip.1to0");
      }
    double missing = 0;
    for (const auto& e : expected) missing += names.count(e) == 0;
    std::vector<double> out = {multipods, missing};
    if (!multipod) return out;
    for (int y = 0; y < Y; ++y)
      for (int x = 0; x < X; ++x)
        for (const sc_core::sc_object* chip : multipod->get_child_objects()) {
          if (std::string(chip->basename()) !=
              "chip(" + std::to_string(x) + "," + std::to_string(y) + ")")
            continue;
          out.push_back(children_named(chip, "core"));
          double ports = -1;
          for (const sc_core::sc_object* c : chip->get_child_objects())
            if (std::string(c->basename()) == "ici") ports = children_named(c, "");
          out.push_back(ports);
        }
    return out;
  });
  REQUIRE(v.size() == 2 + 2 * X * Y);
  CHECK(v[0] == 1);
  CHECK(v[1] == 0);
  for (int c = 0; c < X * Y; ++c) {
    INFO("chip " << c);
    CHECK(v[2 + 2 * c] == cpc);
    CHECK(v[3 + 2 * c] == 4);
  }
}
