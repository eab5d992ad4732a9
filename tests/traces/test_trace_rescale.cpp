#include <catch2/catch.hpp>

#include "core/errors.hpp"
#include "tests/traces/trace_test_programs.hpp"
#include "tests/unit/model_study.hpp"
#include "topologies/device_mesh.hpp"
#include "traces/format/mesh_groups.hpp"
#include "traces/format/rescale.hpp"

using namespace tpusim;
using tpusim::test::op_named;
using tpusim::testing::every_field_program;

namespace {
// every_field_program without its one collective whose groups follow no axis (bn.stats).
Program rescalable_program() {
  Program p = every_field_program();
  p.ops.pop_back();
  return p;
}
}  // namespace

TEST_CASE("mesh_axis_groups numbers devices as DeviceMesh does") {
  // 4x4 chips, 2 cores each = 32 cores as data 8 x model 4.
  Topology topo(TopologySpec{"t", {4, 4}, {true, true}});
  const std::vector<MeshAxis> mesh{{"data", 8}, {"model", 4}};
  DeviceMesh dm(topo, 2, mesh);
  for (const auto& axes :
       std::vector<std::vector<std::string>>{{"data"}, {"model"}, {"data", "model"}, {}})
    CHECK(trace::mesh_axis_groups(mesh, axes) == dm.groups(axes));
}

TEST_CASE("rescaling the data axis keeps per-core compute and buffers and grows the data groups") {
  const Program p = rescalable_program();
  const Program q = rescale(p, {{"data", 16}});
  REQUIRE(q.mesh.size() == 2);
  CHECK(q.mesh[0].size == 16);
  CHECK(q.mesh[1].size == 2);
  // The per-replica batch (32 examples / 4 replicas) stays: 8 x 16.
  CHECK(q.examples_per_step == p.examples_per_step / 4 * 16);
  REQUIRE(q.ops.size() == p.ops.size());
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    INFO(p.ops[i].name);
    CHECK(q.ops[i].is_collective == p.ops[i].is_collective);
    CHECK(q.ops[i].deps == p.ops[i].deps);
    if (p.ops[i].is_collective) {
      CHECK(q.ops[i].collective.bytes == p.ops[i].collective.bytes);  // a gradient stays its size
      CHECK(q.ops[i].collective.shift == p.ops[i].collective.shift);
    } else {
      CHECK(q.ops[i].compute.flops == p.ops[i].compute.flops);
      CHECK(q.ops[i].compute.bytes_read == p.ops[i].compute.bytes_read);
      CHECK(q.ops[i].compute.measured_ns == p.ops[i].compute.measured_ns);
    }
  }
  // The gradient all-reduce spans the data axis: its groups, derived from the new mesh, have
  // 16 members; one group per model coordinate.
  const auto& ar = op_named(q, "grads.all_reduce").collective;
  CHECK(ar.axes == std::vector<std::string>{"data"});
  const auto groups = trace::mesh_axis_groups(q.mesh, ar.axes);
  CHECK(groups.size() == 2);
  CHECK(groups[0].size() == 16);
  // The all-gather over all devices now spans 32.
  CHECK(trace::mesh_axis_groups(q.mesh, op_named(q, "weights.all_gather").collective.axes)[0]
            .size() == 32);
}

TEST_CASE("explicit replica groups that follow an axis become that axis and rescale with it") {
  const Program p = rescalable_program();
  // moe.all_to_all's groups {{0,1},{2,3},...} are the model axis of data 4 x model 2.
  const Program q = rescale(p, {{"model", 4}});
  const auto& a2a = op_named(q, "moe.all_to_all").collective;
  CHECK(a2a.replica_groups.empty());
  CHECK(a2a.axes == std::vector<std::string>{"model"});
  CHECK(trace::mesh_axis_groups(q.mesh, a2a.axes)[0] == std::vector<int>{0, 1, 2, 3});
  CHECK(q.examples_per_step == p.examples_per_step);  // the model axis does not change the batch
}

TEST_CASE(
    "explicit replica groups that follow no axis cannot be rescaled and the error says which op") {
  const Program p = every_field_program();
  CHECK_THROWS_WITH(
      rescale(p, {{"data", 8}}),
      Catch::StartsWith(
          "ops[7] (bn.stats): its explicit replica groups {{0,2},{1,3},{4,6},{5,7}}") &&
          Catch::Contains("do not follow any mesh axes of data 4 x model 2") &&
          Catch::Contains("data 8 x model 2"));
  // On the recorded mesh nothing needs re-deriving: the groups stay.
  const Program same = rescale(p, {{"data", 4}});
  CHECK(same.ops[7].collective.replica_groups == p.ops[7].collective.replica_groups);
}

TEST_CASE("rescale refuses unknown axes and batches that do not divide over the replicas") {
  const Program p = rescalable_program();
  CHECK_THROWS_WITH(rescale(p, {{"pipeline", 2}}), Catch::Contains("has no axis 'pipeline'"));
  Program odd = p;
  odd.examples_per_step = 30;  // not a multiple of data = 4
  CHECK_THROWS_WITH(rescale(odd, {{"data", 8}}),
                    Catch::StartsWith("examples_per_step: 30 examples do not divide"));
}

TEST_CASE("parse_mesh_axes reads name=size lists and names what is wrong") {
  const auto axes = trace::parse_mesh_axes("data=16,model=4", "--mesh");
  REQUIRE(axes.size() == 2);
  CHECK(axes[0].name == "data");
  CHECK(axes[1].size == 4);
  CHECK_THROWS_WITH(trace::parse_mesh_axes("data=0", "--mesh"),
                    Catch::StartsWith("--mesh: 'data=0': size must be"));
  CHECK_THROWS_WITH(trace::parse_mesh_axes("data", "--mesh"),
                    Catch::StartsWith("--mesh: 'data' is not name=size"));
  CHECK_THROWS_WITH(trace::parse_mesh_axes("data=2,data=4", "--mesh"),
                    Catch::Contains("given twice"));
  CHECK_THROWS_WITH(trace::parse_mesh_axes("data=4096,model=8192", "--mesh"),
                    Catch::Contains("more than"));
}
