#include <catch2/catch.hpp>

#include "core/errors.hpp"
#include "core/params.hpp"
#include "tools/sweep/expand.hpp"
#include "tools/sweep/sweep_spec.hpp"

using nlohmann::json;
using tpusim::ConfigError;
using namespace tpusim::sweep;

static SweepSpec parse(const json& doc) { return parse_sweep(doc, "", "."); }

static std::vector<tpusim::Problem> problems_of(const json& doc) {
  try {
    parse(doc);
  } catch (const ConfigError& e) {
    return e.problems();
  }
  return {};
}

TEST_CASE("a product of axes has the product of their lengths and the first axis varies slowest") {
  auto spec = parse(json::parse(R"({"base": {"topology": "4x4"}, "axes": [
      {"path": "hardware.ici.bandwidth_GBps", "values": [50, 100, 200]},
      {"path": "hardware.hbm.latency_ns", "values": [400, 500]}]})"));
  REQUIRE(spec.point_count() == 6);
  auto points = expand(spec, {});
  REQUIRE(points.size() == 6);
  CHECK(points[0].values == std::vector<json>{50, 400});
  CHECK(points[1].values == std::vector<json>{50, 500});
  CHECK(points[2].values == std::vector<json>{100, 400});
  CHECK(points[5].values == std::vector<json>{200, 500});
  CHECK(points[3].resolved["hardware"]["ici"]["bandwidth_GBps"] == 100);
  CHECK(points[3].resolved["hardware"]["hbm"]["latency_ns"] == 500);
}

TEST_CASE("zipped axes move together and count once in the product") {
  auto spec = parse(json::parse(R"({"base": {}, "axes": [
      {"zip": [{"path": "topology", "values": ["2x2", "4x4", "8x8"]},
               {"path": "hardware.ici.latency_ns", "values": [100, 200, 300]}]},
      {"path": "hardware.hbm.latency_ns", "values": [400, 500]}]})"));
  auto points = expand(spec, {});
  REQUIRE(points.size() == 6);
  for (const auto& p : points) {
    const auto dims = p.resolved["topology"]["dims"];
    const int side = dims[0].get<int>();
    CHECK(p.resolved["hardware"]["ici"]["latency_ns"] == (side == 2 ? 100 : side == 4 ? 200 : 300));
  }
  CHECK(spec.series_axes() == std::vector<std::string>{"hardware.hbm.latency_ns"});
}

TEST_CASE("derived values are computed per point from chips and cores and other axes") {
  auto spec = parse(json::parse(R"({"base": {}, "axes": [
      {"zip": [{"path": "topology", "values": ["2x2", "4x4"]}, {"name": "scale", "values": [0.5, 2]}]},
      {"path": "hardware.hbm.latency_ns", "expr": "8 * cores"},
      {"path": "hardware.ici.bandwidth_GBps", "expr": "base * scale"},
      {"name": "twice", "expr": "2 * hardware.hbm.latency_ns"},
      {"path": "hardware.onchip.latency_ns", "expr": "twice + chips"}]})"));
  auto points = expand(spec, {});
  REQUIRE(points.size() == 2);
  const double ici_default = tpusim::ParamRegistry::instance()
                                 .find("hardware.ici.bandwidth_GBps")[0]
                                 ->default_value.get<double>();
  const int per_chip = tpusim::ParamRegistry::instance()
                           .find("hardware.cores_per_chip")[0]
                           ->default_value.get<int>();
  const int chips[] = {4, 16};
  const double scale[] = {0.5, 2};
  for (int i = 0; i < 2; ++i) {
    const auto& r = points[i].resolved;
    CHECK(r["hardware"]["hbm"]["latency_ns"].get<double>() == 8.0 * chips[i] * per_chip);
    CHECK(r["hardware"]["ici"]["bandwidth_GBps"].get<double>() == Approx(ici_default * scale[i]));
    CHECK(r["hardware"]["onchip"]["latency_ns"].get<double>() ==
          2 * 8.0 * chips[i] * per_chip + chips[i]);
  }
  CHECK(spec.column_names() == std::vector<std::string>{"topology", "scale",
                                                        "hardware.hbm.latency_ns",
                                                        "hardware.ici.bandwidth_GBps", "twice",
                                                        "hardware.onchip.latency_ns"});
}

