// All-to-all as concurrent exchanges against closed forms. Each member's buffer S is cut into n
// pieces; routes follow dimension order, and a ring's antipodal pieces go the + way. On a ring of
// n chips the busiest + link then carries (S/n)(1 + 2 + ... + n/2) = S (n + 2) / 8 bytes; the
// bisection bound of a torus X x Y (X >= Y) is X S / (8 B): N S / 4 bytes cross one way over 2Y
// links.
#include <catch2/catch.hpp>

#include "tests/sim/sim_fixture.hpp"

using namespace tpusim;
using namespace tpusim::test;

namespace {
const double S = 64.0 * 1024 * 1024;
double link_bw(const Config& c) { return c.number("hardware.ici.bandwidth_GBps") * 1e9; }
Config a2a_cfg(const std::string& topology, const std::string& algorithm) {
  return config_with({{"hardware", {{"cores_per_chip", 1}}},
                      {"topology", topology},
                      {"collectives", {{"all_to_all_algorithm", algorithm}}}});
}
Program a2a(int cores) {
  Program p;
  p.mesh = {{"all", cores}};
  p.ops.push_back(collective_op(CollectiveKind::AllToAll, S));
  return p;
}
}  // namespace

TEST_CASE("direct all-to-all on a ring is set by its busiest link, above the bisection bound") {
  for (int n : {8, 16}) {
    auto cfg = a2a_cfg(std::to_string(n), "direct");
    const double B = link_bw(cfg);
    Run r = simulate_child(a2a(n), cfg);
    const double busiest = S * (n + 2) / 8 / B;
    const double bisection = n * S / 8 / B;
    INFO("n = " << n);
    CHECK(r.step_s >= bisection);
    CHECK(r.step_s == Approx(busiest).epsilon(0.03));
  }
}

TEST_CASE(
    "all-to-all on a torus: direct overlaps the dimensions, per-dimension runs them in turn") {
  // 8x8: each dimension's links carry 8 x (S/64)(1+2+3+4) = 1.25 S under direct routing; the
  // per-dimension variant sends S/8 pieces along X, then along Y, 1.25 S per link each time.
  auto direct_cfg = a2a_cfg("8x8", "direct");
  const double B = link_bw(direct_cfg);
  Run direct = simulate_child(a2a(64), direct_cfg);
  Run per_dim = simulate_child(a2a(64), a2a_cfg("8x8", "per_dimension"));
  const double bisection = 8 * S / 8 / B;
  CHECK(direct.step_s >= bisection);
  // The message level reserves whole messages hop by hop, so a piece's Y links wait for its X
  // hops to be reserved: it lands between the busiest link's load and half again as much.
  CHECK(direct.step_s >= 1.25 * S / B);
  CHECK(direct.step_s <= 1.5 * 1.25 * S / B);
  CHECK(per_dim.step_s == Approx(2 * 1.25 * S / B).epsilon(0.03));
  // auto takes the one of least predicted time.
  Run automatic = simulate_child(a2a(64), a2a_cfg("8x8", "auto"));
  CHECK(automatic.step_s == Approx(direct.step_s).epsilon(1e-9));
}

TEST_CASE("per-dimension all-to-all needs a sub-grid") {
  // Chips 0 (0,0), 1 (1,0) and 5 (1,1) of a 4x2 grid: three of the four corners of a square.
  auto cfg = a2a_cfg("4x2", "per_dimension");
  Program p = a2a(8);
  p.ops[0].collective.replica_groups = {{0, 1, 5}, {2}, {3}, {4}, {6}, {7}};
  CHECK_THROWS_WITH(simulate_child(p, cfg), Catch::Contains("sub-grid"));
}

TEST_CASE("a mixture-of-experts dispatch played on the links: (e - 1)/e of k x d_model leaves") {
  // docs/experts.md: over an expert axis of degree e, each core's dispatch all-to-all carries its
  // T tokens' k rows of d_model bf16 to the devices of their experts; with uniform routing 1/e of
  // them stay on the device and (e - 1)/e leave it, and the combine brings as much back. On a
  // ring of e = 2 or 3 chips (one core each) every other member is a neighbour, so the links
  // carry exactly what leaves the devices: e members x (e - 1)/e x T k d_model x 2 bytes per
  // all-to-all, at message level.
  const double T = 512, k = 2, d_model = 4096;
  const double bytes = T * k * d_model * 2;
  for (int e : {2, 3}) {
    const Config cfg = config_with({{"hardware", {{"cores_per_chip", 1}}},
                                    {"topology", std::to_string(e)},
                                    {"network", {{"fidelity", "message"}}}});
    Program p;
    p.mesh = {{"expert", e}};
    p.ops.push_back(collective_op(CollectiveKind::AllToAll, bytes, {"expert"}));
    p.ops.back().name = "moe.dispatch";
    p.ops.push_back(collective_op(CollectiveKind::AllToAll, bytes, {"expert"}));
    p.ops.back().name = "moe.combine";
    p.ops.back().deps = {0};
    const auto link_bytes = in_child([&] {
      HardwareSpec hw = HardwareSpec::from_config(cfg);
      Topology topo(topology_from_json(cfg.json()["topology"]));
      return std::vector<double>{
          simulate(p, topo, hw, SimOptions::from_config(cfg)).links.total_bytes};
    });
    INFO("e = " << e);
    CHECK(link_bytes.at(0) == Approx(2 * e * (e - 1.0) / e * bytes));
  }
}
