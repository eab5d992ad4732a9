// Degraded links (network.degraded_links): a link direction at a fraction f of its bandwidth.
// B, L, O, C as in sim_fixture; P: network.packet_bytes.
#include <catch2/catch.hpp>

#include "tests/sim/sim_fixture.hpp"

using namespace tpusim;
using namespace tpusim::test;

namespace {
const double S = 4.0 * 1024 * 1024;
Config line_with(const char* fidelity, const std::string& degraded) {
  return config_with({{"hardware", {{"cores_per_chip", 1}, {"async_collectives", true}}},
                      {"topology", "8:wrap=0"},
                      {"network", {{"fidelity", fidelity}, {"degraded_links", degraded}}}});
}
/// Collective-permutes: op k sends S from chip sends[k].first to chip sends[k].second.
Program sends(const std::vector<std::pair<int, int>>& pairs) {
  Program p;
  p.mesh = {{"all", 8}};
  for (auto [from, to] : pairs) {
    Op op = collective_op(CollectiveKind::CollectivePermute, S);
    op.collective.shift = 1;
    op.collective.replica_groups = {{from, to}};
    for (int c = 0; c < 8; ++c)
      if (c != from && c != to) op.collective.replica_groups.push_back({c});
    p.ops.push_back(op);
  }
  return p;
}
}  // namespace

TEST_CASE("a transfer over 3 hops whose middle link runs at f B is set by that link") {
  const double f = 0.25;
  // Chip 1's +X link is the middle hop of 0 -> 3.
  auto msg = line_with("message", "multipod.chip(1).ici.x+=0.25");
  auto p = params_of(msg);
  Run m = simulate_child(sends({{0, 3}}), msg);
  // Message level: the slow hop serialises S/(fB); the fast hops add one chunk each.
  CHECK(m.step_s == Approx(S / (f * p.B) + 2 * p.C / p.B + 3 * p.L + p.O).epsilon(1e-6));
  auto flow = line_with("flow", "multipod.chip(1).ici.x+=0.25");
  const double P = static_cast<double>(flow.integer("network.packet_bytes"));
  Run fl = simulate_child(sends({{0, 3}}), flow);
  // Flow level: the flow runs at fB; each extra hop adds a packet at the slowest link's rate.
  CHECK(fl.step_s == Approx(S / (f * p.B) + 2 * P / (f * p.B) + 3 * p.L + p.O).epsilon(1e-6));
}

TEST_CASE("a degraded link slows only the flows that cross it") {
  for (const char* fidelity : {"message", "flow", "packet"}) {
    // 0 -> 2 crosses chip 1's +X link; 4 -> 6 does not.
    Program p = sends({{0, 2}, {4, 6}});
    Run healthy = simulate_child(p, line_with(fidelity, ""));
    Run degraded = simulate_child(p, line_with(fidelity, "multipod.chip(1).ici.x+=0.5"));
    INFO(fidelity);
    CHECK(degraded.op_end_s[0] > healthy.op_end_s[0]);
    CHECK(degraded.op_end_s[1] == Approx(healthy.op_end_s[1]).epsilon(1e-9));
  }
}

TEST_CASE("a degraded link must exist and its factor be from 1e-6 to 1") {
  CHECK_THROWS_WITH(
      simulate_child(sends({{0, 1}}), line_with("message", "multipod.chip(7).ici.x+=0.5")),
      Catch::Contains("'multipod.chip(7).ici.x+' is not an ICI link"));
  CHECK_THROWS_WITH(
      simulate_child(sends({{0, 1}}), line_with("message", "multipod.chip(1).ici.x+=0")),
      Catch::Contains("allowed: from 1e-6 to 1"));
  CHECK_THROWS_WITH(
      simulate_child(sends({{0, 1}}), line_with("message", "multipod.chip(1).ici.x+")),
      Catch::Contains("not NAME=FACTOR"));
}
