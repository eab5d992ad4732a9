// Collectives on a twisted k x k x 2k torus (topology.twist) against closed forms and against
// the plain torus. B: link bandwidth, L: per-hop latency, O: the fixed cost of one collective
// step, C: the message level's chunk, read from the config the test runs with.
#include <catch2/catch.hpp>

#include "sim/collectives/collective_algorithm.hpp"
#include "sim/machine/machine.hpp"
#include "tests/sim/sim_fixture.hpp"

using namespace tpusim;
using namespace tpusim::test;

namespace {
const double kTwistBytes = 16.0 * 1024 * 1024;

Config twist_cfg(bool twist) {
  nlohmann::json topo = {{"dims", {4, 4, 8}}, {"wrap", {true, true, true}}};
  if (twist) topo["twist"] = true;
  return config_with({{"hardware", {{"cores_per_chip", 1}}},
                      {"topology", topo},
                      {"collectives",
                       {{"algorithm", "per_dimension"},
                        {"reduction_compute", false},
                        {"dma_hbm_traffic", false}}}});
}

/// Per phase of the whole-machine per-dimension all-reduce: members per ring, the longest
/// route in hops, and the most routes any link direction carries in one step; then the
/// busiest link's routes of one step in which every chip sends to its image under
/// (k/2, k/2, k) (a pattern whose every route crosses the bisection of the plain torus).
std::vector<double> twist_profile(const Config& cfg) {
  return in_child([&] {
    Topology topo(topology_from_json(cfg.json()["topology"]));
    const HardwareSpec hw = HardwareSpec::from_config(cfg);
    Machine m("multipod", topo, hw);
    std::vector<int> all(static_cast<std::size_t>(m.num_cores()));
    for (int c = 0; c < m.num_cores(); ++c) all[c] = c;
    GroupPlan plan =
        make_algorithm("per_dimension", "test")->plan(m, CollectiveKind::AllReduce, all);
    std::vector<double> scratch;
    std::vector<GroupPlan*> plans{&plan};
    profile_plans(m, plans, scratch);
    const double B = m.links().front()->bandwidth.bytes_per_s();
    std::vector<double> out;
    for (const PlanPhase& ph : plan.phases) {
      std::size_t longest = 0;
      for (const Ring& r : ph.rings)
        for (const auto* routes : {&r.next, &r.prev})
          for (const Route& route : *routes) longest = std::max(longest, route.size());
      out.push_back(static_cast<double>(ph.rings.front().members.size()));
      out.push_back(static_cast<double>(longest));
      out.push_back(ph.link_s_per_byte * B);
    }
    std::vector<std::vector<int>> partners(all.size());
    for (int c : all)
      partners[c] = {topo.translate(topo.translate(topo.translate(c, 0, 2), 1, 2), 2, 4)};
    GroupPlan shift;
    shift.phases.emplace_back();
    shift.phases[0].rings.push_back(make_exchange(m, all, partners));
    std::vector<GroupPlan*> shifts{&shift};
    profile_plans(m, shifts, scratch);
    out.push_back(shift.phases[0].link_s_per_byte * B);
    return out;
  });
}
}  // namespace

TEST_CASE("twisted torus: the whole machine's rings move what the plain torus's do") {
  const std::vector<double> plain = twist_profile(twist_cfg(false));
  const std::vector<double> twisted = twist_profile(twist_cfg(true));
  // Reduce-scatter then all-gather over three dimensions: 6 phases, then the shift's load.
  REQUIRE(plain.size() == 6 * 3 + 1);
  REQUIRE(twisted.size() == plain.size());
  for (int ph = 0; ph < 6; ++ph) {
    INFO("phase " << ph);
    const bool long_ring = ph == 0 || ph == 5;  // the 8-chip rings: first out, last back
    CHECK(plain[3 * ph] == (long_ring ? 8 : 4));
    CHECK(twisted[3 * ph] == plain[3 * ph]);
    CHECK(plain[3 * ph + 1] == 1);                      // one hop a step
    CHECK(twisted[3 * ph + 1] == (long_ring ? 1 : 2));  // +a -t: two hops a step
    CHECK(plain[3 * ph + 2] == Approx(1));  // each link direction carries one route a step
    CHECK(twisted[3 * ph + 2] == Approx(1));
  }
  // The shift by (2, 2, 4): on the plain torus 2 + 2 + 4 hops and every +Z link carries k = 4
  // routes; twisted, the same chip is 4 hops away through the shifted wraps and the busiest
  // link carries 2: twice the bisection (4k^2 links against 2k^2), half the time.
  CHECK(plain.back() == Approx(4));
  CHECK(twisted.back() == Approx(2));
}

TEST_CASE("twisted torus: the all-reduce of the whole machine against its closed form") {
  for (bool twist : {false, true}) {
    const Config cfg = twist_cfg(twist);
    auto p = params_of(cfg);
    Run r = simulate_child(one_op(128, collective_op(CollectiveKind::AllReduce, kTwistBytes)), cfg);
    // Rings both ways: the 8-chip ring on S, then two 4-chip rings on S/8 and S/32. Twisted,
    // the 4-chip rings' steps are two hops: one more hop latency.
    auto ring = [&](double n, double data, int hops) {
      return (n - 1) / n * data / (2 * p.B) + (n - 1) * (hops * p.L + p.O);
    };
    const int h = twist ? 2 : 1;
    const double S = kTwistBytes;
    INFO("twist " << twist);
    CHECK(r.step_s ==
          Approx(2 * (ring(8, S, 1) + ring(4, S / 8, h) + ring(4, S / 32, h))).epsilon(0.02));
  }
}
