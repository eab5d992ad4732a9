// The SystemC model as its users know it: a memory model plugged into the DMA engines' TLM-2.0
// socket changes a memory-bound op's time by exactly its added latency; the statistics read by
// walking the module tree agree with the report; a run elaborates SystemC objects for the chips
// and cores it simulates only, in a count the module structure gives.
#include <catch2/catch.hpp>
#include <cmath>
#include <systemc>

#include "sim/core/memory.hpp"
#include "sim/core/tensor_core.hpp"
#include "tests/sim/sim_fixture.hpp"

using namespace tpusim;
using namespace tpusim::test;

namespace {

/// A user's memory model: the built-in port, plus bank conflicts. An access of B bytes opens
/// ceil(B / row_bytes) rows spread over `banks` banks in turn; the rows of one bank follow each
/// other a row cycle apart, so the access ends (ceil(rows / banks) - 1) row cycles later than
/// the port alone would end it.
class BankedHbm : public MemoryModel {
 public:
  BankedHbm(sc_core::sc_module_name name, int banks, double row_bytes, Duration row_cycle)
      : MemoryModel(name), banks_(banks), row_bytes_(row_bytes), row_cycle_(row_cycle) {}

  void b_transport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) override {
    const MemoryAccess& a = access_of(payload);
    count_access(a);
    const double rows = std::ceil((a.bytes_read + a.bytes_written) / row_bytes_);
    const Duration conflicts = row_cycle_ * std::max(0.0, std::ceil(rows / banks_) - 1);
    const Duration start = start_of(delay);
    Duration served;
    if (a.uncontended) {
      port.count(a.work);
      served = start + a.work;
    } else {
      served = port.grant(start, a.work);
    }
    annotate(delay, served + a.latency + conflicts);
    payload.set_response_status(tlm::TLM_OK_RESPONSE);
  }

 private:
  int banks_;
  double row_bytes_;
  Duration row_cycle_;
};

constexpr int kBanks = 32;
constexpr double kRowBytes = 2048;
constexpr double kRowCycleNs = 45;

/// Step time of one op reading `bytes` from HBM on a 2x2 machine, with the built-in memory or
/// the banked one.
double memory_bound_step(double bytes, bool banked, bool async) {
  const Config cfg =
      config_with({{"topology", "2x2"}, {"hardware", {{"async_collectives", async}}}});
  return in_child([&] {
    Op op;
    op.name = "read";
    op.kind = "elementwise";
    op.compute.bytes_read = bytes;
    SimOptions options = SimOptions::from_config(cfg);
    if (banked)
      options.memory_model = [](const char* name, const HardwareSpec&) {
        return std::make_unique<BankedHbm>(name, kBanks, kRowBytes, Duration::ns(kRowCycleNs));
      };
    const HardwareSpec hw = HardwareSpec::from_config(cfg);
    Topology topo(topology_from_json(cfg.json()["topology"]));
    const SimReport r = simulate(one_op(4 * hw.devices_per_chip, op), topo, hw, options);
    return std::vector<double>{r.step_time.seconds()};
  })[0];
}
}  // namespace

TEST_CASE("a memory model plugged into the socket adds its bank conflicts to a memory-bound op") {
  for (bool async : {false, true}) {
    INFO("async collectives " << async);
    for (double bytes : {1.0 * (1 << 20), 64.0 * (1 << 20), 3e6}) {
      INFO("bytes " << bytes);
      const double built_in = memory_bound_step(bytes, false, async);
      const double banked = memory_bound_step(bytes, true, async);
      const double rows = std::ceil(bytes / kRowBytes);
      const double conflicts_s = (std::ceil(rows / kBanks) - 1) * kRowCycleNs * 1e-9;
      CHECK(banked - built_in == Approx(conflicts_s).epsilon(1e-9).margin(2e-12));
    }
  }
}

namespace {
std::size_t count_objects(const sc_core::sc_object& o) {
  std::size_t n = 1;
  for (const sc_core::sc_object* c : o.get_child_objects()) n += count_objects(*c);
  return n;
}

/// The model_pairs_4x4 all-reduce (a symmetric run's domain is 2 x 1 chips): {objects the report
/// counts, objects counted here, chips elaborated, TensorCores elaborated}.
std::vector<double> objects(const char* symmetry) {
  return model_pairs_4x4(symmetry, [](const SimReport& r) {
    double counted = 0, chips = 0, cores = 0;
    for (const sc_core::sc_object* o : sc_core::sc_get_top_level_objects())
      counted += static_cast<double>(count_objects(*o));
    for (const sc_core::sc_object* chip : sc_core::sc_find_object("multipod")->get_child_objects())
      if (std::string(chip->basename()).rfind("chip(", 0) == 0) {
        ++chips;
        for (const sc_core::sc_object* c : chip->get_child_objects())
          cores += dynamic_cast<const TensorCore*>(c) != nullptr;
      }
    return std::vector<double>{static_cast<double>(r.systemc_objects), counted, chips, cores};
  });
}
}  // namespace

