// Trace JSON -> Program, checking every field; the first problem is reported with the file and
// JSON path ("trace.json: ops[12].collective.bytes: -4 is negative; expected a size >= 0").
#include <algorithm>
#include <set>
#include <unordered_set>

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "topologies/topology.hpp"
#include "traces/format/json_field.hpp"
#include "traces/format/trace_format.hpp"

namespace tpusim::trace {
namespace {

// Tensor dimensions and matmul extents: up to 2^53, the largest integer a JSON double holds.
constexpr std::int64_t kMaxDim = std::int64_t{1} << 53;

DType read_dtype(const JsonField& f) {
  auto d = parse_dtype(f.string());
  if (!d) f.fail("'" + f.string() + "' is not a dtype; expected one of bf16, f32, i32, int8, fp8");
  return *d;
}

std::vector<MeshAxis> read_mesh(const JsonField& f) {
  std::vector<MeshAxis> mesh;
  const std::size_t n = f.array_size();
  if (n == 0)
    f.fail("is empty; expected at least one axis such as {\"name\": \"data\", \"size\": 8}");
  long long devices = 1;
  std::unordered_set<std::string> names;  // a set: 200,000 axes were a quadratic 27 s
  for (std::size_t i = 0; i < n; ++i) {
    JsonField a = f.at(i);
    a.only_keys({"name", "size"});
    MeshAxis axis;
    axis.name = a["name"].string();
    axis.size = static_cast<int>(a["size"].integer(1, kMaxMeshDevices));
    if (!names.insert(axis.name).second) a["name"].fail("axis '" + axis.name + "' appears twice");
    devices *= axis.size;
    if (devices > kMaxMeshDevices)
      a["size"].fail("makes the mesh larger than " + std::to_string(kMaxMeshDevices) + " devices");
    mesh.push_back(axis);
  }
  return mesh;
}

long long mesh_devices(const std::vector<MeshAxis>& mesh) {
  long long n = 1;
  for (const auto& a : mesh) n *= a.size;
  return n;
}

ComputeCost read_compute(const JsonField& f) {
  f.only_keys({"flops", "bytes_read", "bytes_written", "vpu_elements", "vpu_ops_per_element",
               "matmul", "measured_ns", "mxu_dtype"});
  ComputeCost c;
  c.flops = f["flops"].bounded("a FLOP count", kMaxOpFlops, "FLOPs", "kMaxOpFlops");
  c.bytes_read = f["bytes_read"].bounded("a size", kMaxBytes, "bytes", "kMaxBytes");
  c.bytes_written = f["bytes_written"].bounded("a size", kMaxBytes, "bytes", "kMaxBytes");
  if (auto v = f.optional("vpu_elements"))
    c.vpu_elements = v->bounded("an element count", kMaxBytes, "elements", "kMaxBytes");
  if (auto v = f.optional("vpu_ops_per_element"))
    c.vpu_ops_per_element = v->non_negative("a count");
  if (auto m = f.optional("matmul")) {
    m->only_keys({"batch", "m", "k", "n"});
    MatmulShape s;
    s.batch = (*m)["batch"].integer(1, kMaxDim);
    s.m = (*m)["m"].integer(0, kMaxDim);
    s.k = (*m)["k"].integer(0, kMaxDim);
    s.n = (*m)["n"].integer(0, kMaxDim);
    c.matmul = s;
  }
  if (auto v = f.optional("measured_ns"))
    c.measured_ns =
        v->bounded("a duration", kMaxSimulatedSeconds * 1e9, "ns", "kMaxSimulatedSeconds");
  if (auto v = f.optional("mxu_dtype")) c.mxu_dtype = read_dtype(*v);
  return c;
}

std::vector<std::vector<int>> read_replica_groups(const JsonField& f, long long devices) {
  std::vector<std::vector<int>> groups;
  std::vector<int> all;
  const std::size_t n = f.array_size();
  if (n == 0)
    f.fail("is empty; give mesh \"axes\" instead (an empty list of axes means all devices)");
  for (std::size_t g = 0; g < n; ++g) {
    JsonField group = f.at(g);
    const std::size_t m = group.array_size();
    if (m == 0) group.fail("is an empty group; every group needs at least one device");
    std::vector<int> members;
    for (std::size_t k = 0; k < m; ++k)
      members.push_back(static_cast<int>(group.at(k).integer(0, devices - 1)));
    all.insert(all.end(), members.begin(), members.end());
    groups.push_back(std::move(members));
  }
  std::sort(all.begin(), all.end());
  auto dup = std::adjacent_find(all.begin(), all.end());
  if (dup != all.end())
    f.fail("device " + std::to_string(*dup) +
           " is in more than one place; every device must be in exactly one group");
  if (static_cast<long long>(all.size()) != devices)
    f.fail("cover " + std::to_string(all.size()) + " devices but the mesh has " +
           std::to_string(devices) + "; every device must be in exactly one group");
  return groups;
}

CollectiveSpec read_collective(const JsonField& f, const std::vector<MeshAxis>& mesh) {
  f.only_keys({"kind", "bytes", "dtype", "axes", "replica_groups", "shift", "wrap"});
  CollectiveSpec c;
  JsonField kind = f["kind"];
  auto k = parse_collective_kind(kind.string());
  if (!k)
    kind.fail("'" + kind.string() +
              "' is not a collective kind; expected one of all-reduce, "
              "reduce-scatter, all-gather, all-to-all, collective-permute");
  c.kind = *k;
  c.bytes = f["bytes"].bounded("a size", kMaxBytes, "bytes", "kMaxBytes");
  c.dtype = read_dtype(f["dtype"]);
  auto axes = f.optional("axes");
  auto groups = f.optional("replica_groups");
  if (axes && groups) f.fail("has both 'axes' and 'replica_groups'; give one");
  if (!axes && !groups)
    f.fail(
        "missing required field 'axes' (mesh axes the group varies along; [] for all devices) "
        "or 'replica_groups'");
  if (axes) {
    for (std::size_t i = 0; i < axes->array_size(); ++i) {
      JsonField a = axes->at(i);
      std::string name = a.string();
      if (std::none_of(mesh.begin(), mesh.end(), [&](const MeshAxis& m) { return m.name == name; }))
        a.fail("'" + name + "' is not an axis of the trace's mesh");
      if (std::find(c.axes.begin(), c.axes.end(), name) != c.axes.end())
        a.fail("axis '" + name + "' is listed twice");
      c.axes.push_back(name);
    }
  } else {
    c.replica_groups = read_replica_groups(*groups, mesh_devices(mesh));
  }
  const bool permute = c.kind == CollectiveKind::CollectivePermute;
  auto shift = f.optional("shift");
  auto wrap = f.optional("wrap");
  if (permute && !shift) f.fail("missing required field 'shift' (collective-permute)");
  if (permute && !wrap) f.fail("missing required field 'wrap' (collective-permute)");
  const int limit = static_cast<int>(kMaxMeshDevices);
  if (shift) c.shift = static_cast<int>(shift->integer(-limit, limit));
  if (wrap) c.wrap = wrap->boolean();
  if (!permute && (c.shift != 0 || c.wrap))
    f.fail("'shift' and 'wrap' apply only to collective-permute");
  return c;
}

Op read_op(const JsonField& f, std::size_t index, const std::vector<MeshAxis>& mesh) {
  f.only_keys({"name", "kind", "phase", "dtype", "shapes", "deps", "compute", "collective"});
  Op op;
  op.name = f["name"].string();
  op.kind = f["kind"].string();
  JsonField phase = f["phase"];
  auto p = parse_phase(phase.string());
  if (!p)
    phase.fail("'" + phase.string() +
               "' is not a phase; expected one of forward, backward, optimizer, other");
  op.phase = *p;
  op.dtype = read_dtype(f["dtype"]);
  if (auto shapes = f.optional("shapes")) {
    for (std::size_t s = 0; s < shapes->array_size(); ++s) {
      JsonField shape = shapes->at(s);
      std::vector<std::int64_t> dims;
      for (std::size_t d = 0; d < shape.array_size(); ++d)
        dims.push_back(shape.at(d).integer(0, kMaxDim));
      op.shapes.push_back(std::move(dims));
    }
  }
  if (auto deps = f.optional("deps")) {
    for (std::size_t d = 0; d < deps->array_size(); ++d) {
      JsonField dep = deps->at(d);
      if (!dep.json().is_number_integer()) dep.integer(0, 0);  // reports the type
      const long long v = dep.json().get<long long>();
      if (v < 0 || static_cast<std::size_t>(v) >= index)
        dep.fail(std::to_string(v) +
                 " is not an earlier op; dependencies must point to ops before "
                 "this one (index 0.." +
                 std::to_string(static_cast<long long>(index) - 1) +
                 "), which also rules out cycles");
      op.deps.push_back(static_cast<int>(v));
    }
  }
  auto compute = f.optional("compute");
  auto collective = f.optional("collective");
  if (compute && collective)
    f.fail("has both 'compute' and 'collective'; an op is one or the other");
  if (!compute && !collective)
    f.fail("missing required field 'compute' (a compute op) or 'collective' (a collective op)");
  if (compute) {
    if (parse_collective_kind(op.kind))
      f["kind"].fail(
          "'" + op.kind +
          "' is a collective kind but the op has 'compute'; give it a 'collective' object");
    op.compute = read_compute(*compute);
  } else {
    op.is_collective = true;
    op.collective = read_collective(*collective, mesh);
  }
  return op;
}

}  // namespace

TraceFile trace_from_json(const nlohmann::json& doc, const std::string& name) {
  JsonField root(doc, name, "");
  if (!doc.is_object())
    root.fail("is not a tpusim trace (expected a JSON object with \"format\": \"" +
              std::string(kFormatName) + "\")");
  if (doc.contains("traceEvents"))
    root.fail(
        "is a Chrome trace event file (a profile), not a tpusim trace; convert it with "
        "tpusim trace import");
  root.only_keys({"format", "version", "model", "examples_per_step", "mesh", "recorded_on", "ops"});
  JsonField format = root["format"];
  if (format.string_or_empty() != kFormatName)
    format.fail("'" + format.string_or_empty() + "' is not this format; expected \"" + kFormatName +
                "\"");
  JsonField version = root["version"];
  const auto v = version.integer(0, 1 << 30);
  if (v != kFormatVersion)
    version.fail(std::to_string(v) + " is not a version this tpusim reads; expected " +
                 std::to_string(kFormatVersion));
  TraceFile out;
  Program& p = out.program;
  p.model = root["model"].string();
  p.examples_per_step = root["examples_per_step"].integer(0, kMaxDim);
  p.mesh = read_mesh(root["mesh"]);
  if (auto rec = root.optional("recorded_on")) {
    if (!rec->is_object())
      rec->fail("is not an object; expected {\"topology\": ..., \"hardware\": ...}");
    if (auto topo = rec->optional("topology")) {
      // topology_from_json expects a string name; check it here so a wrong type is a ConfigError.
      if (auto tname = topo->optional("name")) tname->string();
      topology_from_json(topo->json(), topo->where());
    }
    out.recorded_on = rec->json();
  }
  JsonField ops = root["ops"];
  const std::size_t n = ops.array_size();
  if (n > kMaxTraceOps)
    ops.fail("has " + std::to_string(n) + " ops, " +
             past_limit(static_cast<double>(kMaxTraceOps), "ops", "kMaxTraceOps"));
  p.ops.reserve(n);
  for (std::size_t i = 0; i < n; ++i) p.ops.push_back(read_op(ops.at(i), i, p.mesh));
  return out;
}

}  // namespace tpusim::trace
