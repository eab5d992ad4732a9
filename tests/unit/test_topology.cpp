#include <catch2/catch.hpp>
#include <cstdlib>

#include "core/errors.hpp"
#include "topologies/device_mesh.hpp"
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
