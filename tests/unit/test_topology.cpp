#include <catch2/catch.hpp>
#include <cstdlib>
#include <set>
#include <tuple>

#include "core/errors.hpp"
#include "topologies/device_mesh.hpp"
#include "topologies/mesh_placement.hpp"
#include "topologies/topology.hpp"

using namespace tpusim;

TEST_CASE("a torus has 2 x dims x chips directed links - an open line loses its edge links") {
  Topology torus(parse_topology("32x32"));
  CHECK(torus.num_chips() == 1024);
  CHECK(torus.num_directed_links() == 2 * 2 * 1024);
  Topology multipod(parse_topology("128x32:wrap=0,1"));
  // X open: 127 physical links per row of 128, 32 rows; Y ring: 32 links per column, 128 columns.
  CHECK(multipod.num_physical_links() == 127 * 32 + 32 * 128);
  CHECK(multipod.connected());
}

TEST_CASE("presets name the MLPerf slices") {
  auto mp = parse_topology("tpu_v3_multipod");
  CHECK(mp.dims == std::vector<int>{128, 32});
  CHECK(mp.wrap == std::vector<bool>{false, true});
  auto v4 = parse_topology("tpu_v4_4096");
  CHECK(v4.dims == std::vector<int>{16, 16, 16});
}

TEST_CASE("dimension-order routing takes the short way round a ring and X before Y") {
  Topology t(parse_topology("8x8:wrap=0,1"));
  int src = t.chip_at({0, 0});
  int dst = t.chip_at({3, 7});
  auto r = t.route(src, dst);
  REQUIRE(r.size() == 4);  // 3 hops along open X, then 1 hop backwards round the Y ring
  CHECK(t.link(r[0]).dim == 0);
  CHECK(t.link(r[3]).dim == 1);
  CHECK(t.link(r[3]).dir == -1);
  CHECK(t.link(r.back()).dst == dst);
  CHECK(t.hops(src, dst) == 4);
}

TEST_CASE("every route of a plain grid follows its link slots from source to destination") {
  // route() walks the offsets without neighbor(): each slot must leave the chip the previous one
  // reached, along the dimension order, and end at the destination in hops() = sum |offset| links.
  for (const char* shape : {"5x4:wrap=0,1", "6x3x4", "3x2:wrap=1,0"}) {
    Topology t(parse_topology(shape));
    for (int src = 0; src < t.num_chips(); ++src)
      for (int dst = 0; dst < t.num_chips(); ++dst) {
        const auto r = t.route(src, dst);
        int steps = 0;
        for (int d = 0; d < t.num_dims(); ++d)
          steps += std::abs(t.offset(t.coord(src, d), t.coord(dst, d), d));
        INFO(shape << " " << src << " -> " << dst);
        REQUIRE(static_cast<int>(r.size()) == steps);
        CHECK(t.hops(src, dst) == steps);
        int at = src, last_dim = 0;
        for (int slot : r) {
          const Link l = t.link(slot);
          CHECK(l.src == at);
          CHECK(l.dim >= last_dim);
          last_dim = l.dim;
          at = l.dst;
        }
        CHECK(at == dst);
      }
  }
}

TEST_CASE("bisection: halving the long dimension of a torus cuts two links per ring") {
  CHECK(Topology(parse_topology("32x32")).bisection_links() == 64);
  CHECK(Topology(parse_topology("128x32:wrap=0,1")).bisection_links() == 32);
}

TEST_CASE("bad topologies are config errors naming the input") {
  CHECK_THROWS_AS(parse_topology("12y4"), ConfigError);
  CHECK_THROWS_AS(parse_topology("4x4:wrap=0"), ConfigError);
  CHECK_THROWS_AS(parse_topology("no_such_topology"), ConfigError);
  CHECK_THROWS_WITH(parse_topology("0x4"), Catch::Contains("0x4"));
}