TEST_CASE("a run elaborates 3 + chips + 10 x cores SystemC objects, for the cores it simulates") {
  // The top: multipod, the event queue and its SC_METHOD. A chip that runs: its module. A core:
  // its module and SC_METHOD, and four sockets of two objects each: its HBM and its vector
  // memory (built-in: each a target socket bound to itself, an sc_export and the port of its
  // backward path), its DMA engines (the initiator socket: an sc_port and the export of its
  // backward path), its ICI port (a target socket). TPU v3 has no CMEM, so no cmem.
  const int cpc =
      static_cast<int>(config_with(nlohmann::json::object()).integer("hardware.cores_per_chip"));
  const auto full = objects("off");
  REQUIRE(full.size() == 4);
  CHECK(full[0] == full[1]);
  CHECK(full[2] == 16);
  CHECK(full[3] == 16 * cpc);
  CHECK(full[0] == 3 + 16 + 10 * 16 * cpc);
  const auto sym = objects("auto");
  REQUIRE(sym.size() == 4);
  CHECK(sym[0] == sym[1]);
  CHECK(sym[2] == 2);  // the domain's chips
  CHECK(sym[3] == 2 * cpc);
  CHECK(sym[0] == 3 + 2 + 10 * 2 * cpc);
}

namespace {
/// On a 2x2 machine, every core: a compute op reading R and writing W bytes, then an all-reduce
/// of S bytes. Returns the sums the statistics give and the report's figures: {sum over cores
/// of bytes read by compute... } as pairs (statistics, report or closed form).
std::vector<double> stats_vs_report(double read, double written, double all_reduce_bytes,
                                    bool direct = true) {
  const Config cfg = config_with({{"topology", "2x2"}, {"sim", {{"symmetry", "off"}}}});
  return in_child([&] {
    const HardwareSpec hw = HardwareSpec::from_config(cfg);
    Topology topo(topology_from_json(cfg.json()["topology"]));
    const int cores = 4 * hw.devices_per_chip;
    Program p;
    p.mesh = {{"all", cores}};
    Op op;
    op.name = "update";
    op.kind = "elementwise";
    op.compute.bytes_read = read;
    op.compute.bytes_written = written;
    p.ops.push_back(op);
    p.ops.push_back(collective_op(CollectiveKind::AllReduce, all_reduce_bytes));
    p.ops.back().deps = {0};
    SimOptions options = SimOptions::from_config(cfg);
    options.stats = true;
    options.link_stats = true;
    options.direct_access = direct;
    const SimReport r = simulate(p, topo, hw, options);
    auto ends_with = [](const std::string& s, const std::string& tail) {
      return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
    };
    double link_bytes = 0, link_busy_ns = 0, hbm_accesses = 0;
    double last_finish = -1;
    std::string last;
    for (const auto& [name, value] : r.stats.values) {
      const bool link =
          name.find(".ici.") != std::string::npos || name.find(".onchip.") != std::string::npos;
      if (link && ends_with(name, ".bytes")) link_bytes += value;
      if (link && ends_with(name, ".busy_ns")) link_busy_ns += value;
      if (ends_with(name, ".hbm.accesses")) hbm_accesses += value;
      if (ends_with(name, ".finish_ns") && value > last_finish) {
        last_finish = value;
        last = name.substr(0, name.size() - std::string(".finish_ns").size());
      }
    }
    auto stat = [&](const std::string& name) {
      for (const auto& [n, v] : r.stats.values)
        if (n == name) return v;
      return -1.0;
    };
    double report_link_busy_ns = 0;
    for (const LinkStat& l : r.link_stats) report_link_busy_ns += l.busy.ns();
    return std::vector<double>{link_bytes,
                               r.links.total_bytes,
                               link_busy_ns,
                               report_link_busy_ns,
                               hbm_accesses,
                               static_cast<double>(cores),
                               last_finish,
                               r.step_time.ns(),
                               stat(last + ".hbm.busy_ns"),
                               r.occupancy.hbm.ns(),
                               stat(last + ".mxu.busy_ns"),
                               r.occupancy.mxu.ns(),
                               stat(last + ".vpu.busy_ns"),
                               r.occupancy.vpu.ns(),
                               stat(last + ".dma.busy_ns"),
                               r.occupancy.dma.ns(),
                               stat(last + ".compute_ns"),
                               r.compute.ns(),
                               stat("multipod.chip(1,1).core1.hbm.bytes_written") -
                                   stat("multipod.chip(1,1).core0.hbm.bytes_written"),
                               0.0};
  });
}
}  // namespace

