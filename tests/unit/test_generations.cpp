// The chip-generation presets (configs/tpu_v4.json, tpu_v5p.json, tpu_v5e.json): their figures
// against the public facts of docs/reference.md, TPU v3's calibration inherited but where the chip
// measured its own, and a preset naming an unknown field rejected.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/config.hpp"
#include "core/errors.hpp"
#include "core/hardware.hpp"
#include "core/presets.hpp"
#include "topologies/topology.hpp"

using namespace tpusim;

namespace {
Config generation(const std::string& preset) { return load_config({{"preset", preset}}); }

double chip_peak_flops(const HardwareSpec& h) {
  return h.peak_flops_per_core() * h.devices_per_chip;
}
}  // namespace

TEST_CASE("each generation preset gives its chip's published peak, HBM and ICI per chip") {
  struct Fact {
    const char* preset;
    double tflops, hbm_bytes, hbm_GBps, ici_GBps_per_chip_both_ways;
    int links;
  };
  // docs/reference.md: peak bf16, HBM capacity and bandwidth, ICI per chip (both directions;
  // v4's is given per link, 45 GB/s one way over 6 links).
  const Fact facts[] = {{"tpu_v4", 275, 32 * 1073741824.0, 1200, 45 * 6 * 2, 6},
                        {"tpu_v5p", 459, 95e9, 2765, 1200, 6},
                        {"tpu_v5e", 197, 16e9, 819, 400, 4},
                        {"tpu_v6e", 918, 32e9, 1638, 800, 4}};
  for (const auto& f : facts) {
    INFO(f.preset);
    const Config cfg = generation(f.preset);
    const HardwareSpec h = HardwareSpec::from_config(cfg);
    const Topology topo(topology_from_json(cfg.json().at("topology")));
    CHECK(chip_peak_flops(h) == Approx(f.tflops * 1e12).epsilon(1e-3));
    CHECK(h.hbm_bytes_per_core * h.devices_per_chip == Approx(f.hbm_bytes).epsilon(1e-3));
    CHECK(h.hbm_bandwidth_per_core.bytes_per_s() * h.devices_per_chip ==
          Approx(f.hbm_GBps * 1e9).epsilon(1e-3));
    CHECK(f.links == 2 * topo.num_dims());  // a torus: two links per dimension
    // The link's raw rate; collectives see it at hardware.calibration.ici_efficiency.
    const double efficiency = cfg.number("hardware.calibration.ici_efficiency");
    CHECK(h.ici_bandwidth.bytes_per_s() / efficiency * f.links * 2 ==
          Approx(f.ici_GBps_per_chip_both_ways * 1e9).epsilon(1e-9));
  }
}

TEST_CASE("each generation preset gives its chip's published int8 and fp8 peaks") {
  // shared/reference/llm-on-tpu.md, per chip in TOPS; 0: no published rate (refused).
  const struct {
    const char* preset;
    double int8, fp8;
  } facts[] = {{"tpu_v3", 0, 0},    {"tpu_v4", 275, 0},   {"tpu_v5p", 918, 459},
               {"tpu_v5e", 394, 0}, {"tpu_v6e", 1836, 0}, {"tpu_v7", 0, 4614}};
  for (const auto& f : facts) {
    INFO(f.preset);
    const HardwareSpec h = HardwareSpec::from_config(generation(f.preset));
    CHECK(chip_peak_flops(h) * h.mxu.int8_rate == Approx(f.int8 * 1e12).epsilon(2e-3));
    CHECK(chip_peak_flops(h) * h.mxu.fp8_rate == Approx(f.fp8 * 1e12).epsilon(2e-3));
  }
}

TEST_CASE("the generation presets inherit TPU v3's calibration but what their chip measured") {
  const auto v3 = generation("tpu_v3").json().at("hardware");
  // Every chip preset of the registry (configs/*.json): a new one is checked without a test edit.
  const auto chips = preset_names(PresetKind::Chip);
  REQUIRE(chips.size() >= 5);
  for (const std::string& preset : chips) {
    INFO(preset);
    const auto h = generation(preset).json().at("hardware");
    const auto& calibration = h.at("calibration");
    for (const auto& [key, value] : v3.at("calibration").items()) {
      if (key[0] == '_') continue;
      INFO(key);
      // A key may leave v3's value only where the chip's own measurements set it (v5e's and v7's
      // collective costs, v7's GEMM terms): its note ("_KEY") names the measured points.
      if (calibration.at(key) != value) {
        REQUIRE(calibration.contains("_" + key));
        const auto note = calibration.at("_" + key).get<std::string>();
        CHECK((note.find("all-gather") != std::string::npos ||
               note.find("GEMM") != std::string::npos));
      }
    }
    CHECK(h.at("onchip").at("bandwidth_GBps") == v3.at("onchip").at("bandwidth_GBps"));
  }
}

