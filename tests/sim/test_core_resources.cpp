// A TensorCore's resources (MXUs, vector unit, HBM port) shared by compute and collective steps,
// against closed forms. Bh: the achievable HBM bandwidth of a core, read from the config.
#include <catch2/catch.hpp>
#include <systemc>

#include "sim/core/core_resources.hpp"
#include "sim/core/tensor_core_cost.hpp"
#include "tests/sim/sim_fixture.hpp"

using namespace tpusim;
using namespace tpusim::test;

namespace {
Duration us(double v) { return Duration::ns(v * 1e3); }

/// Grants (from_us, work_us) in order on one resource in a child process; returns the ends in us.
std::vector<double> grants(const std::vector<std::pair<double, double>>& asks) {
  return in_child([&] {
    CoreResource r;
    std::vector<double> out;
    for (const auto& [from, work] : asks) out.push_back(r.grant(us(from), us(work)).us());
    out.push_back(r.busy().us());
    out.push_back(static_cast<double>(r.intervals()));
    return out;
  });
}

/// Two chips exchange `bytes`: a collective-permute both ways round a pair.
Op exchange(double bytes) {
  Op op = collective_op(CollectiveKind::CollectivePermute, bytes);
  op.collective.shift = 1;
  op.collective.wrap = true;
  return op;
}

/// An op that only moves `bytes` through HBM.
Op hbm_op(const std::string& name, double bytes) {
  Op op;
  op.name = name;
  op.kind = "elementwise";
  op.compute.bytes_read = bytes;
  return op;
}
}  // namespace

TEST_CASE("a resource serves requests in the order granted and fills the gaps left") {
  // Two requests from 0: the first ends at its work, the second after both.
  auto v = grants({{0, 3}, {0, 5}});
  CHECK(v[0] == Approx(3));
  CHECK(v[1] == Approx(8));
  // A request from 10 (an op booked ahead), then one from 0 fills [0, 10) first and goes on
  // after the booked interval: 4 of its 12 units wait until 14.
  v = grants({{10, 4}, {0, 12}});
  CHECK(v[0] == Approx(14));
  CHECK(v[1] == Approx(16));
  // Occupancy is the sum of the work; adjacent grants merge into one interval.
  CHECK(v[2] == Approx(16));
  CHECK(v[3] == 1);
  // Gaps between several bookings are filled in time order.
  v = grants({{2, 1}, {5, 1}, {9, 1}, {0, 6}});
  CHECK(v[3] == Approx(8));  // 6 units in [0,2) [3,5) [6,8)
  CHECK(v[4] == Approx(9));
}

TEST_CASE("an HBM-bound op and a DMA stream on the same core finish at (H + D) / Bh") {
  // Two one-core chips exchange X bytes (a permute both ways) while each runs an op that reads
  // H bytes from HBM. The DMA engines of a core read the X it sends and write the X it receives:
  // D = 2X. A group that becomes ready at an instant starts after the cores running then
  // (CollectiveEngine::start_ready), so on both cores the op books the HBM port first and the
  // DMA's traffic follows: the exchange ends at (H + D) / Bh plus its step overhead O, where
  // each alone would take H / Bh or D / Bh, and the op is not slowed.
  const double X = 1 << 20, H = 4 << 20, D = 2 * X;
  auto doc = nlohmann::json{{"hardware", {{"cores_per_chip", 1}, {"async_collectives", true}}},
                            {"topology", "2:wrap=0"}};
  auto cfg = config_with(doc);
  const double Bh = cfg.number("hardware.hbm.bandwidth_GBps_per_core") * 1e9 *
                    cfg.number("hardware.calibration.hbm_efficiency");
  const double lat = cfg.number("hardware.hbm.latency_ns") * 1e-9;
  const double ov = cfg.number("hardware.calibration.op_overhead_ns") * 1e-9;
  const double O = cfg.number("hardware.calibration.collective_step_overhead_ns") * 1e-9;
  const double Bl = cfg.number("hardware.ici.bandwidth_GBps") * 1e9;
  REQUIRE(X / Bl < (H + D) / Bh);  // the link is not what sets the time
  Program p;
  p.mesh = {{"all", 2}};
  p.ops.push_back(exchange(X));
  p.ops.push_back(hbm_op("read", H));
  Run r = simulate_child(p, cfg);
  REQUIRE((H + D) / Bh + O > H / Bh + lat + ov);  // the exchange ends last
  CHECK(r.step_s == Approx((H + D) / Bh + O).epsilon(1e-6));
  CHECK(r.compute_slowdown_s == 0);
  // Without the DMA traffic in HBM the two overlap completely.
  doc["collectives"] = {{"dma_hbm_traffic", false}};
  Run free = simulate_child(p, config_with(doc));
  CHECK(free.step_s == Approx(H / Bh + lat + ov).epsilon(1e-6));
  CHECK(free.compute_slowdown_s == 0);
}