TEST_CASE("the innermost mesh axis lands on the cores of a chip, then neighbouring chips") {
  Topology t(parse_topology("4x4"));
  DeviceMesh mesh(t, 2, {{"data", 8}, {"model", 4}});
  auto g = mesh.group_of(0, {"model"});
  REQUIRE(g.size() == 4);
  CHECK(mesh.chip_of_core(g[0]) == mesh.chip_of_core(g[1]));
  CHECK(t.hops(mesh.chip_of_core(g[1]), mesh.chip_of_core(g[2])) == 1);
  CHECK(mesh.groups({"data"}).size() == 4);
  CHECK_THROWS_AS(DeviceMesh(t, 2, {{"data", 16}}), ConfigError);
}

TEST_CASE("a topology name that is not a string is a ConfigError naming it") {
  // Found by fuzz_topology_mesh (tests/fuzz/regressions/topology_mesh/).
  CHECK_THROWS_WITH(tpusim::topology_from_json(
                        nlohmann::json::parse(R"({"name": [false, true], "dims": [2, 2]})")),
                    Catch::Contains("topology.name") && Catch::Contains("expected a string"));
}

namespace {
// The pieces of axis `a` of a mesh on `dims` chips (one device per chip), as {dim, size, stride}
// with dims numbered 1 = X, 2 = Y, 3 = Z (0: the cores of a chip).
std::vector<std::vector<int>> pieces(const std::string& dims, std::vector<MeshAxis> axes,
                                     std::size_t a, int devices_per_chip = 1) {
  const Topology t(parse_topology(dims));
  std::vector<int> physical{devices_per_chip}, sizes;
  for (int d = 0; d < t.num_dims(); ++d) physical.push_back(t.dim(d));
  for (const auto& axis : axes) sizes.push_back(axis.size);
  const MeshPlacement placement = place_mesh(physical, sizes);
  REQUIRE(placement.ok());
  std::vector<std::vector<int>> out;
  for (const auto& p : placement.axes.at(a)) out.push_back({p.dim, p.size, p.stride});
  return out;
}
using Pieces = std::vector<std::vector<int>>;
}  // namespace

TEST_CASE("JAX's device mesh: each axis on whole torus dimensions, innermost axis first") {
  // The MLPerf v5p meshes of docs/reference (llm-on-tpu.md): tensor on the dimension of its size,
  // fsdp and data on the others (an order that tpusim's row-major mesh could not give).
  const std::vector<MeshAxis> mlperf{{"data", 12}, {"fsdp", 16}, {"model", 8}};
  CHECK(pieces("8x12x16", mlperf, 2) == Pieces{{1, 8, 1}});
  CHECK(pieces("8x12x16", mlperf, 1) == Pieces{{3, 16, 1}});
  CHECK(pieces("8x12x16", mlperf, 0) == Pieces{{2, 12, 1}});
  const std::vector<MeshAxis> big{{"data", 16}, {"fsdp", 48}, {"model", 8}};
  CHECK(pieces("8x16x48", big, 2) == Pieces{{1, 8, 1}});
  CHECK(pieces("8x16x48", big, 1) == Pieces{{3, 48, 1}});
  CHECK(pieces("8x16x48", big, 0) == Pieces{{2, 16, 1}});
  // MaxText's v5p table: fsdp takes the rest of the slice, spanning two dimensions.
  CHECK(pieces("4x4x4", {{"fsdp", 16}, {"model", 4}}, 1) == Pieces{{1, 4, 1}});
  CHECK(pieces("4x4x4", {{"fsdp", 16}, {"model", 4}}, 0) == Pieces{{2, 4, 1}, {3, 4, 1}});
  CHECK(pieces("4x4x8", {{"fsdp", 16}, {"model", 8}}, 1) == Pieces{{3, 8, 1}});
  CHECK(pieces("4x4x8", {{"fsdp", 16}, {"model", 8}}, 0) == Pieces{{1, 4, 1}, {2, 4, 1}});
  CHECK(pieces("4x8x8", {{"fsdp", 32}, {"model", 8}}, 1) == Pieces{{2, 8, 1}});
  CHECK(pieces("4x8x8", {{"fsdp", 32}, {"model", 8}}, 0) == Pieces{{1, 4, 1}, {3, 8, 1}});
  CHECK(pieces("8x8x16", {{"fsdp", 64}, {"model", 16}}, 1) == Pieces{{3, 16, 1}});
  CHECK(pieces("8x16x16", {{"fsdp", 128}, {"model", 16}}, 1) == Pieces{{2, 16, 1}});
  CHECK(pieces("8x16x16", {{"fsdp", 128}, {"model", 16}}, 0) == Pieces{{1, 8, 1}, {3, 16, 1}});
  // v5e pods: fsdp 256, or fsdp 16 x tensor 16; PaLM's pod: model 12 on X, fsdp 256 on Y x Z.
  CHECK(pieces("16x16", {{"fsdp", 256}}, 0) == Pieces{{1, 16, 1}, {2, 16, 1}});
  CHECK(pieces("16x16", {{"fsdp", 16}, {"model", 16}}, 0) == Pieces{{2, 16, 1}});
  CHECK(pieces("12x16x16", {{"fsdp", 256}, {"model", 12}}, 1) == Pieces{{1, 12, 1}});
  CHECK(pieces("12x16x16", {{"fsdp", 256}, {"model", 12}}, 0) == Pieces{{2, 16, 1}, {3, 16, 1}});
  // The cores of a chip go to the innermost axis first (TPU v3: 2 per chip).
  CHECK(pieces("4x4", {{"data", 16}, {"model", 2}}, 1, 2) == Pieces{{0, 2, 1}});
}