TEST_CASE("the statistics of the module tree add up to the report") {
  const double read = 8 << 20, written = 2 << 20, s = 16 << 20;
  const auto v = stats_vs_report(read, written, s);
  REQUIRE(v.size() == 20);
  CHECK(v[0] == Approx(v[1]));  // link bytes: every link's, summed, are the report's total
  CHECK(v[0] > 0);
  CHECK(v[2] == Approx(v[3]));  // link busy time: as --links-csv has it
  // One memory access per core for the compute op, and at least one per collective step.
  CHECK(v[4] > v[5]);
  CHECK(v[6] == Approx(v[7]));  // the last core's finish is the step time
  CHECK(v[8] == Approx(v[9]));  // its HBM, MXU, vector-unit and DMA busy times: the occupancy
  CHECK(v[10] == Approx(v[11]));
  CHECK(v[12] == Approx(v[13]));
  CHECK(v[14] == Approx(v[15]));
  CHECK(v[16] == Approx(v[17]));               // its compute time
  CHECK(v[18] == Approx(v[19]).margin(1e-6));  // every core writes as much (a symmetric step)
  // The DMA engines' direct path to the built-in HBM and ICI ports gives what every access and
  // transfer through the sockets gives.
  CHECK(stats_vs_report(read, written, s, false) == v);
}

TEST_CASE("a core's HBM statistics count the bytes of its compute ops") {
  // Only compute ops: each core reads and writes what its ops state, nothing more.
  const Config cfg = config_with({{"topology", "2x2"}});
  const double read = 3 << 20, written = 1 << 20;
  const auto v = in_child([&] {
    const HardwareSpec hw = HardwareSpec::from_config(cfg);
    Topology topo(topology_from_json(cfg.json()["topology"]));
    const int cores = 4 * hw.devices_per_chip;
    Program p;
    p.mesh = {{"all", cores}};
    for (int k = 0; k < 3; ++k) {
      Op op;
      op.name = "op" + std::to_string(k);
      op.kind = "elementwise";
      op.compute.bytes_read = read;
      op.compute.bytes_written = written;
      if (k > 0) op.deps = {k - 1};
      p.ops.push_back(op);
    }
    SimOptions options = SimOptions::from_config(cfg);
    options.stats = true;
    const SimReport r = simulate(p, topo, hw, options);
    double bytes_read = 0, bytes_written = 0, cores_seen = 0;
    for (const auto& [name, value] : r.stats.values) {
      if (name.find(".hbm.bytes_read") != std::string::npos) bytes_read += value, ++cores_seen;
      if (name.find(".hbm.bytes_written") != std::string::npos) bytes_written += value;
    }
    return std::vector<double>{bytes_read, bytes_written, cores_seen};
  });
  REQUIRE(v.size() == 3);
  CHECK(v[0] == Approx(3 * read * v[2]));
  CHECK(v[1] == Approx(3 * written * v[2]));
  CHECK(v[2] > 0);
}

namespace {
/// A user's CMEM: each access takes a latency plus its bytes at a bandwidth.
class SlowCmem : public MemoryModel {
 public:
  SlowCmem(sc_core::sc_module_name name, Duration latency, double bytes_per_s)
      : MemoryModel(name), latency_(latency), bytes_per_s_(bytes_per_s) {}
  void b_transport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) override {
    const MemoryAccess& a = access_of(payload);
    count_access(a);
    annotate(delay, start_of(delay) + latency_ +
                        Duration::seconds((a.bytes_read + a.bytes_written) / bytes_per_s_));
    payload.set_response_status(tlm::TLM_OK_RESPONSE);
  }

 private:
  Duration latency_;
  double bytes_per_s_;
};

constexpr double kCmemLatencyNs = 120;
constexpr double kCmemBytesPerS = 400e9;

