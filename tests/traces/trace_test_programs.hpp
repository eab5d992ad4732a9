#pragma once
// Programs and helpers shared by the trace tests.
#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <string>

#include "core/config.hpp"
#include "models/program.hpp"

namespace tpusim::testing {

/// The bytes of a file (empty if it cannot be read).
inline std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline std::string example_trace_dir() { return config_dir() + "/../traces/examples/"; }

/// A Program that sets every field the trace format stores, with values that differ from the
/// defaults: mesh data 4 x model 2, compute ops with and without matmul and measured duration,
/// every collective kind, axes and explicit groups, a permute with negative shift.
inline Program every_field_program() {
  Program p;
  p.model = "every_field";
  p.mesh = {{"data", 4}, {"model", 2}};
  p.examples_per_step = 32;
  Op mm;
  mm.name = "layer.0.qkv.fwd";
  mm.kind = "matmul";
  mm.phase = Phase::Forward;
  mm.dtype = DType::BF16;
  mm.shapes = {{8, 1024}, {1024, 1536}};
  mm.compute.matmul = MatmulShape{3, 8, 1024, 512};
  mm.compute.flops = mm.compute.matmul->flops();
  mm.compute.bytes_read = 3.25e6;
  mm.compute.bytes_written = 24576;
  mm.compute.vpu_elements = 12288;
  mm.compute.vpu_ops_per_element = 2.5;
  p.ops.push_back(mm);
  Op gelu;
  gelu.name = "layer.0.gelu";
  gelu.kind = "gelu";
  gelu.phase = Phase::Backward;
  gelu.dtype = DType::F32;
  gelu.compute.vpu_elements = 1e5;
  gelu.compute.vpu_ops_per_element = 10;
  gelu.compute.bytes_read = 0.1;  // not an integer: doubles must round-trip exactly
  gelu.compute.measured_ns = 1234.5678901234;
  gelu.deps = {0};
  p.ops.push_back(gelu);
  auto collective = [&](const std::string& name, CollectiveKind kind, double bytes, DType dt) {
    Op op;
    op.name = name;
    op.kind = to_string(kind);
    op.phase = Phase::Optimizer;
    op.is_collective = true;
    op.dtype = dt;
    op.collective.kind = kind;
    op.collective.bytes = bytes;
    op.collective.dtype = dt;
    op.deps = {static_cast<int>(p.ops.size()) - 1};
    return op;
  };
  Op ar = collective("grads.all_reduce", CollectiveKind::AllReduce, 4.0 * 1024 * 1024, DType::BF16);
  ar.collective.axes = {"data"};
  p.ops.push_back(ar);
  Op rs = collective("grads.reduce_scatter", CollectiveKind::ReduceScatter, 8e6, DType::F32);
  rs.collective.axes = {"data", "model"};
  p.ops.push_back(rs);
  Op ag = collective("weights.all_gather", CollectiveKind::AllGather, 4e6, DType::BF16);
  ag.collective.axes = {};  // all devices
  p.ops.push_back(ag);
  Op a2a = collective("moe.all_to_all", CollectiveKind::AllToAll, 65536, DType::I32);
  a2a.collective.replica_groups = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};  // = the model axis
  p.ops.push_back(a2a);
  Op perm = collective("halo.prev", CollectiveKind::CollectivePermute, 2048, DType::BF16);
  perm.collective.axes = {"data"};
  perm.collective.shift = -1;
  perm.collective.wrap = false;
  perm.deps = {0, 4};
  p.ops.push_back(perm);
  Op bn = collective("bn.stats", CollectiveKind::AllReduce, 8192, DType::F32);
  bn.collective.replica_groups = {{0, 2}, {1, 3}, {4, 6}, {5, 7}};  // half of the data axis
  p.ops.push_back(bn);
  return p;
}

inline void check_same_program(const Program& a, const Program& b) {
  CHECK(a.model == b.model);
  CHECK(a.examples_per_step == b.examples_per_step);
  REQUIRE(a.mesh.size() == b.mesh.size());
  for (std::size_t i = 0; i < a.mesh.size(); ++i) {
    CHECK(a.mesh[i].name == b.mesh[i].name);
    CHECK(a.mesh[i].size == b.mesh[i].size);
  }
  REQUIRE(a.ops.size() == b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    INFO("op " << i << " " << a.ops[i].name);
    const Op& x = a.ops[i];
    const Op& y = b.ops[i];
    CHECK(x.name == y.name);
    CHECK(x.kind == y.kind);
    CHECK(x.phase == y.phase);
    CHECK(x.dtype == y.dtype);
    CHECK(x.shapes == y.shapes);
    CHECK(x.deps == y.deps);
    REQUIRE(x.is_collective == y.is_collective);
    if (x.is_collective) {
      CHECK(x.collective.kind == y.collective.kind);
      CHECK(x.collective.bytes == y.collective.bytes);
      CHECK(x.collective.dtype == y.collective.dtype);
      CHECK(x.collective.axes == y.collective.axes);
      CHECK(x.collective.replica_groups == y.collective.replica_groups);
      CHECK(x.collective.shift == y.collective.shift);
      CHECK(x.collective.wrap == y.collective.wrap);
    } else {
      CHECK(x.compute.matmul.has_value() == y.compute.matmul.has_value());
      if (x.compute.matmul && y.compute.matmul) {
        CHECK(x.compute.matmul->batch == y.compute.matmul->batch);
        CHECK(x.compute.matmul->m == y.compute.matmul->m);
        CHECK(x.compute.matmul->k == y.compute.matmul->k);
        CHECK(x.compute.matmul->n == y.compute.matmul->n);
      }
      CHECK(x.compute.vpu_elements == y.compute.vpu_elements);
      CHECK(x.compute.vpu_ops_per_element == y.compute.vpu_ops_per_element);
      CHECK(x.compute.bytes_read == y.compute.bytes_read);
      CHECK(x.compute.bytes_written == y.compute.bytes_written);
      CHECK(x.compute.flops == y.compute.flops);
      CHECK(x.compute.measured_ns == y.compute.measured_ns);
    }
  }
}

}  // namespace tpusim::testing
