// The packet level's trains against closed forms: a message travels as one train per hop, trains
// that start together on a link are served round-robin, and a train cut by a packet that
// reaches its link mid-way interleaves packet by packet. B, L, O as in sim_fixture; P:
// network.packet_bytes; s = P/B, one packet's serialisation.
#include <catch2/catch.hpp>

#include "tests/sim/sim_fixture.hpp"

using namespace tpusim;
using namespace tpusim::test;

TEST_CASE("packet level: one message over h hops takes S/B + (h-1) P/B + h L") {
  auto cfg = line_cfg("packet", 16);
  auto p = params_of(cfg);
  const double P = static_cast<double>(cfg.integer("network.packet_bytes"));
  // A whole number of packets, and one with a short last packet (it waits one full packet per
  // extra hop behind the packet before it, so the closed form is the same).
  for (double S : {4.0 * 1024 * 1024, 4.0 * 1024 * 1024 + 1000}) {
    for (int h : {1, 3, 7}) {
      Run r = simulate_child(one_op(16, send(0, h, 16, S)), cfg);
      INFO("S = " << S << ", h = " << h);
      CHECK(r.step_s == Approx(S / p.B + (h - 1) * P / p.B + h * p.L + p.O).epsilon(1e-6));
    }
  }
}

TEST_CASE("packet level: two trains that start together on one link alternate packet by packet") {
  // Chip 0 sends S to chip 1 twice at once: the link serves A0 B0 A1 B1 ..., so the first
  // message's last packet leaves at (2n - 1) s and the second's at 2n s, n = S/P.
  const double S = 1024.0 * 1024;
  auto cfg = line_cfg("packet", 2);
  auto p = params_of(cfg);
  const double P = static_cast<double>(cfg.integer("network.packet_bytes"));
  Program prog;
  prog.mesh = {{"all", 2}};
  prog.ops = {send(0, 1, 2, S), send(0, 1, 2, S)};
  Run r = simulate_child(prog, cfg);
  CHECK(r.op_end_s[0] == Approx(2 * S / p.B - P / p.B + p.L + p.O).epsilon(1e-6));
  CHECK(r.op_end_s[1] == Approx(2 * S / p.B + p.L + p.O).epsilon(1e-6));
}

TEST_CASE("packet level: two interleaved trains pass further links without queuing") {
  // Chip 0 sends S to chip h twice at once: link 0->1 serves them round-robin, so each leaves it
  // with spacing 2s, the second s behind the first; on every further link their packets arrive
  // in each other's gaps and leave one s later, untouched (the level admits the second train
  // into the first's gaps in closed form instead of cutting it). The first ends at
  // (2n - 1) s + (h - 1) s + h L, the second s later (n = S/P).
  const double S = 1024.0 * 1024;
  for (int h : {2, 5}) {
    auto cfg = line_cfg("packet", h + 1);
    auto p = params_of(cfg);
    const double P = static_cast<double>(cfg.integer("network.packet_bytes"));
    const double s = P / p.B;
    Program prog;
    prog.mesh = {{"all", h + 1}};
    prog.ops = {send(0, h, h + 1, S), send(0, h, h + 1, S)};
    Run r = simulate_child(prog, cfg);
    INFO("h = " << h);
    CHECK(r.op_end_s[0] == Approx(2 * S / p.B - s + (h - 1) * s + h * p.L + p.O).epsilon(1e-6));
    CHECK(r.op_end_s[1] == Approx(2 * S / p.B + (h - 1) * s + h * p.L + p.O).epsilon(1e-6));
  }
}

TEST_CASE("packet level: a train reached mid-way by another flow interleaves with it") {
  // On a line of 3, chip 1 sends S to chip 2 while chip 0 sends S to chip 2 through chip 1:
  // chip 0's packets reach link 1->2 one packet time and one latency after chip 1's train has
  // started there. The link carries 2S, so the later flow ends no earlier than 2S/B + L + O.
  // Interleaved, the earlier one (chip 1's, with that head start of s + L) ends no earlier than
  // 2S/B - (s + L) - s + L + O, not at S/B + L + O as whole messages would.
  const double S = 1024.0 * 1024;
  auto cfg = line_cfg("packet", 3);
  auto p = params_of(cfg);
  const double P = static_cast<double>(cfg.integer("network.packet_bytes"));
  Program prog;
  prog.mesh = {{"all", 3}};
  prog.ops = {send(0, 2, 3, S), send(1, 2, 3, S)};
  Run r = simulate_child(prog, cfg);
  const double first = std::min(r.op_end_s[0], r.op_end_s[1]);
  const double last = std::max(r.op_end_s[0], r.op_end_s[1]);
  CHECK(last >= 2 * S / p.B + p.L + p.O - 1e-12);
  CHECK(last <= 2 * S / p.B + 2 * P / p.B + 2 * p.L + p.O + 1e-12);
  CHECK(first >= 2 * S / p.B - 2 * P / p.B + p.O - 1e-12);
}

