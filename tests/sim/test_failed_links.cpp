// Failed links (network.failed_links): a route whose shortest way along a dimension crosses a
// failed link goes the other way round that dimension's ring. B, L, O, C as in sim_fixture.
#include <catch2/catch.hpp>

#include "tests/sim/sim_fixture.hpp"

using namespace tpusim;
using namespace tpusim::test;

namespace {
const double S = 4.0 * 1024 * 1024;
Config cfg_with(const std::string& topology, const std::string& failed) {
  return config_with({{"hardware", {{"cores_per_chip", 1}}},
                      {"topology", topology},
                      {"network", {{"failed_links", failed}}}});
}
Program send_0_to_1(int chips) {
  Op op = collective_op(CollectiveKind::CollectivePermute, S);
  op.collective.shift = 1;
  op.collective.replica_groups = {{0, 1}};
  for (int c = 2; c < chips; ++c) op.collective.replica_groups.push_back({c});
  return one_op(chips, op);
}
}  // namespace

TEST_CASE("a message whose link has failed goes the other way round the ring") {
  // On a ring of 8, chip 0 -> chip 1 with chip 0's +X link failed takes the 7 hops the other way.
  auto cfg = cfg_with("8", "multipod.chip(0).ici.x+");
  auto p = params_of(cfg);
  Run r = simulate_child(send_0_to_1(8), cfg);
  CHECK(r.step_s == Approx(S / p.B + 6 * p.C / p.B + 7 * p.L + p.O).epsilon(1e-6));
  // The failed link carries nothing.
  auto bytes = in_child([&] {
    SimOptions o = SimOptions::from_config(cfg);
    o.link_stats = true;
    Topology topo(topology_from_json(cfg.json()["topology"]));
    SimReport rep = simulate(send_0_to_1(8), topo, HardwareSpec::from_config(cfg), o);
    for (const auto& l : rep.link_stats)
      if (l.name == "multipod.chip(0).ici.x+") return std::vector<double>{l.bytes};
    return std::vector<double>{-1};
  });
  CHECK(bytes.at(0) == 0);
}

TEST_CASE("a failed link never speeds a collective up") {
  Program ar = one_op(16, collective_op(CollectiveKind::AllReduce, S));
  Run healthy = simulate_child(ar, cfg_with("4x4", ""));
  // The last case is both directions of the physical link between chips (0,0) and (1,0).
  for (const char* failed : {"multipod.chip(0,0).ici.x+", "multipod.chip(1,1).ici.y-",
                             "multipod.chip(0,0).ici.x+,multipod.chip(1,0).ici.x-"}) {
    INFO(failed);
    Run broken = simulate_child(ar, cfg_with("4x4", failed));
    CHECK(broken.step_s >= healthy.step_s);
  }
}

TEST_CASE("a group that failed links cut off is an error naming the chips") {
  Program ar = one_op(8, collective_op(CollectiveKind::AllReduce, S));
  CHECK_THROWS_WITH(
      simulate_child(ar, cfg_with("8:wrap=0", "multipod.chip(3).ici.x+")),
      Catch::Contains("network.failed_links") && Catch::Contains("cannot reach chip"));
  CHECK_THROWS_WITH(simulate_child(ar, cfg_with("8",
                                                "multipod.chip(3).ici.x+,multipod.chip(3).ici.x-,"
                                                "multipod.chip(4).ici.x-,multipod.chip(2).ici.x+")),
                    Catch::Contains("both ways round its ring"));
  CHECK_THROWS_WITH(simulate_child(ar, cfg_with("8", "multipod.chip(9).ici.x+")),
                    Catch::Contains("'multipod.chip(9).ici.x+' is not an ICI link"));
}

TEST_CASE("a link name of before the module tree is an error giving its name now") {
  // Chip 5 of a 4x4 grid is at x = 5 % 4, y = 5 / 4.
  Program ar = one_op(16, collective_op(CollectiveKind::AllReduce, S));
  CHECK_THROWS_WITH(
      simulate_child(ar, cfg_with("4x4", "chip5_ici_ym")),
      Catch::Contains("network.failed_links") && Catch::Contains("'multipod.chip(1,1).ici.y-'"));
}

TEST_CASE("a trailing comma in a link list is an error, not a shorter list") {
  CHECK_THROWS_WITH(NetworkOptions::from_config(cfg_with("8", "multipod.chip(0).ici.x+,")),
                    Catch::Contains("network.failed_links") &&
                        Catch::Contains("an empty name (a trailing or doubled comma)"));
  const Config degraded =
      config_with({{"hardware", {{"cores_per_chip", 1}}},
                   {"topology", "8"},
                   {"network", {{"degraded_links", "multipod.chip(0).ici.x+=0.5,"}}}});
  CHECK_THROWS_WITH(NetworkOptions::from_config(degraded),
                    Catch::Contains("network.degraded_links") &&
                        Catch::Contains("an empty entry (a trailing or doubled comma)"));
}

TEST_CASE("an on-chip link named as failed or degraded is an error naming it") {
  // Two cores per chip: each chip has the on-chip links onchip.0to1 and onchip.1to0.
  Program ar = one_op(16, collective_op(CollectiveKind::AllReduce, S));
  for (const char* key : {"failed_links", "degraded_links"})
    for (const std::string link : {"multipod.chip(0).onchip.0to1", "chip0_onchip_0to1"}) {
      const std::string value = link + (std::string(key) == "degraded_links" ? "=0.5" : "");
      const Config cfg = config_with({{"topology", "8"}, {"network", {{key, value}}}});
      INFO(key << " " << value);
      CHECK_THROWS_WITH(simulate_child(ar, cfg),
                        Catch::Contains(std::string("network.") + key) &&
                            Catch::Contains("'" + link + "' is an on-chip link") &&
                            Catch::Contains("multipod.chip(0).ici.x+"));
    }
}