/// One op whose `cmem` bytes the compiler placed in CMEM, on a 2x2 machine of chips with CMEM:
/// {step time, CMEM bytes read and written summed over the cores' statistics, CMEM accesses
/// summed, cores}.
std::vector<double> cmem_step(double cmem, bool plugged, bool async) {
  const Config cfg =
      config_with({{"topology", "2x2"},
                   {"sim", {{"symmetry", "off"}}},
                   {"hardware", {{"async_collectives", async}, {"cmem", {{"MiB_per_chip", 64}}}}}});
  return in_child([&] {
    Op op;
    op.name = "cmem";
    op.kind = "elementwise";
    op.cmem_bytes = cmem;
    SimOptions options = SimOptions::from_config(cfg);
    options.stats = true;
    if (plugged)
      options.cmem_model = [](const char* name, const HardwareSpec&) {
        return std::make_unique<SlowCmem>(name, Duration::ns(kCmemLatencyNs), kCmemBytesPerS);
      };
    const HardwareSpec hw = HardwareSpec::from_config(cfg);
    Topology topo(topology_from_json(cfg.json()["topology"]));
    const int cores = 4 * hw.devices_per_chip;
    const SimReport r = simulate(one_op(cores, op), topo, hw, options);
    std::vector<double> v{r.step_time.seconds(), 0, 0, 0, static_cast<double>(cores)};
    for (const auto& [name, value] : r.stats.values) {
      if (name.find(".cmem.bytes_read") != std::string::npos) v[1] += value;
      if (name.find(".cmem.bytes_written") != std::string::npos) v[2] += value;
      if (name.find(".cmem.accesses") != std::string::npos) v[3] += value;
    }
    return v;
  });
}
}  // namespace

TEST_CASE("a CMEM model plugged into its socket holds an op by its latency and bandwidth") {
  const double cmem = 24 << 20;
  for (bool async : {false, true}) {
    INFO("async collectives " << async);
    const auto built_in = cmem_step(cmem, false, async);
    const auto slow = cmem_step(cmem, true, async);
    REQUIRE(built_in.size() == 5);
    REQUIRE(slow.size() == 5);
    // The built-in CMEM takes no time of its own; the model's access ends L + bytes / bandwidth
    // after the op starts, and the op one op overhead after that.
    CHECK(slow[0] - built_in[0] ==
          Approx(kCmemLatencyNs * 1e-9 + cmem / kCmemBytesPerS).epsilon(1e-9).margin(2e-12));
    // Each core's CMEM statistics hold the op's CMEM bytes, in one access (as bytes_read: the
    // compiler keeps one figure per op).
    for (const auto& v : {built_in, slow}) {
      CHECK(v[1] + v[2] == Approx(v[4] * cmem));
      CHECK(v[3] == v[4]);
    }
  }
}

namespace {
/// Chip 0 of a line of 4 one-core chips sends `bytes` to chip `to` at a network level: {the
/// sender's ICI transfer time, the bytes every ICI port sent, summed, the links' bytes, the
/// ports' transfers, summed}.
std::vector<double> ici_send(const char* fidelity, int to, double bytes, bool direct) {
  const Config cfg = line_cfg(fidelity, 4);
  return in_child([&] {
    SimOptions options = SimOptions::from_config(cfg);
    options.stats = true;
    options.direct_access = direct;
    const HardwareSpec hw = HardwareSpec::from_config(cfg);
    Topology topo(topology_from_json(cfg.json()["topology"]));
    const SimReport r = simulate(one_op(4, send(0, to, 4, bytes)), topo, hw, options);
    std::vector<double> v{0, 0, r.links.total_bytes, 0};
    for (const auto& [name, value] : r.stats.values) {
      if (name.find("chip(0).core0.ici.transfer_ns") != std::string::npos) v[0] = value * 1e-9;
      if (name.find(".ici.bytes_sent") != std::string::npos) v[1] += value;
      if (name.find(".ici.transfers") != std::string::npos) v[3] += value;
    }
    return v;
  });
}
}  // namespace

