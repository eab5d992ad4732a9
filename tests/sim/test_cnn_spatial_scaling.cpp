// Spatial partitioning on the simulator (the real executor, one child process per run): with the
// images per replica fixed on 64 chips, splitting each image over 2 cores beats not splitting it,
// and the gain per doubling shrinks; it shrinks faster for SSD (300x300, maps down to 38..1 rows)
// than for Mask R-CNN (832x1344, maps of 208..13 rows). Studies: configs/studies/*_spatial_*.json.
#include <catch2/catch.hpp>

#include "models/workload.hpp"
#include "sim_fixture.hpp"

using namespace tpusim;

namespace {

double step_ms(const std::string& study) {
  return test::in_child([&] {
    const Config cfg = load_config_file(config_dir() + "/studies/" + study + ".json");
    Topology topo(topology_from_json(cfg.json().at("topology")));
    const HardwareSpec hw = HardwareSpec::from_config(cfg);
    const Program p = build_program(cfg, topo, hw);
    return std::vector<double>{simulate(p, topo, hw, SimOptions::from_config(cfg)).step_time.ms()};
  })[0];
}

// Parallel efficiency of degree s against s = 1 at the same images per replica:
// T(1) / (s x T(s)); 1 is perfect.
std::vector<double> efficiencies(const std::string& model) {
  const double t1 = step_ms(model + "_spatial_1");
  std::vector<double> e;
  for (int s : {2, 4, 8}) e.push_back(t1 / (s * step_ms(model + "_spatial_" + std::to_string(s))));
  return e;
}

}  // namespace

TEST_CASE("spatial partitioning: 2-way beats unpartitioned and the edge shrinks with the degree") {
  const double mask1 = step_ms("maskrcnn_spatial_1");
  const double mask2 = step_ms("maskrcnn_spatial_2");
  CHECK(mask2 < mask1);  // the large image: splitting it over 2 cores pays

  const auto ssd = efficiencies("ssd");
  const auto mask = efficiencies("maskrcnn");
  INFO("ssd efficiencies " << ssd[0] << " " << ssd[1] << " " << ssd[2]);
  INFO("maskrcnn efficiencies " << mask[0] << " " << mask[1] << " " << mask[2]);
  CHECK(ssd[0] * 2 > 1);  // SSD at 2-way is still faster than unpartitioned...
  for (const auto& e : {ssd, mask}) {
    CHECK(e[0] > e[1]);  // ...but every doubling gains less
    CHECK(e[1] > e[2]);
  }
  // Small feature maps lose the edge sooner than large ones.
  for (int i = 0; i < 3; ++i) CHECK(ssd[i] < mask[i]);
}
