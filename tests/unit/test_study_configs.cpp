// The shipped studies in configs/studies load, validate and partition for their topology.
#include <catch2/catch.hpp>
#include <filesystem>

#include "core/config.hpp"
#include "model_study.hpp"

using namespace tpusim;

namespace {
long long mesh_size(const Program& p) {
  long long n = 1;
  for (const auto& a : p.mesh) n *= a.size;
  return n;
}
}  // namespace

TEST_CASE("every shipped study of a registered model builds a Program covering its devices") {
  const auto dir = std::filesystem::path(config_dir()) / "studies";
  const auto models = registered_models();
  int built = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    INFO(entry.path().string());
    const Config cfg = load_config_file(entry.path().string());
    if (std::find(models.begin(), models.end(), cfg.string("workload.model")) == models.end())
      continue;  // a model whose builder lives elsewhere
    const Program p = tpusim::test::program_of(cfg);
    Topology topo(topology_from_json(cfg.json().at("topology")));
    // The mesh covers the devices: a core each, or a chip each in megacore mode.
    CHECK(mesh_size(p) == static_cast<long long>(topo.num_chips()) *
                              HardwareSpec::from_config(cfg).devices_per_chip);
    CHECK(p.examples_per_step == cfg.integer("workload.global_batch"));
    ++built;
  }
  CHECK(built >= 9);
}

TEST_CASE("the 4096-chip BERT study runs one sequence per core with sharded weight updates") {
  const Config cfg = load_config_file(config_dir() + "/studies/bert_large_4096.json");
  const Program p = tpusim::test::program_of(cfg);
  REQUIRE(p.mesh.front().name == "data");
  CHECK(p.mesh.front().size == 8192);
  CHECK(p.examples_per_step == 8192);
  int reduce_scatters = 0;
  for (const auto& op : p.ops)
    reduce_scatters += op.is_collective && op.collective.kind == CollectiveKind::ReduceScatter;
  CHECK(reduce_scatters > 0);
}
