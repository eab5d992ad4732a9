// The chip-generation presets (configs/tpu_v4.json, tpu_v5p.json, tpu_v5e.json): their figures
// against the public facts of docs/reference.md, TPU v3's calibration inherited unchanged, and a
// preset naming an unknown field rejected.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/config.hpp"
#include "core/errors.hpp"
#include "core/hardware.hpp"
#include "topologies/topology.hpp"

using namespace tpusim;

namespace {
Config generation(const std::string& preset) { return load_config({{"preset", preset}}); }

double chip_peak_flops(const HardwareSpec& h) { return h.peak_flops_per_core() * h.cores_per_chip; }
}  // namespace

TEST_CASE("each generation preset gives its chip's published peak, HBM and ICI per chip") {
  struct Fact {
    const char* preset;
    double tflops, hbm_bytes, hbm_GBps, ici_GBps_per_chip_both_ways;
    int links;
  };
  // docs/reference.md: peak bf16, HBM capacity and bandwidth, ICI per chip (both directions).
  const Fact facts[] = {{"tpu_v5p", 459, 95e9, 2765, 1200, 6}, {"tpu_v5e", 197, 16e9, 819, 400, 4}};
  for (const auto& f : facts) {
    INFO(f.preset);
    const Config cfg = generation(f.preset);
    const HardwareSpec h = HardwareSpec::from_config(cfg);
    const Topology topo(topology_from_json(cfg.json().at("topology")));
    CHECK(chip_peak_flops(h) == Approx(f.tflops * 1e12).epsilon(1e-3));
    CHECK(h.hbm_bytes_per_core * h.cores_per_chip == Approx(f.hbm_bytes).epsilon(1e-3));
    CHECK(h.hbm_bandwidth_per_core.bytes_per_s() * h.cores_per_chip ==
          Approx(f.hbm_GBps * 1e9).epsilon(1e-3));
    CHECK(f.links == 2 * topo.num_dims());  // a torus: two links per dimension
    CHECK(h.ici_bandwidth.bytes_per_s() * f.links * 2 ==
          Approx(f.ici_GBps_per_chip_both_ways * 1e9).epsilon(1e-9));
  }
}

TEST_CASE("the generation presets inherit TPU v3's calibration unchanged") {
  const auto v3 = generation("tpu_v3").json().at("hardware");
  for (const char* preset : {"tpu_v4", "tpu_v4_megacore", "tpu_v5p", "tpu_v5e"}) {
    INFO(preset);
    const auto h = generation(preset).json().at("hardware");
    CHECK(h.at("calibration") == v3.at("calibration"));
    CHECK(h.at("onchip").at("bandwidth_GBps") == v3.at("onchip").at("bandwidth_GBps"));
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
