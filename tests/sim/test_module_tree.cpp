// The SystemC module tree reads as the hardware: multipod.chip(x,y) per chip, each with its
// TensorCores (core0, core1, each with its memory hbm, its ICI port ici and its DMA engines dma,
// joined by TLM-2.0 sockets); the links are named as their place in it (multipod.chip(x,y).ici.x+,
// ...: the names of their statistics). The expected names come from the grid and the config. A
// symmetric run elaborates only the chips and TensorCores of its domain.
#include <catch2/catch.hpp>
#include <cstdio>
#include <set>
#include <systemc>

#include "sim/core/tensor_core.hpp"
#include "tests/sim/sim_fixture.hpp"

using namespace tpusim;
using namespace tpusim::test;

namespace {
void walk(const sc_core::sc_object* o, std::set<std::string>& names) {
  names.insert(o->name());
  for (const sc_core::sc_object* c : o->get_child_objects()) walk(c, names);
}
/// The ICI ports chip (x, y) of an X x Y grid has: one per direction with a neighbour (a
/// dimension of more than two chips wraps round in a torus; one of two never does).
std::vector<std::string> ports_of(int x, int y, int X, int Y, bool torus) {
  std::vector<std::string> out;
  auto add = [&](int c, int n, const char* dim) {
    const bool ring = torus && n > 2;
    if (ring || c + 1 < n) out.push_back(std::string(dim) + "+");
    if (ring || c > 0) out.push_back(std::string(dim) + "-");
  };
  add(x, X, "x");
  add(y, Y, "y");
  return out;
}

std::string chip_name(int x, int y) {
  return "chip(" + std::to_string(x) + "," + std::to_string(y) + ")";
}

/// Children of `parent` whose base name starts with `prefix`.
int children_named(const sc_core::sc_object* parent, const std::string& prefix) {
  int n = 0;
  for (const sc_core::sc_object* c : parent->get_child_objects())
    n += std::string(c->basename()).rfind(prefix, 0) == 0;
  return n;
}
/// Simulates one all-reduce on an X x Y grid, every core (sim.symmetry=off), and walks the module
/// tree and the statistics: the number of top-level modules named multipod, the expected names
/// missing (`must` and every chip's cores with their memory, DMA engines and sockets, and the
/// statistics of its ICI ports and on-chip links), then per chip (x fastest) its cores and ICI
/// ports.
std::vector<double> walk_tree(const std::string& topology, int X, int Y, bool torus,
                              const std::vector<std::string>& must) {
  const Config cfg = config_with({{"topology", topology}, {"sim", {{"symmetry", "off"}}}});
  const int cpc = static_cast<int>(cfg.integer("hardware.cores_per_chip"));
  return in_child([&] {
    Topology topo(topology_from_json(cfg.json()["topology"]));
    SimOptions options = SimOptions::from_config(cfg);
    options.stats = true;
    const SimReport r =
        simulate(one_op(X * Y * cpc, collective_op(CollectiveKind::AllReduce, 1 << 20)), topo,
                 HardwareSpec::from_config(cfg), options);
    std::set<std::string> names;
    for (const auto& [name, value] : r.stats.values) names.insert(name);
    double multipods = 0;
    const sc_core::sc_object* multipod = nullptr;
    for (const sc_core::sc_object* o : sc_core::sc_get_top_level_objects()) {
      walk(o, names);
      if (std::string(o->name()) == "multipod") ++multipods, multipod = o;
    }
    std::vector<std::string> expected = must;
    for (int y = 0; y < Y; ++y)
      for (int x = 0; x < X; ++x) {
        const std::string chip = "multipod." + chip_name(x, y);
        for (int k = 0; k < cpc; ++k)
          for (const char* part : {"hbm", "hbm.bytes_read", "vmem", "vmem.bytes_written", "dma",
                                   "dma.streams", "ici", "ici.bytes_sent"})
            expected.push_back(chip + ".core" + std::to_string(k) + "." + part);
        for (const auto& port : ports_of(x, y, X, Y, torus))
          expected.push_back(chip + ".ici." + port + ".bytes");
        for (int a = 0; a < cpc; ++a)
          for (int b = 0; b < cpc; ++b)
            if (a != b)
              expected.push_back(chip + ".onchip." + std::to_string(a) + "to" + std::to_string(b) +
                                 ".bytes");
      }
    double missing = 0;
    for (const auto& e : expected) missing += names.count(e) == 0;
    std::vector<double> out = {multipods, missing};
    if (!multipod) return out;
    for (int y = 0; y < Y; ++y)
      for (int x = 0; x < X; ++x)
        for (const sc_core::sc_object* chip : multipod->get_child_objects()) {
          if (std::string(chip->basename()) != chip_name(x, y)) continue;
          out.push_back(children_named(chip, "core"));
          const std::string ici = std::string(chip->name()) + ".ici.";
          double ports = 0;
          for (const auto& [name, value] : r.stats.values)
            ports += name.rfind(ici, 0) == 0 && name.size() > 6 &&
                     name.compare(name.size() - 6, 6, ".bytes") == 0;
          out.push_back(ports);
        }
    return out;
  });
}

void check_tree(const std::vector<double>& v, int X, int Y, bool torus, int devices_per_chip) {
  REQUIRE(v.size() == static_cast<std::size_t>(2 + 2 * X * Y));
  CHECK(v[0] == 1);
  CHECK(v[1] == 0);
  for (int y = 0; y < Y; ++y)
    for (int x = 0; x < X; ++x) {
      INFO(chip_name(x, y));
      const int c = y * X + x;
      CHECK(v[2 + 2 * c] == devices_per_chip);
      CHECK(v[3 + 2 * c] == static_cast<double>(ports_of(x, y, X, Y, torus).size()));
    }
}
}  // namespace

