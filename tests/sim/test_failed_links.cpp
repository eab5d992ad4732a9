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
  auto cfg = cfg_with("8", "chip0_ici_xp");
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
      if (l.name == "chip0_ici_xp") return std::vector<double>{l.bytes};
    return std::vector<double>{-1};
  });
  CHECK(bytes.at(0) == 0);
}

TEST_CASE("a failed link never speeds a collective up") {
  Program ar = one_op(16, collective_op(CollectiveKind::AllReduce, S));
  Run healthy = simulate_child(ar, cfg_with("4x4", ""));
  // The last case is both directions of the physical link between chips 0 and 1.
  for (const char* failed : {"chip0_ici_xp", "chip5_ici_ym", "chip0_ici_xp,chip1_ici_xm"}) {
    INFO(failed);
    Run broken = simulate_child(ar, cfg_with("4x4", failed));
    CHECK(broken.step_s >= healthy.step_s);
  }
}

TEST_CASE("a group that failed links cut off is an error naming the chips") {
  Program ar = one_op(8, collective_op(CollectiveKind::AllReduce, S));
  CHECK_THROWS_WITH(
      simulate_child(ar, cfg_with("8:wrap=0", "chip3_ici_xp")),
      Catch::Contains("network.failed_links") && Catch::Contains("cannot reach chip"));
  CHECK_THROWS_WITH(simulate_child(ar, cfg_with("8",
                                                "chip3_ici_xp,chip3_ici_xm,chip4_ici_xm,"
                                                "chip2_ici_xp")),
                    Catch::Contains("both ways round its ring"));
  CHECK_THROWS_WITH(simulate_child(ar, cfg_with("8", "chip9_ici_xp")),
                    Catch::Contains("'chip9_ici_xp' is not an ICI link"));
}
