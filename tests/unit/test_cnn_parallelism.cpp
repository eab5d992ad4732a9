// Spatial partitioning and cross-replica batch norm of the convolutional models: halo exchanges
// from kernel, width, channels and dtype; padded row shards; the BN all-reduce's group; layout
// errors naming their JSON path.
#include <algorithm>
#include <catch2/catch.hpp>

#include "core/errors.hpp"
#include "model_study.hpp"
#include "models/parallelism/spatial.hpp"
#include "topologies/device_mesh.hpp"

using namespace tpusim;
using tpusim::test::graph_of;
using tpusim::test::model_study;
using tpusim::test::program_of;

namespace {

const Op* find_op(const Program& p, const std::string& name) {
  for (const auto& op : p.ops)
    if (op.name == name) return &op;
  return nullptr;
}

std::vector<const Op*> ops_ending(const Program& p, const std::string& suffix) {
  std::vector<const Op*> out;
  for (const auto& op : p.ops)
    if (op.name.size() >= suffix.size() &&
        op.name.compare(op.name.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(&op);
  return out;
}

// The ConfigError's first problem path, or "" if `f` does not throw one.
template <class F>
std::string error_path(F f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.problems().front().where;
  }
  return "";
}

}  // namespace

TEST_CASE("halo bytes: kernel/2 rows x width x channels x images x dtype bytes per side") {
  CHECK(halo_bytes(1, 75, 64, 4, DType::BF16) == 1 * 75 * 64 * 4 * 2);
  CHECK(halo_bytes(3, 150, 12, 2, DType::F32) == 3 * 150 * 12 * 2 * 4);
}

TEST_CASE(
    "a spatially split 3x3 conv exchanges one row each way before it runs, forward and backward") {
  // 2x2 chips = 8 cores, spatial 4: 2 replicas of 4 images each.
  auto cfg = model_study("ssd", "2x2", 8, {{"spatial", 4}});
  const Program p = program_of(cfg);
  // backbone.stage2.0.conv1: 3x3 conv on the 75x75x64 map after the stem.
  const double side = 1.0 * 75 * 64 * 4 * 2;
  for (const std::string name : {"backbone.stage2.0.conv1", "backbone.stage2.0.conv1.bwd_input"}) {
    INFO(name);
    const Op* conv = find_op(p, name);
    REQUIRE(conv);
    for (int shift : {+1, -1}) {
      const Op* halo = find_op(p, name + ".halo" + (shift > 0 ? "+1" : "-1"));
      REQUIRE(halo);
      CHECK(halo->collective.kind == CollectiveKind::CollectivePermute);
      CHECK(halo->collective.shift == shift);
      CHECK(halo->collective.axes == std::vector<std::string>{"spatial"});
      CHECK(halo->collective.bytes == side);
      const int index = static_cast<int>(halo - p.ops.data());
      CHECK(std::find(conv->deps.begin(), conv->deps.end(), index) != conv->deps.end());
    }
  }
  // 1x1 convs and weight gradients exchange nothing.
  CHECK(find_op(p, "backbone.stage3.0.shortcut.halo+1") == nullptr);
  CHECK(find_op(p, "backbone.stage2.0.conv1.bwd_weight.halo+1") == nullptr);
  // The 7x7 stem on the image (no space-to-depth) sends 3 rows of 300 x 3 channels.
  auto plain = model_study("ssd", "2x2", 8, {{"spatial", 4}}, {{"space_to_depth", false}});
  const Program plain_program = program_of(plain);
  const Op* stem_halo = find_op(plain_program, "stem.conv.halo+1");
  REQUIRE(stem_halo);
  CHECK(stem_halo->collective.bytes == 3.0 * 300 * 3 * 4 * 2);
}

TEST_CASE("without spatial partitioning there are no halo exchanges") {
  const Program p = program_of(model_study("ssd", "2x2", 8));
  for (const auto& op : p.ops) CHECK(op.collective.kind != CollectiveKind::CollectivePermute);
}

TEST_CASE("row shards are padded: a degree that does not divide a map's rows costs whole rows") {
  // spatial 8 on 2x2 chips: one replica of 8 images.
  const Program p = program_of(model_study("ssd", "2x2", 8, {{"spatial", 8}}));
  const Op* big = find_op(p, "head.0.class");  // 38 rows: 5 per core (40 with padding)
  REQUIRE(big);
  CHECK(big->compute.matmul->m == 8 * 5 * 38);
  const Op* small = find_op(p, "extra.3.conv3x3");  // 3 rows: 1 per core, 5 cores idle
  REQUIRE(small);
  CHECK(small->compute.matmul->m == 8 * 1 * 3);
  // So the per-core FLOPs of the whole step exceed 1/8 of the replica's.
  const OpGraph g = graph_of(model_study("ssd", "2x2", 8), 8);
  CHECK(test::sum_flops(p) * 8 > g.total_flops());
}

TEST_CASE("when the degree divides every map, per-core FLOPs x spatial cores equal the replica's") {
  // ResNet-50 at 256x256 without space-to-depth: maps of 128, 64, 32, 16, 8 rows; 8 divides all.
  auto cfg = model_study("resnet50", "2x2", 8, {{"spatial", 8}},
                         {{"image_size", 256}, {"space_to_depth", false}});
  double conv_flops = 0;
  for (const auto& op : program_of(cfg).ops)
    if (!op.is_collective && op.kind == "conv") conv_flops += op.compute.flops;
  const OpGraph g = graph_of(cfg, 8);
  double graph_conv = 0;
  for (int v = 0; v < g.size(); ++v)
    if (g.node(v).kind == OpKind::Conv) graph_conv += g.node(v).flops;
  CHECK(conv_flops * 8 == Approx(graph_conv).epsilon(1e-12));
}

TEST_CASE("the batch-norm all-reduce spans the configured group of neighbouring cores") {
  // 4x4 chips = 32 cores, 8 images per core, BN groups of 8 cores.
  auto cfg = model_study("resnet50", "4x4", 256, {{"bn_group_cores", 8}});
  const Program p = program_of(cfg);
  REQUIRE(p.mesh.size() == 3);
  CHECK(p.mesh[0].name == "data");
  CHECK(p.mesh[0].size == 4);
  CHECK(p.mesh[1].name == "bn");
  CHECK(p.mesh[1].size == 8);
  const auto stats = ops_ending(p, ".bn.stats.all-reduce");
  const auto grads = ops_ending(p, ".bn.stats.bwd.all-reduce");
  CHECK(stats.size() == 53);  // one per conv of ResNet-50
  CHECK(grads.size() == stats.size());
  for (const Op* op : stats) CHECK(op->collective.axes == std::vector<std::string>{"bn"});
  // stage4's last conv3 has 2048 channels: sum and sum of squares in f32.
  CHECK(find_op(p, "stage4.2.conv3.bn.stats.all-reduce")->collective.bytes == 2 * 2048 * 4);
  // The group is 8 consecutive cores: 4 neighbouring chips of the 4x4 grid.
  Topology topo(topology_from_json(cfg.json().at("topology")));
  DeviceMesh mesh(topo, 2, p.mesh);
  const auto groups = mesh.groups({"bn"});
  CHECK(groups.size() == 4);
  for (const auto& group : groups) {
    CHECK(group.size() == 8);
    for (std::size_t i = 1; i < group.size(); ++i)
      CHECK(group[i] == group[0] + static_cast<int>(i));
  }
  // Gradients are still summed over every replica.
  for (const Op* op : ops_ending(p, ".all-reduce"))
    if (op->name.rfind("grad.bucket", 0) == 0)
      CHECK(op->collective.axes == std::vector<std::string>{"data", "bn"});
}

TEST_CASE(
    "with spatial partitioning the BN statistics are reduced over the image's cores and the "
    "group") {
  // 32 cores, spatial 4: 8 replicas; BN groups of 16 cores = 4 replicas.
  auto cfg = model_study("ssd", "4x4", 32, {{"spatial", 4}, {"bn_group_cores", 16}});
  const Program p = program_of(cfg);
  const auto stats = ops_ending(p, ".bn.stats.all-reduce");
  REQUIRE(!stats.empty());
  for (const Op* op : stats)
    CHECK(op->collective.axes == std::vector<std::string>{"bn", "spatial"});
  Topology topo(topology_from_json(cfg.json().at("topology")));
  DeviceMesh mesh(topo, 2, p.mesh);
  for (const auto& group : mesh.groups({"bn", "spatial"})) CHECK(group.size() == 16);
  // Local batch norm with spatial partitioning: only the image's cores.
  const Program local = program_of(model_study("ssd", "4x4", 32, {{"spatial", 4}}));
  for (const Op* op : ops_ending(local, ".bn.stats.all-reduce"))
    CHECK(op->collective.axes == std::vector<std::string>{"spatial"});
  // Neither: no BN all-reduce at all.
  CHECK(ops_ending(program_of(model_study("ssd", "4x4", 32)), ".bn.stats.all-reduce").empty());
}

TEST_CASE("weight-update sharding combines with spatial partitioning and BN groups") {
  auto cfg = model_study(
      "ssd", "4x4", 32, {{"spatial", 4}, {"bn_group_cores", 16}, {"weight_update_sharding", true}});
  const Program p = program_of(cfg);
  const std::vector<std::string> replicas{"data", "bn", "spatial"};
  int scatters = 0;
  for (const auto& op : p.ops) {
    if (!op.is_collective || op.collective.kind != CollectiveKind::ReduceScatter) continue;
    ++scatters;
    CHECK(op.collective.axes == replicas);
  }
  CHECK(scatters > 0);
  double params = static_cast<double>(graph_of(cfg, 4).total_params());
  double gathered = 0;
  for (const auto& op : p.ops)
    if (op.is_collective && op.collective.kind == CollectiveKind::AllGather)
      gathered += op.collective.bytes;
  CHECK(gathered == params * 2);
}

TEST_CASE("bad convolutional layouts name their JSON path") {
  auto program = [](const std::string& model, const std::string& topo, long long batch,
                    nlohmann::json par) {
    return [=] { program_of(model_study(model, topo, batch, par)); };
  };
  // 32 cores: a group larger than the cores, not dividing the replicas, not whole replicas.
  CHECK(error_path(program("resnet50", "4x4", 256, {{"bn_group_cores", 64}})) ==
        "parallelism.bn_group_cores");
  CHECK(error_path(program("resnet50", "4x4", 256, {{"bn_group_cores", 12}})) ==
        "parallelism.bn_group_cores");
  CHECK(error_path(program("ssd", "4x4", 32, {{"spatial", 4}, {"bn_group_cores", 6}})) ==
        "parallelism.bn_group_cores");
  // 512 cores splitting the 150 rows of SSD's space-to-depth input.
  CHECK(error_path(program("ssd", "16x16", 1, {{"spatial", 512}})) == "parallelism.spatial");
  // BERT has no batch norm, so no BN group.
  CHECK(error_path(program("bert_large", "2x2", 8, {{"bn_group_cores", 8}})) ==
        "parallelism.bn_group_cores");
  // Replicas that do not divide the batch.
  CHECK(error_path(program("maskrcnn", "4x4", 6, {{"spatial", 8}})) == "workload.global_batch");
}

TEST_CASE("splitting H and W: shards of ceil(H/Sh) x ceil(W/Sw) and halos along both dimensions") {
  // 8 cores as a 4 (H) x 2 (W) grid, one replica of 4 images.
  auto cfg = model_study("ssd", "2x2", 4, {{"spatial", 8}, {"spatial_w", 2}});
  const Program p = program_of(cfg);
  // backbone.stage2.0.conv1: 3x3 on 75x75x64. H halo: 1 row of ceil(75/2) = 38 columns, to the
  // cores 2 places away; W halo: 1 column of ceil(75/4) = 19 rows, to the next core.
  const Op* h = find_op(p, "backbone.stage2.0.conv1.halo+1");
  const Op* w = find_op(p, "backbone.stage2.0.conv1.halo_w-1");
  REQUIRE(h);
  REQUIRE(w);
  CHECK(h->collective.shift == 2);
  CHECK(h->collective.bytes == 1.0 * 38 * 64 * 4 * 2);
  CHECK(w->collective.shift == -1);
  CHECK(w->collective.bytes == 1.0 * 19 * 64 * 4 * 2);
  // head.0.class on the 38x38 map: ceil(38/4) x ceil(38/2) = 10 x 19 pixels per core.
  CHECK(find_op(p, "head.0.class")->compute.matmul->m == 4 * 10 * 19);
  // spatial_w must divide spatial.
  CHECK(error_path([] {
          program_of(model_study("ssd", "2x2", 4, {{"spatial", 8}, {"spatial_w", 3}}));
        }) == "parallelism.spatial_w");
  CHECK(error_path([] {
          program_of(model_study("ssd", "2x2", 8, {{"spatial_w", 2}}));
        }) == "parallelism.spatial_w");
}
