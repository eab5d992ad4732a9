// Program -> one Chakra `.et` file per mesh device. Nodes that are the same on every rank are
// serialized once; only collectives (their process group) and permutes (their peers) are
// written per rank.
#include <cassert>
#include <cmath>
#include <filesystem>
#include <map>

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "traces/chakra/chakra.hpp"
#include "traces/chakra/chakra_attrs.hpp"
#include "traces/chakra/chakra_names.hpp"
#include "traces/chakra/chakra_stream.hpp"
#include "traces/format/file_bytes.hpp"
#include "traces/format/mesh_groups.hpp"

namespace tpusim::trace {
namespace {
using ChakraProtoMsg::Node;
namespace ch = chakra;

std::int64_t rounded(double v) { return static_cast<std::int64_t>(std::llround(v)); }

// Every device's group for one collective: group_of[d] indexes groups.
struct DeviceGroups {
  std::vector<std::vector<int>> groups;
  std::vector<int> group_of, pos;
  std::string axes_name;  ///< "data+model", "all", or empty for explicit groups
};

DeviceGroups device_groups(const CollectiveSpec& c, const std::vector<MeshAxis>& mesh,
                           long long devices) {
  DeviceGroups g;
  if (c.replica_groups.empty()) {
    g.groups = mesh_axis_groups(mesh, c.axes);
    for (const auto& a : c.axes) g.axes_name += (g.axes_name.empty() ? "" : "+") + a;
    if (c.axes.empty()) g.axes_name = "all";
  } else {
    g.groups = c.replica_groups;
  }
  g.group_of.assign(devices, 0);
  g.pos.assign(devices, 0);
  for (std::size_t i = 0; i < g.groups.size(); ++i)
    for (std::size_t k = 0; k < g.groups[i].size(); ++k) {
      g.group_of[g.groups[i][k]] = static_cast<int>(i);
      g.pos[g.groups[i][k]] = static_cast<int>(k);
    }
  return g;
}

// pg_name: "data#3" (the 4th group along data), "all", or the members of an explicit group.
std::string group_name(const DeviceGroups& g, int device) {
  const int index = g.group_of[device];
  if (!g.axes_name.empty())
    return g.axes_name == "all" ? "all" : g.axes_name + "#" + std::to_string(index);
  std::string name = "ranks:";
  for (std::size_t k = 0; k < g.groups[index].size(); ++k)
    name += (k ? "," : "") + std::to_string(g.groups[index][k]);
  return name;
}

// The member `shift` places along `device`'s group, or -1 past the end of an open group.
int permute_peer(const DeviceGroups& g, int device, int shift, bool wrap) {
  const auto& group = g.groups[g.group_of[device]];
  const long long size = static_cast<long long>(group.size());
  long long k = g.pos[device] + static_cast<long long>(shift);
  if (wrap) k = ((k % size) + size) % size;
  return k < 0 || k >= size ? -1 : group[k];
}

void add_common(Node& node, const Op& op, bool tpusim) {
  node.set_name(op.name);
  ch::add_bool(*node.mutable_attr(), ch::kIsCpuOp, false);
  if (!op.shapes.empty()) node.mutable_inputs()->set_shapes(nlohmann::json(op.shapes).dump());
  node.mutable_inputs()->set_types(to_string(op.dtype));
  if (!tpusim) return;
  ch::add_string(*node.mutable_attr(), ch::kKind, op.kind);
  ch::add_string(*node.mutable_attr(), ch::kPhase, to_string(op.phase));
  ch::add_string(*node.mutable_attr(), ch::kDtype, to_string(op.dtype));
}

void add_compute(Node& node, const ComputeCost& c, double duration_ns, bool tpusim) {
  node.set_type(ChakraProtoMsg::COMP_NODE);
  node.set_duration_micros(static_cast<std::uint64_t>(std::llround(duration_ns / 1e3)));
  auto& attrs = *node.mutable_attr();
  ch::add_int(attrs, ch::kNumOps, rounded(c.flops));
  ch::add_int(attrs, ch::kTensorSize, rounded(c.bytes_read + c.bytes_written));
  if (!tpusim) return;
  ch::add_double(attrs, ch::kFlops, c.flops);
  ch::add_double(attrs, ch::kBytesRead, c.bytes_read);
  ch::add_double(attrs, ch::kBytesWritten, c.bytes_written);
  ch::add_double(attrs, ch::kVpuElements, c.vpu_elements);
  ch::add_double(attrs, ch::kVpuOpsPerElement, c.vpu_ops_per_element);
  if (c.matmul)
    ch::add_int_list(attrs, ch::kMatmul, {c.matmul->batch, c.matmul->m, c.matmul->k, c.matmul->n});
  if (c.measured_ns) ch::add_double(attrs, ch::kMeasuredNs, *c.measured_ns);
}

void add_collective(Node& node, const CollectiveSpec& c, const std::vector<MeshAxis>& mesh,
                    bool tpusim) {
  auto& attrs = *node.mutable_attr();
  if (tpusim) {
    ch::add_double(attrs, ch::kCommBytes, c.bytes);
    ch::add_string(attrs, ch::kCommDtype, to_string(c.dtype));
  }
  if (c.kind == CollectiveKind::CollectivePermute) {
    ch::add_int(attrs, ch::kCommTag, node.id());
    if (tpusim) {
      ch::add_int(attrs, ch::kShift, c.shift);
      ch::add_bool(attrs, ch::kWrap, c.wrap);
    }
    return;
  }
  node.set_type(ChakraProtoMsg::COMM_COLL_NODE);
  ch::add_int(attrs, ch::kCommType, ch::comm_type_of(c.kind));
  ch::add_int(attrs, ch::kCommSize, rounded(c.bytes));
  // involved_dim: which mesh axes the group spans. None for every device (pg_name "all") and
  // for explicit groups (their pg_name lists the members).
  if (c.replica_groups.empty() && !c.axes.empty()) {
    std::vector<bool> involved;
    for (const auto& m : mesh)
      involved.push_back(std::find(c.axes.begin(), c.axes.end(), m.name) != c.axes.end());
    ch::add_bool_list(attrs, ch::kInvolvedDim, involved);
  }
}

std::string mesh_text(const std::vector<MeshAxis>& mesh) {
  std::string s;
  for (const auto& a : mesh) s += (s.empty() ? "" : ",") + a.name + "=" + std::to_string(a.size);
  return s;
}

// One op's node(s) for one rank: the fixed bytes, or the rank-specific attributes added.
struct OpNodes {
  std::string fixed;    ///< serialized once, if the node is the same on every rank
  Node node;            ///< collective / permute send: completed per rank
  Node recv;            ///< permute only
  DeviceGroups groups;  ///< collectives
  bool per_rank = false;
};

void append_rank_nodes(std::string& out, OpNodes& n, const Op& op, int rank) {
  if (!n.per_rank) {
    append_delimited_bytes(out, n.fixed);
    return;
  }
  const CollectiveSpec& c = op.collective;
  if (c.kind != CollectiveKind::CollectivePermute) {
    ch::add_string(*n.node.mutable_attr(), ch::kPgName, group_name(n.groups, rank));
    append_delimited(out, n.node);
    n.node.mutable_attr()->RemoveLast();
    return;
  }
  // A rank without a peer (the end of an open group) sends or receives 0 bytes to itself, so
  // every rank has the same nodes.
  const int dst = permute_peer(n.groups, rank, c.shift, c.wrap);
  const int src = permute_peer(n.groups, rank, -c.shift, c.wrap);
  auto* send = n.node.mutable_attr();
  ch::add_int(*send, ch::kCommSrc, rank);
  ch::add_int(*send, ch::kCommDst, dst < 0 ? rank : dst);
  ch::add_int(*send, ch::kCommSize, dst < 0 ? 0 : rounded(c.bytes));
  append_delimited(out, n.node);
  for (int i = 0; i < 3; ++i) send->RemoveLast();
  auto* recv = n.recv.mutable_attr();
  ch::add_int(*recv, ch::kCommSrc, src < 0 ? rank : src);
  ch::add_int(*recv, ch::kCommDst, rank);
  ch::add_int(*recv, ch::kCommSize, src < 0 ? 0 : rounded(c.bytes));
  append_delimited(out, n.recv);
  for (int i = 0; i < 3; ++i) recv->RemoveLast();
}

}  // namespace

namespace {
/// Writes the `.et` file of every rank; all or none: a failure (a full disk) removes the files
/// this export wrote. Returns the bytes written.
std::uint64_t write_ranks(std::vector<OpNodes>& nodes, const Program& program,
                          const std::string& meta_bytes, long long devices, const std::string& dir,
                          const std::string& prefix) {
  std::uint64_t bytes = 0;
  std::vector<std::string> written;
  try {
    for (int rank = 0; rank < devices; ++rank) {
      std::string out = meta_bytes;
      for (std::size_t i = 0; i < nodes.size(); ++i)
        append_rank_nodes(out, nodes[i], program.ops[i], rank);
      written.push_back(
          (std::filesystem::path(dir) / (prefix + "." + std::to_string(rank) + ".et")).string());
      write_file_maybe_gzip(written.back(), out);
      bytes += out.size();
    }
  } catch (...) {
    std::error_code ec;
    for (const auto& f : written) std::filesystem::remove(f, ec);
    throw;
  }
  return bytes;
}
}  // namespace

ChakraExportSummary write_chakra(const Program& program, const nlohmann::json& recorded_on,
                                 const std::vector<double>& duration_ns, const std::string& dir,
                                 const ChakraExportOptions& options) {
  assert(duration_ns.size() == program.ops.size());
  const bool tpusim = options.tpusim_attributes;
  long long devices = 1;
  for (const auto& a : program.mesh) devices *= a.size;
  if (devices > kMaxChakraRanks)
    throw ConfigError(
        dir, "the mesh " + mesh_text(program.mesh) + " has " + std::to_string(devices) +
                 " devices, one .et file each: " +
                 past_limit(static_cast<double>(kMaxChakraRanks), "ranks", "kMaxChakraRanks") +
                 "; allowed: a mesh of at most " + std::to_string(kMaxChakraRanks) + " devices");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw ConfigError(dir, "cannot create the output directory: " + ec.message());

  const std::uint64_t n = program.ops.size();
  // Node ids: op i is node i; a permute's receive is node n + i. Dependents wait for both.
  auto is_permute = [&](std::size_t i) {
    return program.ops[i].is_collective &&
           program.ops[i].collective.kind == CollectiveKind::CollectivePermute;
  };
  std::vector<OpNodes> nodes(n);
  std::map<std::vector<std::string>, DeviceGroups> axis_groups;  // shared by equal axes
  for (std::size_t i = 0; i < n; ++i) {
    const Op& op = program.ops[i];
    Node& node = nodes[i].node;
    node.set_id(i);
    for (int d : op.deps) {
      node.add_data_deps(d);
      if (is_permute(d)) node.add_data_deps(n + d);
    }
    add_common(node, op, tpusim);
    if (!op.is_collective) {
      add_compute(node, op.compute, duration_ns[i], tpusim);
      nodes[i].fixed = node.SerializeAsString();
      continue;
    }
    add_collective(node, op.collective, program.mesh, tpusim);
    nodes[i].per_rank = true;
    const CollectiveSpec& c = op.collective;
    if (c.replica_groups.empty()) {
      auto [it, inserted] = axis_groups.try_emplace(c.axes);
      if (inserted) it->second = device_groups(c, program.mesh, devices);
      nodes[i].groups = it->second;
    } else {
      nodes[i].groups = device_groups(c, program.mesh, devices);
    }
    if (is_permute(i)) {
      node.set_type(ChakraProtoMsg::COMM_SEND_NODE);
      Node& recv = nodes[i].recv;
      recv = node;
      recv.set_id(n + i);
      recv.set_type(ChakraProtoMsg::COMM_RECV_NODE);
      recv.set_name(op.name + ".recv");
      node.set_name(op.name + ".send");
    }
  }

  ChakraProtoMsg::GlobalMetadata meta;
  meta.set_version(kChakraSchemaVersion);
  ch::add_string(*meta.mutable_attr(), ch::kMesh, mesh_text(program.mesh));
  ch::add_string(*meta.mutable_attr(), ch::kModel, program.model);
  ch::add_int(*meta.mutable_attr(), ch::kExamplesPerStep, program.examples_per_step);
  if (tpusim && !recorded_on.is_null())
    ch::add_string(*meta.mutable_attr(), ch::kRecordedOn, recorded_on.dump());
  std::string meta_bytes;
  append_delimited(meta_bytes, meta);

  ChakraExportSummary summary;
  summary.ranks = devices;
  for (std::size_t i = 0; i < n; ++i) summary.nodes_per_rank += is_permute(i) ? 2 : 1;
  summary.bytes = write_ranks(nodes, program, meta_bytes, devices, dir, options.prefix);
  return summary;
}

}  // namespace tpusim::trace