TEST_CASE("every chip after TPU v3 runs its MXUs at the fraction TPU v7's GEMM measured") {
  // One achievable fraction of the MXU cycle formula for v4 to v7, set by the single kernel that
  // was measured (v7's GEMM at 16384 and 32768: 950 and 956 of 1153.5 TFLOP/s, docs/kernels.md);
  // TPU v3 keeps its end-to-end fit to BERT's step.
  const double v7 =
      generation("tpu_v7").json().at("hardware").at("calibration").at("mxu_efficiency");
  CHECK(v7 == Approx(956.0 / 1153.5).epsilon(0.01));
  for (const std::string& preset : preset_names(PresetKind::Chip)) {
    INFO(preset);
    const double e =
        generation(preset).json().at("hardware").at("calibration").at("mxu_efficiency");
    if (preset == "tpu_v3")
      CHECK(e == 0.62);
    else
      CHECK(e == v7);
  }
}

TEST_CASE("a preset that names an unknown field is an error naming its path") {
  const auto dir =
      std::filesystem::temp_directory_path() / ("tpusim_bad_preset_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tpu_bad.json") << R"({"hardware": {"mxu": {"cout": 4}}})";
  ::setenv("TPUSIM_CONFIG_DIR", dir.c_str(), 1);
  bool threw = false;
  try {
    load_config({{"preset", "tpu_bad"}, {"topology", {{"dims", {2, 2}}}}});
  } catch (const ConfigError& e) {
    threw = true;
    CHECK_THAT(e.what(), Catch::Contains("hardware.mxu.cout"));
  }
  ::unsetenv("TPUSIM_CONFIG_DIR");
  std::filesystem::remove_all(dir);
  CHECK(threw);
}

TEST_CASE("a 3D shape wraps the dimensions of 4 or more chips, as a TPU v4 slice") {
  const Topology cube(parse_topology("4x4x4"));
  CHECK(cube.num_chips() == 64);
  for (int d = 0; d < 3; ++d) CHECK(cube.wraps(d));
  CHECK(cube.num_directed_links() == 64 * 6);  // every chip: both ways along three rings
  const Topology small(parse_topology("2x2x2"));
  for (int d = 0; d < 3; ++d) CHECK_FALSE(small.spec().wrap[d]);
  // No wraps: along each dimension 1 physical link per pair of chips, counted both ways.
  CHECK(small.num_directed_links() == 3 * (8 / 2) * 2);
  const Topology flat(parse_topology("4x4x2"));
  CHECK(flat.spec().wrap == std::vector<bool>{true, true, false});
  CHECK(parse_topology("2x2x2:wrap=1,1,1").wrap == std::vector<bool>{true, true, true});
  CHECK(parse_topology("8x8").wrap == std::vector<bool>{true, true});  // 2D: as before
}

TEST_CASE("the TPU v7 pod preset: 9216 chips in whole 4x4x4 cubes, a wrapped 3D torus") {
  // An Ironwood pod is 9216 chips (Cloud TPU7x pages) built of 64-chip cubes like tpu_v7_64.
  const Config cfg = load_config({{"preset", "tpu_v7"}, {"topology", "tpu_v7_9216"}});
  const Topology pod(topology_from_json(cfg.json().at("topology")));
  const Topology cube(topology_from_json(
      load_config({{"preset", "tpu_v7"}, {"topology", "tpu_v7_64"}}).json().at("topology")));
  CHECK(pod.num_chips() == 9216);
  CHECK(pod.num_chips() % cube.num_chips() == 0);
  REQUIRE(pod.num_dims() == 3);
  for (int d = 0; d < 3; ++d) {
    CHECK(pod.dim(d) % cube.dim(d) == 0);
    CHECK(pod.wraps(d));
  }
  CHECK(pod.num_directed_links() == 9216 * 6);
}