TEST_CASE("an MXU-bound op leaves its HBM slack to the DMA and is not slowed") {
  // A [m,k]x[k,n] product whose MXU time exceeds its HBM time plus the DMA's: the DMA fits in
  // the HBM time the op does not use.
  auto cfg = config_with({{"hardware", {{"cores_per_chip", 1}, {"async_collectives", true}}},
                          {"topology", "2:wrap=0"}});
  Program p;
  p.mesh = {{"all", 2}};
  p.ops.push_back(exchange(64 * 1024));
  Op mm;
  mm.name = "matmul";
  mm.kind = "matmul";
  mm.compute.matmul = MatmulShape{1, 4096, 4096, 4096};
  mm.compute.bytes_read = 2.0 * 2 * 4096 * 4096;
  p.ops.push_back(mm);
  const HardwareSpec hw = HardwareSpec::from_config(cfg);
  const OpTiming t = compute_op_time(hw, mm.compute);
  REQUIRE(t.mxu > t.hbm + (hw.hbm_bandwidth_per_core * hw.hbm_efficiency).time_for(2 * 64 * 1024));
  Run r = simulate_child(p, cfg);
  CHECK(r.step_s == Approx(t.total.seconds()).epsilon(1e-9));
  CHECK(r.compute_slowdown_s == 0);
}

namespace {
/// Step time and the DMA engines' occupancy of the core that finished last.
struct DmaRun {
  double step_s = 0, busy_s = 0, waiting_s = 0, streams = 0, peak = 0;
};
DmaRun simulate_dma(const Program& program, const Config& cfg) {
  auto v = in_child([&] {
    HardwareSpec hw = HardwareSpec::from_config(cfg);
    Topology topo(topology_from_json(cfg.json()["topology"]));
    SimReport r = simulate(program, topo, hw, SimOptions::from_config(cfg));
    return std::vector<double>{r.step_time.seconds(), r.occupancy.dma.seconds(),
                               r.occupancy.dma_waiting.seconds(),
                               static_cast<double>(r.occupancy.dma_streams),
                               static_cast<double>(r.occupancy.dma_peak_in_flight)};
  });
  return {v.at(0), v.at(1), v.at(2), v.at(3), v.at(4)};
}

/// Links only: DMA traffic and reductions free, no link sharing, every ring step played alone.
nlohmann::json links_only(nlohmann::json hardware, const std::string& topology,
                          const std::string& algorithm) {
  hardware["cores_per_chip"] = 1;
  return {{"hardware", hardware},
          {"topology", topology},
          {"network", {{"contention", false}, {"coalesce_ring_steps", false}}},
          {"collectives",
           {{"algorithm", algorithm}, {"reduction_compute", false}, {"dma_hbm_traffic", false}}}};
}
}  // namespace

TEST_CASE("a bidirectional ring's two streams take two DMA engines or two waves of one") {
  // An all-reduce of S over a ring of n: 2 (n-1) steps; in each a member sends S/(2n) each way,
  // one stream per direction, t = S/(2n)/B + L per stream. With two engines (or no limit) both
  // directions go at once: a step is t + O. With one engine they go in two waves: 2 t + O.
  const double S = 1 << 20, n = 8;
  Program ar = one_op(8, collective_op(CollectiveKind::AllReduce, S));
  for (int engines : {0, 2, 1}) {
    auto cfg = config_with(
        links_only({{"dma", {{"engines_per_core", engines}}}}, "8", "bidirectional_ring"));
    const auto p = params_of(cfg);
    const double t = S / (2 * n) / p.B + p.L;
    const double waves = engines == 1 ? 2 : 1;
    const DmaRun r = simulate_dma(ar, cfg);
    CHECK(r.step_s == Approx(2 * (n - 1) * (waves * t + p.O)).epsilon(1e-6));
    // Occupancy: every stream holds an engine for t; the most in flight is what the limit allows.
    CHECK(r.streams == 2 * 2 * (n - 1));
    CHECK(r.busy_s == Approx(r.streams * t).epsilon(1e-6));
    CHECK(r.peak == (engines == 1 ? 1 : 2));
    CHECK(r.waiting_s == 0);  // the second wave follows the first; nothing else waits
  }
}

TEST_CASE("two collectives in flight on a core wait for its one DMA engine") {
  // Async collectives: two exchanges of X between two chips issued together. Without a limit
  // (and without link sharing) they overlap: t + O, t = X/B + L. With one engine per core the
  // second waits t for the first's stream: 2 t + O, and each core reports t of waiting.
  const double X = 1 << 20;
  Program p;
  p.mesh = {{"all", 2}};
  p.ops.push_back(exchange(X));
  p.ops.push_back(exchange(X));
  for (int engines : {0, 1}) {
    auto cfg = config_with(
        links_only({{"async_collectives", true}, {"dma", {{"engines_per_core", engines}}}},
                   "2:wrap=0", "auto"));
    const auto q = params_of(cfg);
    const double t = X / q.B + q.L;
    const DmaRun r = simulate_dma(p, cfg);
    CHECK(r.step_s == Approx((engines == 1 ? 2 * t : t) + q.O).epsilon(1e-6));
    CHECK(r.waiting_s == Approx(engines == 1 ? t : 0).margin(1e-12));
    CHECK(r.peak == (engines == 1 ? 1 : 2));
    CHECK(r.busy_s == Approx(2 * t).epsilon(1e-6));
  }
}