TEST_CASE(
    "packet level: trains merged on shared links stay within a few percent of the flow level") {
  // Two-core chips on 8x4 (X open, Y wraps): the rings of core 0 and core 1 share every ICI
  // link and start their steps at different instants, so a train injected on a link meets one
  // still arriving there and the two are merged round-robin. The flow level shares the same
  // links max-min fairly.
  auto make = [](const char* fidelity) {
    return config_with(
        {{"topology", "8x4:wrap=0,1"},
         {"network", {{"fidelity", fidelity}}},
         {"collectives", {{"algorithm", "per_dimension"}, {"reduction_compute", false}}}});
  };
  Program ar = one_op(64, collective_op(CollectiveKind::AllReduce, 4.0 * 1024 * 1024));
  Run flow = simulate_child(ar, make("flow"));
  Run pkt = simulate_child(ar, make("packet"));
  CHECK(pkt.step_s == Approx(flow.step_s).epsilon(0.03));
}

TEST_CASE("packet level: the short last packets of two trains that start together follow them") {
  // Chip 0 sends n P + t bytes to chip h twice at once. Link 0->1 serves the full packets
  // round-robin until 2n s, then the first message's tail (t/B) and the second's. On each
  // further link the first tail arrives while the second message's last full packet is being
  // sent, so both tails leave one s later per hop: the first message ends at
  // (2n + h - 1) s + t/B + h L + O, the second t/B later.
  const double n = 64;
  for (int h : {1, 2, 5}) {
    auto cfg = line_cfg("packet", h + 1);
    auto p = params_of(cfg);
    const double P = static_cast<double>(cfg.integer("network.packet_bytes"));
    const double s = P / p.B, t = P / 4;
    Program prog;
    prog.mesh = {{"all", h + 1}};
    prog.ops = {send(0, h, h + 1, n * P + t), send(0, h, h + 1, n * P + t)};
    Run r = simulate_child(prog, cfg);
    INFO("h = " << h);
    const double first = (2 * n + h - 1) * s + t / p.B + h * p.L + p.O;
    CHECK(r.op_end_s[0] == Approx(first).epsilon(1e-9));
    CHECK(r.op_end_s[1] == Approx(first + t / p.B).epsilon(1e-9));
  }
}

namespace {
/// The typed events (the event queue's statistic) of a run in which chip 0 sends `bytes` to chip
/// h on a line of h + 1 chips at the packet level.
double tail_test_typed_events(int h, double bytes) {
  const Config cfg = line_cfg("packet", h + 1);
  return in_child([&] {
           Program prog;
           prog.mesh = {{"all", h + 1}};
           prog.ops = {send(0, h, h + 1, bytes)};
           Topology topo(topology_from_json(cfg.json()["topology"]));
           SimOptions options = SimOptions::from_config(cfg);
           options.stats = true;
           const SimReport r = simulate(prog, topo, HardwareSpec::from_config(cfg), options);
           for (const auto& [name, value] : r.stats.values)
             if (name == "events.typed_events") return std::vector<double>{value};
           return std::vector<double>{-1};
         })
      .at(0);
}
}  // namespace

TEST_CASE("packet level: a message's short last packet travels in its train's events") {
  // One event per hop carries the train's full packets and its tail: a message with a tail
  // costs the events of one without (it cost one event more per hop when the tail went alone).
  const double P = static_cast<double>(line_cfg("packet", 2).integer("network.packet_bytes"));
  for (int h : {1, 4}) {
    INFO("h = " << h);
    const double whole = tail_test_typed_events(h, 16 * P);
    CHECK(whole > h);
    CHECK(tail_test_typed_events(h, 16 * P + P / 3) == whole);
  }
}