TEST_CASE("a Cloud slice name maps to the standard slice shape") {
  struct Row {
    const char* name;
    std::vector<int> dims;
  };
  // v4 and v5p count TensorCores (2 per chip), v5e chips; the shapes of the rule in
  // topologies/slice_names.hpp.
  const Row rows[] = {
      {"v4-8", {2, 2, 1}},         {"v4-16", {2, 2, 2}},      {"v4-32", {2, 2, 4}},
      {"v4-64", {2, 4, 4}},        {"v4-128", {4, 4, 4}},     {"v4-256", {4, 4, 8}},
      {"v4-1536", {8, 8, 12}},     {"v4-8192", {16, 16, 16}}, {"v5p-12288", {16, 16, 24}},
      {"v4-384", {4, 4, 12}},      {"v5p-768", {4, 8, 12}},   {"v5litepod-8", {2, 4}},
      {"v5litepod-256", {16, 16}}, {"v5e-32", {4, 8}}};
  for (const auto& r : rows) {
    INFO(r.name);
    const TopologySpec s = parse_topology(r.name);
    CHECK(s.dims == r.dims);
    CHECK(s.name == r.name);
  }
  const Topology v4_128(parse_topology("v4-128"));
  CHECK(v4_128.num_chips() == 128 / 2);
  CHECK(v4_128.num_directed_links() == 64 * 6);
  CHECK(parse_topology("v4-8").wrap == std::vector<bool>{false, false, false});
  CHECK(parse_topology("v5litepod-256").wrap == std::vector<bool>{true, true});
  CHECK(parse_topology("v5e-32").wrap == std::vector<bool>{false, false});
  for (const char* bad : {"v4-6", "v4-16384", "v5p-x", "v5litepod-512", "v4-10"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_topology(bad), ConfigError);
  }
}

TEST_CASE("a twisted k x k x 2k torus cuts twice the links of the plain one at its bisection") {
  for (int k : {4, 6}) {
    INFO(k);
    nlohmann::json j{{"dims", {k, k, 2 * k}}, {"wrap", {true, true, true}}};
    const Topology plain(topology_from_json(j));
    j["twist"] = true;
    const Topology twisted(topology_from_json(j));
    // Halving the 2k dimension cuts its k*k rings twice: 2k^2 links. Twisted, the 2 * k * 2k wrap
    // links of the two k dimensions land k chips along it, so they cross that cut too (4k^2 more
    // between them); halving a k dimension cuts its 2k^2 rings twice, 4k^2 either way.
    CHECK(plain.bisection_links() == 2 * k * k);
    CHECK(twisted.bisection_links() == 4 * k * k);
    CHECK(twisted.num_directed_links() == plain.num_directed_links());
    CHECK(twisted.connected());
    for (int c = 0; c < twisted.num_chips(); ++c)
      for (int d = 0; d < 3; ++d) {
        const int n = twisted.neighbor(c, d, +1);
        CHECK(twisted.neighbor(n, d, -1) == c);  // every link has its way back
        CHECK(twisted.hops(c, n) <= static_cast<int>(twisted.route(c, n).size()));
      }
    // A route reaches its destination over existing links.
    const int far = twisted.num_chips() - 1;
    int at = 0;
    for (int slot : twisted.route(0, far)) {
      REQUIRE(twisted.link_exists(slot));
      CHECK(twisted.link(slot).src == at);
      at = twisted.link(slot).dst;
    }
    CHECK(at == far);
  }
  CHECK_THROWS_AS(topology_from_json({{"dims", {4, 4, 4}}, {"twist", true}}), ConfigError);
  CHECK_THROWS_AS(
      topology_from_json({{"dims", {4, 4, 8}}, {"wrap", {true, false, true}}, {"twist", true}}),
      ConfigError);
}

TEST_CASE("a twisted torus routes every pair over a shortest path, the same from every chip") {
  for (int k : {3, 4}) {
    const Topology t(topology_from_json({{"dims", {k, k, 2 * k}}, {"twist", true}}));
    const int n = t.num_chips();
    // Hop distances by breadth-first search over the links, from chip 0.
    std::vector<int> dist(static_cast<std::size_t>(n), -1), queue{0};
    dist[0] = 0;
    for (std::size_t q = 0; q < queue.size(); ++q)
      for (int d = 0; d < 3; ++d)
        for (int dir : {+1, -1}) {
          const int m = t.neighbor(queue[q], d, dir);
          if (dist[m] < 0) dist[m] = dist[queue[q]] + 1, queue.push_back(m);
        }
    for (int src = 0; src < n; ++src)
      for (int dst = 0; dst < n; ++dst) {
        const std::vector<int> r = t.route(src, dst);
        int at = src;
        for (int slot : r) {
          REQUIRE(t.link(slot).src == at);
          at = t.link(slot).dst;
        }
        REQUIRE(at == dst);
        // The torus is a group: src -> dst is the translate of 0 -> the chip at dst - src.
        int rel = dst;
        for (int d = 0; d < 3; ++d) rel = t.translate(rel, d, -t.coord(src, d));
        CHECK(static_cast<int>(r.size()) == dist[rel]);
        CHECK(t.hops(src, dst) == dist[rel]);
        CHECK(t.route_steps(src, dst) == t.route_steps(0, rel));
      }
    // 2k steps along a k-chip dimension come back; k steps land k chips along the long one.
    CHECK(t.translate(0, 0, 2 * k) == 0);
    CHECK(t.translate(0, 0, k) == t.chip_at({0, 0, k}));
  }
}
