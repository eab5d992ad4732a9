// The convolutional studies in configs/studies hold the MLPerf layouts of the reference table.
#include <catch2/catch.hpp>

#include "core/config.hpp"
#include "model_study.hpp"
#include "topologies/device_mesh.hpp"

using namespace tpusim;

namespace {

Config study(const std::string& name) {
  return load_config_file(config_dir() + "/studies/" + name + ".json");
}

int axis(const Program& p, const std::string& name) {
  for (const auto& a : p.mesh)
    if (a.name == name) return a.size;
  return 1;
}

int cores_of(const Config& cfg) {
  Topology topo(topology_from_json(cfg.json().at("topology")));
  return topo.num_chips() * HardwareSpec::from_config(cfg).devices_per_chip;  // devices
}

// Images one replica processes: global batch / data replicas.
long long replica_batch(const Config& cfg, const Program& p) {
  return cfg.integer("workload.global_batch") / (axis(p, "data") * axis(p, "bn"));
}

}  // namespace

TEST_CASE("resnet50_4096: 8 images per core, BN groups of 8 cores") {
  const Config cfg = study("resnet50_4096");
  const Program p = test::program_of(cfg);
  CHECK(cores_of(cfg) == 8192);
  CHECK(replica_batch(cfg, p) == 8);
  CHECK(axis(p, "bn") == 8);
  CHECK(axis(p, "spatial") == 1);
  CHECK(p.ops.size() < 3000);
}

TEST_CASE("ResNet-50 scaling studies use the reference table's chips and batches") {
  const std::pair<int, long long> points[] = {{16, 4096},   {64, 16384},  {128, 32768},
                                              {256, 32768}, {512, 32768}, {1024, 32768}};
  for (const auto& [chips, batch] : points) {
    const Config cfg = study("resnet50_" + std::to_string(chips));
    INFO(chips);
    CHECK(cores_of(cfg) == 2 * chips);
    CHECK(cfg.integer("workload.global_batch") == batch);
    CHECK(test::program_of(cfg).examples_per_step == batch);
  }
}

TEST_CASE("ssd_4096 and ssd_2048: spatial 8 and 4, 4 images per replica, BN over 16 cores") {
  for (const auto& [name, spatial] :
       {std::pair<std::string, int>{"ssd_4096", 8}, {"ssd_2048", 4}}) {
    INFO(name);
    const Config cfg = study(name);
    const Program p = test::program_of(cfg);
    CHECK(axis(p, "spatial") == spatial);
    CHECK(replica_batch(cfg, p) == 4);
    CHECK(axis(p, "bn") * spatial == 16);
    CHECK(p.ops.size() < 3000);
  }
  const Program wus = test::program_of(study("ssd_2048"));
  int scatters = 0;
  for (const auto& op : wus.ops)
    scatters += op.is_collective && op.collective.kind == CollectiveKind::ReduceScatter;
  CHECK(scatters > 0);
}

TEST_CASE("maskrcnn_512: 512 chips, spatial 8, 2 images per replica") {
  const Config cfg = study("maskrcnn_512");
  const Program p = test::program_of(cfg);
  CHECK(cores_of(cfg) == 1024);
  CHECK(axis(p, "spatial") == 8);
  CHECK(replica_batch(cfg, p) == 2);
  CHECK(p.ops.size() < 3000);
}

TEST_CASE("the spatial sweeps keep the chips and the images per replica and vary only the degree") {
  for (const std::string model : {"ssd", "maskrcnn"}) {
    long long per_replica = -1;
    for (int s : {1, 2, 4, 8}) {
      INFO(model << " spatial " << s);
      const Config cfg = study(model + "_spatial_" + std::to_string(s));
      const Program p = test::program_of(cfg);
      CHECK(cores_of(cfg) == 128);
      CHECK(axis(p, "spatial") == s);
      if (per_replica < 0) per_replica = replica_batch(cfg, p);
      CHECK(replica_batch(cfg, p) == per_replica);
    }
  }
}

TEST_CASE("the v0.6 detection studies hold the reference rows' chips and batches") {
  // The reference page's MLPerf v0.6 rows: chips, global batch.
  for (const auto& [name, chips, batch] :
       std::vector<std::tuple<std::string, int, int>>{{"ssd_v06_16", 16, 1024},
                                                      {"ssd_v06_64", 64, 1024},
                                                      {"ssd_v06_128", 128, 1024},
                                                      {"ssd_v06_256", 256, 2048},
                                                      {"ssd_v06_512", 512, 2048},
                                                      {"ssd_v06_1024", 1024, 2048},
                                                      {"maskrcnn_v06_16", 16, 128},
                                                      {"maskrcnn_v06_64", 64, 128},
                                                      {"maskrcnn_v06_128", 128, 128}}) {
    INFO(name);
    const Config cfg = study(name);
    const Program p = test::program_of(cfg);
    CHECK(cores_of(cfg) == 2 * chips);
    CHECK(p.examples_per_step == batch);
    // Mask R-CNN's variables are f32, so its gradient sync is f32.
    if (name.rfind("maskrcnn", 0) == 0)
      for (const auto& op : p.ops)
        if (op.is_collective && op.name.rfind("grad.bucket", 0) == 0)
          CHECK(op.collective.dtype == DType::F32);
  }
}