TEST_CASE(
    "the module tree of a 2x2 machine is multipod with its chips and their cores and ICI ports") {
  // On 2x2 every chip has 2 cores and an ICI port towards each of its two neighbours.
  const int cpc =
      static_cast<int>(config_with(nlohmann::json::object()).integer("hardware.cores_per_chip"));
  REQUIRE(cpc == 2);
  const auto v = walk_tree(
      "2x2", 2, 2, false,
      {"multipod.chip(1,0).core1.hbm", "multipod.chip(0,1).ici.y-.busy_ns",
       "multipod.chip(1,0).core1.hbm.bytes_read", "multipod.chip(0,0).core0.dma.streams"});
  check_tree(v, 2, 2, false, cpc);
}

TEST_CASE("on a 4x4 torus every chip of the module tree has 2 cores and 4 ICI ports") {
  const int cpc =
      static_cast<int>(config_with(nlohmann::json::object()).integer("hardware.cores_per_chip"));
  const auto v = walk_tree("4x4", 4, 4, true, {"multipod.chip(3,0).ici.x+.transfers"});
  check_tree(v, 4, 4, true, cpc);
  for (int c = 0; c < 16; ++c) CHECK(v[3 + 2 * c] == 4);
}

namespace {
/// Simulates an all-reduce over model groups of two chips along X on a 4x4 torus (per-dimension
/// rings; `symmetry`: sim.symmetry) and counts the TensorCores elaborated under multipod:
/// {cores simulated and cores of the machine as the report states them (symmetric: "N of M
/// cores simulated (a domain of P x Q chips)"; full: 0 and 0), P, Q, TensorCores elaborated,
/// those on a chip of the domain (x < P, y < Q), the machine's cores}.
std::vector<double> count_cores(const char* symmetry) {
  return model_pairs_4x4(symmetry, [](const SimReport& r) {
    int simulated = 0, total = 0, px = 0, py = 0;
    if (std::sscanf(r.symmetry.c_str(),
                    "symmetric: %d of %d cores simulated (a domain of %d x %d chips)", &simulated,
                    &total, &px, &py) != 4)
      simulated = total = px = py = 0;
    double elaborated = 0, in_domain = 0;
    const sc_core::sc_object* multipod = sc_core::sc_find_object("multipod");
    for (const sc_core::sc_object* chip : multipod->get_child_objects())
      for (const sc_core::sc_object* c : chip->get_child_objects()) {
        if (!dynamic_cast<const TensorCore*>(c)) continue;
        ++elaborated;
        int x = -1, y = -1;
        if (std::sscanf(chip->basename(), "chip(%d,%d)", &x, &y) == 2 && x < px && y < py)
          ++in_domain;
      }
    return std::vector<double>{static_cast<double>(simulated),
                               static_cast<double>(total),
                               static_cast<double>(px),
                               static_cast<double>(py),
                               elaborated,
                               in_domain,
                               static_cast<double>(r.cores)};
  });
}
}  // namespace

TEST_CASE("a symmetric run elaborates the TensorCores of its domain and no others") {
  // Model groups of two chips along X map onto themselves under shifts by 2 along X and by 1
  // along Y: a domain of 2 x 1 chips, its 2 x devices_per_chip cores of the 16 chips' cores.
  const int cpc =
      static_cast<int>(config_with(nlohmann::json::object()).integer("hardware.cores_per_chip"));
  const auto v = count_cores("auto");
  REQUIRE(v.size() == 7);
  CHECK(v[2] == 2);
  CHECK(v[3] == 1);
  CHECK(v[0] == v[2] * v[3] * cpc);  // the report's count is the domain's chips' cores
  CHECK(v[1] == 16 * cpc);
  CHECK(v[6] == 16 * cpc);
  CHECK(v[4] == v[0]);  // as many TensorCores as cores simulated
  CHECK(v[5] == v[0]);  // and each on a chip of the domain
}

TEST_CASE("a full run elaborates the TensorCore of every core") {
  const int cpc =
      static_cast<int>(config_with(nlohmann::json::object()).integer("hardware.cores_per_chip"));
  const auto v = count_cores("off");
  REQUIRE(v.size() == 7);
  CHECK(v[0] == 0);  // the report says full
  CHECK(v[6] == 16 * cpc);
  CHECK(v[4] == 16 * cpc);
}