TEST_CASE("JAX's device mesh: dimensions split when no whole ones fit, an axis spanning two") {
  // PaLM's 12-way model axis on 16 x 16 x 24: 4 of X and 3 of Z; fsdp the rest of X (every 4th
  // chip), Y, and the rest of Z.
  const std::vector<MeshAxis> axes{{"fsdp", 512}, {"model", 12}};
  CHECK(pieces("16x16x24", axes, 1) == Pieces{{1, 4, 1}, {3, 3, 1}});
  CHECK(pieces("16x16x24", axes, 0) == Pieces{{1, 4, 4}, {2, 16, 1}, {3, 8, 3}});
  const Topology t(parse_topology("16x16x24"));
  const DeviceMesh mesh(t, 1, axes);
  const std::vector<int> cores = placed_cores(mesh, t);
  // A model group: 4 neighbours along X times 3 along Z, every core once.
  const auto g = placed_groups(mesh, cores, {"model"}).front();
  REQUIRE(g.size() == 12);
  std::set<std::vector<int>> coords;
  for (int core : g) coords.insert(t.coords(core));
  CHECK(coords.size() == 12);
  for (const auto& c : coords) {
    CHECK(c[0] < 4);
    CHECK(c[1] == 0);
    CHECK(c[2] < 3);
  }
  // Every device on its own core.
  CHECK(std::set<int>(cores.begin(), cores.end()).size() == cores.size());
  // The groups of an axis partition the cores.
  std::set<int> members;
  for (const auto& group : placed_groups(mesh, cores, {"fsdp"}))
    members.insert(group.begin(), group.end());
  CHECK(members.size() == cores.size());
  // The MLPerf mesh: a model (tensor) group is one X ring of 8 chips, an fsdp group a Z ring.
  const Topology v5p(parse_topology("8x12x16"));
  const DeviceMesh mlperf(v5p, 1, {{"data", 12}, {"fsdp", 16}, {"model", 8}});
  const std::vector<int> on = placed_cores(mlperf, v5p);
  for (const auto& [axis, dim, size] :
       std::vector<std::tuple<std::string, int, int>>{{"model", 0, 8}, {"fsdp", 2, 16}}) {
    const auto group = placed_groups(mlperf, on, {axis}).front();
    REQUIRE(static_cast<int>(group.size()) == size);
    for (int core : group)
      for (int d = 0; d < 3; ++d)
        if (d != dim) CHECK(v5p.coords(core)[d] == v5p.coords(group.front())[d]);
  }
}