TEST_CASE("a sweep file reports all its problems at once with JSON paths") {
  auto problems = problems_of(json::parse(R"({"base": {}, "extra": 1, "axes": [
      {"zip": [{"path": "topology", "values": ["2x2", "4x4"]}, {"name": "n", "values": [1, 2, 3]}]},
      {"path": "hardware.ici.bandwidth_GBps", "values": []},
      {"path": "a..b", "values": [1]},
      {"path": "hardware.hbm.latency_ns", "expr": "3 *"},
      {"path": "hardware.hbm.latency_ns", "values": "x", "color": "red"}]})"));
  std::vector<std::string> where;
  for (const auto& p : problems) where.push_back(p.where);
  CHECK_THAT(where, Catch::VectorContains(std::string("extra")));
  CHECK_THAT(where, Catch::VectorContains(std::string("axes[0].zip")));
  CHECK_THAT(where, Catch::VectorContains(std::string("axes[1].values")));
  CHECK_THAT(where, Catch::VectorContains(std::string("axes[2].path")));
  CHECK_THAT(where, Catch::VectorContains(std::string("axes[3].expr")));
  CHECK_THAT(where, Catch::VectorContains(std::string("axes[4].color")));
  CHECK_THAT(where, Catch::VectorContains(std::string("axes[4].values")));
}

TEST_CASE("a sweep file rejects missing parts and duplicate axes and unknown variables") {
  CHECK(problems_of(json::parse(R"({"axes": []})")).size() == 2);
  auto dup = problems_of(json::parse(R"({"base": {}, "axes": [
      {"path": "topology", "values": ["2x2"]}, {"path": "topology", "values": ["4x4"]}]})"));
  REQUIRE(dup.size() >= 1);
  CHECK_THAT(dup[0].what, Catch::Contains("topology"));
  auto var = problems_of(json::parse(R"({"base": {}, "axes": [
      {"path": "topology", "values": ["2x2"]}, {"path": "hardware.hbm.latency_ns", "expr": "per_core * 2"}]})"));
  REQUIRE(var.size() == 1);
  CHECK(var[0].where == "axes[1].expr");
  CHECK_THAT(var[0].what, Catch::Contains("per_core") && Catch::Contains("chips"));
  auto col =
      problems_of(json::parse(R"({"base": {}, "axes": [{"name": "chips", "values": [1]}]})"));
  REQUIRE(col.size() >= 1);
  CHECK_THAT(col[0].what, Catch::Contains("chips"));
}

TEST_CASE("every point is validated before anything runs and problems name the point") {
  auto spec = parse(json::parse(R"({"base": {}, "axes": [
      {"path": "topology", "values": ["2x2", "nonsense"]},
      {"path": "hardware.ici.bandwidth_GBps", "values": [-5, 100]}]})"));
  try {
    expand(spec, {});
    FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    // Point 0 has the bad bandwidth; 2 and 3 the bad topology (which stops their other checks):
    // a problem that several points share is one line naming them, the first as example.
    std::string all = e.what();
    CHECK_THAT(all, Catch::Contains("point 0 [topology=2x2 hardware.ici.bandwidth_GBps=-5]"));
    CHECK_THAT(all, Catch::Contains("2 of 4 points (2-3; e.g. [topology=nonsense "
                                    "hardware.ici.bandwidth_GBps=-5]): topology"));
    CHECK(all.find("point 1 ") == std::string::npos);
  }
}

TEST_CASE("two points with the same study are an error and ids differ otherwise") {
  auto spec = parse(json::parse(R"({"base": {}, "axes": [{"name": "unused", "values": [1, 2]}]})"));
  CHECK_THROWS_WITH(expand(spec, {}), Catch::Contains("same study as point 0"));
  auto ok = parse(json::parse(
      R"({"base": {}, "axes": [{"path": "topology", "values": ["2x2", "4x4", "8x8"]}]})"));
  auto points = expand(ok, {});
  CHECK(points[0].id != points[1].id);
  CHECK(points[1].id != points[2].id);
  CHECK(points[0].id.size() == 16);
}

TEST_CASE("overrides given with --set apply to the base and axis values win over them") {
  auto spec = parse(json::parse(
      R"({"base": {}, "axes": [{"path": "hardware.ici.bandwidth_GBps", "values": [50]}]})"));
  auto points = expand(spec, {"hardware.hbm.latency_ns=123", "hardware.ici.bandwidth_GBps=7"});
  CHECK(points[0].resolved["hardware"]["hbm"]["latency_ns"] == 123);
  CHECK(points[0].resolved["hardware"]["ici"]["bandwidth_GBps"] == 50);
}

TEST_CASE("shards cover every point exactly once") {
  for (std::size_t n : {1u, 2u, 7u, 45u}) {
    for (int count = 1; count <= 6; ++count) {
      std::vector<int> hits(n, 0);
      for (int s = 1; s <= count; ++s)
        for (std::size_t i : shard_indices(n, s, count)) hits.at(i) += 1;
      for (std::size_t i = 0; i < n; ++i) CHECK(hits[i] == 1);
    }
  }
}