TEST_CASE("a transfer through a core's ICI port takes its route's closed form at every level") {
  // One stream of S bytes over h hops: the last byte leaves S / B after the first, and each
  // hop adds its latency; the message level pipelines chunks of C over the hops, the flow and
  // packet levels packets of P: S / B + (h - 1) x unit / B + h x L.
  const double S = 2.0 * 1024 * 1024;
  for (const char* level : {"message", "flow", "packet"}) {
    const Config cfg = line_cfg(level, 4);
    const Params p = params_of(cfg);
    const double unit = std::string(level) == "message"
                            ? p.C
                            : static_cast<double>(cfg.integer("network.packet_bytes"));
    for (int h : {1, 3}) {
      INFO(level << ", " << h << " hops");
      const auto v = ici_send(level, h, S, true);
      REQUIRE(v.size() == 4);
      CHECK(v[0] == Approx(S / p.B + (h - 1) * unit / p.B + h * p.L).epsilon(1e-6));
      CHECK(v[1] == Approx(S));      // the port counts the stream once
      CHECK(v[2] == Approx(h * S));  // the links once per hop
      CHECK(v[3] == 1);
      CHECK(ici_send(level, h, S, false) == v);  // through the sockets: the same
    }
  }
}

namespace {
/// A user's vector memory (VMEM): every access takes a fixed latency from its start.
class SlowVmem : public MemoryModel {
 public:
  SlowVmem(sc_core::sc_module_name name, Duration latency) : MemoryModel(name), latency_(latency) {}
  void b_transport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) override {
    count_access(access_of(payload));
    annotate(delay, start_of(delay) + latency_);
    payload.set_response_status(tlm::TLM_OK_RESPONSE);
  }

 private:
  Duration latency_;
};

constexpr double kVmemLatencyNs = 35;

/// One memory-bound op reading `read` and writing `written` bytes of HBM on every core of a 2x2
/// machine: {step time, then summed over the cores' statistics: VMEM bytes read, VMEM bytes
/// written, VMEM accesses, HBM bytes read, HBM bytes written; cores}.
std::vector<double> vmem_step(double read, double written, bool plugged, bool async, bool direct) {
  const Config cfg = config_with({{"topology", "2x2"},
                                  {"sim", {{"symmetry", "off"}}},
                                  {"hardware", {{"async_collectives", async}}}});
  return in_child([&] {
    Op op;
    op.name = "read";
    op.kind = "elementwise";
    op.compute.bytes_read = read;
    op.compute.bytes_written = written;
    SimOptions options = SimOptions::from_config(cfg);
    options.stats = true;
    options.direct_access = direct;
    if (plugged)
      options.vmem_model = [](const char* name, const HardwareSpec&) {
        return std::make_unique<SlowVmem>(name, Duration::ns(kVmemLatencyNs));
      };
    const HardwareSpec hw = HardwareSpec::from_config(cfg);
    Topology topo(topology_from_json(cfg.json()["topology"]));
    const int cores = 4 * hw.devices_per_chip;
    const SimReport r = simulate(one_op(cores, op), topo, hw, options);
    std::vector<double> v{r.step_time.seconds(), 0, 0, 0, 0, 0, static_cast<double>(cores)};
    const char* tails[] = {".vmem.bytes_read", ".vmem.bytes_written", ".vmem.accesses",
                           ".hbm.bytes_read", ".hbm.bytes_written"};
    for (const auto& [name, value] : r.stats.values)
      for (int k = 0; k < 5; ++k)
        if (name.find(tails[k]) != std::string::npos) v[1 + k] += value;
    return v;
  });
}
}  // namespace

TEST_CASE("a VMEM model plugged into its socket holds a memory-bound op by its latency") {
  const double read = 6 << 20, written = 2 << 20;
  for (bool async : {false, true}) {
    INFO("async collectives " << async);
    const auto built_in = vmem_step(read, written, false, async, true);
    const auto slow = vmem_step(read, written, true, async, true);
    REQUIRE(built_in.size() == 7);
    REQUIRE(slow.size() == 7);
    // The built-in VMEM takes no time of its own (the cost model gives it none); the model's
    // access starts when the HBM access is through and ends L later, the op one op overhead
    // after that: a memory-bound op takes exactly L longer.
    CHECK(slow[0] - built_in[0] == Approx(kVmemLatencyNs * 1e-9).epsilon(1e-9).margin(2e-12));
    for (const auto& v : {built_in, slow}) {
      const double cores = v[6];
      // What HBM gives lands in VMEM, what HBM takes leaves from it: one access per op and core.
      CHECK(v[2] == Approx(cores * read));
      CHECK(v[1] == Approx(cores * written));
      CHECK(v[4] == Approx(v[2]));
      CHECK(v[5] == Approx(v[1]));
      CHECK(v[3] == cores);
    }
    // Every access through the sockets (no direct path to the built-in): the same.
    CHECK(vmem_step(read, written, false, async, false) == built_in);
  }
}
