// Chakra rank files -> one SPMD Program: rank 0's nodes in dependency order, collective groups
// from every rank's pg_name (or involved_dim), collective-permutes from send/receive pairs.
#include <algorithm>
#include <cmath>
#include <map>
#include <queue>
#include <unordered_map>

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "topologies/topology.hpp"
#include "traces/chakra/chakra.hpp"
#include "traces/chakra/chakra_attrs.hpp"
#include "traces/chakra/chakra_names.hpp"
#include "traces/chakra/chakra_ranks.hpp"
#include "traces/format/mesh_groups.hpp"

namespace tpusim::trace {
namespace {
using ChakraProtoMsg::Node;
namespace ch = chakra;

bool is_p2p(const Node& n) {
  return n.type() == ChakraProtoMsg::COMM_SEND_NODE || n.type() == ChakraProtoMsg::COMM_RECV_NODE;
}

// Units: a node, or a send and a receive with one comm_tag (one collective-permute). Returns
// unit -> node indices (send first) and node -> unit.
struct Units {
  std::vector<std::vector<std::size_t>> nodes;
  std::vector<std::size_t> unit_of;
};

Units make_units(const ch::RankNodes& r) {
  Units u;
  u.unit_of.resize(r.nodes.size());
  std::map<std::int64_t, std::size_t> open_by_tag;  // tag -> unit waiting for its partner
  for (std::size_t i = 0; i < r.nodes.size(); ++i) {
    const Node& n = r.nodes[i];
    const std::string where = r.rank0_file + ": " + ch::node_label(n);
    if (!is_p2p(n)) {
      if (n.type() != ChakraProtoMsg::COMP_NODE && n.type() != ChakraProtoMsg::COMM_COLL_NODE)
        throw ConfigError(where, "type " + ChakraProtoMsg::NodeType_Name(n.type()) +
                                     " is not imported; expected COMP_NODE, COMM_COLL_NODE, or a "
                                     "COMM_SEND_NODE and COMM_RECV_NODE pair with one comm_tag");
      u.unit_of[i] = u.nodes.size();
      u.nodes.push_back({i});
      continue;
    }
    const auto tag = ch::get_int(n.attr(), ch::kCommTag, where);
    if (!tag) throw ConfigError(where, "a send or receive node needs comm_tag");
    auto it = open_by_tag.find(*tag);
    if (it == open_by_tag.end()) {
      open_by_tag[*tag] = u.nodes.size();
      u.unit_of[i] = u.nodes.size();
      u.nodes.push_back({i});
      continue;
    }
    auto& unit = u.nodes[it->second];
    if (r.nodes[unit[0]].type() == n.type())
      throw ConfigError(where, "two " + ChakraProtoMsg::NodeType_Name(n.type()) +
                                   " nodes with comm_tag " + std::to_string(*tag) +
                                   "; expected one send and one receive per tag");
    if (n.type() == ChakraProtoMsg::COMM_SEND_NODE)
      unit.insert(unit.begin(), i);
    else
      unit.push_back(i);
    u.unit_of[i] = it->second;
    open_by_tag.erase(it);
  }
  if (!open_by_tag.empty()) {
    const Node& n = r.nodes[u.nodes[open_by_tag.begin()->second][0]];
    throw ConfigError(r.rank0_file + ": " + ch::node_label(n),
                      "has no partner with comm_tag " + std::to_string(open_by_tag.begin()->first) +
                          "; tpusim imports point-to-point nodes only as a send and a receive "
                          "with one tag (one collective-permute)");
  }
  return u;
}

// Units in dependency order (ties in file order); deps[k] are the earlier units unit k waits for.
std::vector<std::size_t> order_units(const ch::RankNodes& r, const Units& u,
                                     std::vector<std::vector<std::size_t>>& deps) {
  std::unordered_map<std::uint64_t, std::size_t> index;
  for (std::size_t i = 0; i < r.nodes.size(); ++i) index[r.nodes[i].id()] = i;
  const std::size_t count = u.nodes.size();
  deps.assign(count, {});
  std::vector<std::vector<std::size_t>> dependents(count);
  std::vector<std::size_t> waiting(count, 0);
  for (std::size_t k = 0; k < count; ++k) {
    for (std::size_t i : u.nodes[k]) {
      const Node& n = r.nodes[i];
      auto add = [&](std::uint64_t id) {
        auto it = index.find(id);
        if (it == index.end())
          throw ConfigError(r.rank0_file + ": " + ch::node_label(n),
                            "depends on node " + std::to_string(id) + ", which is not in the file");
        if (id == n.id())
          throw ConfigError(r.rank0_file + ": " + ch::node_label(n),
                            "depends on itself: a dependency cycle; dependencies must form a DAG");
        const std::size_t d = u.unit_of[it->second];
        if (d == k || std::find(deps[k].begin(), deps[k].end(), d) != deps[k].end()) return;
        deps[k].push_back(d);
        dependents[d].push_back(k);
        ++waiting[k];
      };
      for (auto id : n.data_deps()) add(id);
      for (auto id : n.ctrl_deps()) add(id);
    }
  }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t k = 0; k < count; ++k)
    if (waiting[k] == 0) ready.push(k);
  std::vector<std::size_t> order;
  while (!ready.empty()) {
    const std::size_t k = ready.top();
    ready.pop();
    order.push_back(k);
    for (std::size_t s : dependents[k])
      if (--waiting[s] == 0) ready.push(s);
  }
  if (order.size() != count)
    for (std::size_t k = 0; k < count; ++k)
      if (waiting[k] > 0)
        throw ConfigError(r.rank0_file + ": " + ch::node_label(r.nodes[u.nodes[k][0]]),
                          "is part of a dependency cycle; dependencies must form a DAG");
  return order;
}

std::vector<std::vector<std::int64_t>> parse_shapes(const std::string& text) {
  std::vector<std::vector<std::int64_t>> shapes;
  if (text.empty()) return shapes;
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) return {};
  for (const auto& s : j) {
    if (!s.is_array()) return {};
    std::vector<std::int64_t> dims;
    for (const auto& d : s) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0) return {};
      dims.push_back(d.get<std::int64_t>());
    }
    shapes.push_back(dims);
  }
  return shapes;
}

void read_common(Op& op, const Node& n, const std::string& where) {
  op.name = n.name().empty() ? "node." + std::to_string(n.id()) : n.name();
  op.shapes = parse_shapes(n.inputs().shapes());
  if (auto kind = ch::get_string(n.attr(), ch::kKind, where)) op.kind = *kind;
  if (auto phase = ch::get_string(n.attr(), ch::kPhase, where)) {
    auto p = parse_phase(*phase);
    if (!p) throw ConfigError(where, "tpusim_phase '" + *phase + "' is not a phase");
    op.phase = *p;
  }
  auto dtype_text = ch::get_string(n.attr(), ch::kDtype, where);
  auto d = parse_dtype(dtype_text.value_or(n.inputs().types()));
  if (dtype_text && !d)
    throw ConfigError(where, "tpusim_dtype '" + *dtype_text + "' is not bf16, f32 or i32");
  op.dtype = d.value_or(DType::BF16);
}

// The bounds of the trace reader (traces/format/trace_reader.cpp) for the same fields, so an
// import never writes a trace that replay refuses: finite, >= 0, at most `limit`.
double non_negative(std::optional<double> v, const char* name, const std::string& where,
                    double limit = kMaxBytes, const char* unit = "bytes",
                    const char* limit_name = "kMaxBytes") {
  if (v && !(std::isfinite(*v) && *v >= 0))
    throw ConfigError(where,
                      std::string(name) + " " + format_number(*v) + " is not a finite number >= 0");
  if (v && *v > limit)
    throw ConfigError(where, std::string(name) + " " + format_number(*v) + " is " +
                                 past_limit(limit, unit, limit_name));
  return v.value_or(0);
}

double flops_of(std::optional<double> v, const char* name, const std::string& where) {
  return non_negative(v, name, where, kMaxOpFlops, "FLOPs", "kMaxOpFlops");
}

double duration_ns(std::optional<double> v, const char* name, const std::string& where) {
  return non_negative(v, name, where, kMaxSimulatedSeconds * 1e9, "ns", "kMaxSimulatedSeconds");
}

ComputeCost read_compute(const Node& n, const std::string& where) {
  ComputeCost c;
  const auto& a = n.attr();
  if (ch::find(a, ch::kFlops)) {  // exported by tpusim: the exact cost model inputs
    c.flops = flops_of(ch::get_double(a, ch::kFlops, where), ch::kFlops, where);
    c.bytes_read = non_negative(ch::get_double(a, ch::kBytesRead, where), ch::kBytesRead, where);
    c.bytes_written =
        non_negative(ch::get_double(a, ch::kBytesWritten, where), ch::kBytesWritten, where);
    c.vpu_elements =
        non_negative(ch::get_double(a, ch::kVpuElements, where), ch::kVpuElements, where);
    c.vpu_ops_per_element =
        non_negative(ch::get_double(a, ch::kVpuOpsPerElement, where), ch::kVpuOpsPerElement, where,
                     kMaxOpFlops, "ops", "kMaxOpFlops");
    if (auto m = ch::get_int_list(a, ch::kMatmul, where)) {
      constexpr std::int64_t kMaxDim = std::int64_t{1} << 53;  // as the trace reader
      if (m->size() != 4 || (*m)[0] < 1 || (*m)[1] < 0 || (*m)[2] < 0 || (*m)[3] < 0 ||
          std::any_of(m->begin(), m->end(), [](std::int64_t d) { return d > kMaxDim; }))
        throw ConfigError(where, "tpusim_matmul must be [batch >= 1, m, k, n >= 0], each <= 2^53");
      c.matmul = MatmulShape{(*m)[0], (*m)[1], (*m)[2], (*m)[3]};
    }
    if (ch::find(a, ch::kMeasuredNs))
      c.measured_ns =
          duration_ns(ch::get_double(a, ch::kMeasuredNs, where), ch::kMeasuredNs, where);
    return c;
  }
  // A trace from elsewhere: FLOPs, bytes moved and the duration, which replay uses as measured.
  c.flops = flops_of(ch::get_double(a, ch::kNumOps, where), ch::kNumOps, where);
  c.bytes_read = non_negative(ch::get_double(a, ch::kTensorSize, where), ch::kTensorSize, where);
  c.measured_ns =
      duration_ns(static_cast<double>(n.duration_micros()) * 1e3, "duration_micros x 1000", where);
  return c;
}

std::vector<std::string> involved_axes(const std::vector<bool>& involved,
                                       const std::vector<MeshAxis>& mesh,
                                       const std::string& where) {
  if (involved.size() != mesh.size())
    throw ConfigError(where, "involved_dim has " + std::to_string(involved.size()) +
                                 " entries but the mesh (" + describe_mesh(mesh) + ") has " +
                                 std::to_string(mesh.size()) + " axes; give the mesh with --mesh");
  std::vector<std::string> axes;
  for (std::size_t i = 0; i < mesh.size(); ++i)
    if (involved[i]) axes.push_back(mesh[i].name);
  return axes;
}

// Groups from every rank's pg_name (ranks with one name form one group), else involved_dim,
// else every rank.
void read_groups(CollectiveSpec& c, const Node& n, const std::vector<std::int32_t>& pg_ids,
                 const std::vector<MeshAxis>& mesh, const std::string& where, int& assumed_all) {
  const auto involved = ch::get_bool_list(n.attr(), ch::kInvolvedDim, where);
  const bool named =
      std::any_of(pg_ids.begin(), pg_ids.end(), [](std::int32_t id) { return id >= 0; });
  if (!named) {
    if (involved)
      c.axes = involved_axes(*involved, mesh, where);
    else
      ++assumed_all;
    return;
  }
  std::map<std::int32_t, std::size_t> group_index;
  std::vector<std::vector<int>> groups;
  for (std::size_t rank = 0; rank < pg_ids.size(); ++rank) {
    if (pg_ids[rank] < 0)
      throw ConfigError(where, "rank " + std::to_string(rank) +
                                   " gives no pg_name while other ranks do; every rank names its "
                                   "process group");
    auto [it, inserted] = group_index.try_emplace(pg_ids[rank], groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(static_cast<int>(rank));
  }
  if (involved) {  // the axes it names, if the ranks' groups are theirs
    c.axes = involved_axes(*involved, mesh, where);
    if (mesh_axis_groups(mesh, c.axes) != groups)
      throw ConfigError(where,
                        "the ranks' pg_name groups are not the groups of the mesh axes its "
                        "involved_dim names (mesh " +
                            describe_mesh(mesh) + ")");
    return;
  }
  // One group of every rank is the whole mesh. Other groups become mesh axes where they are
  // theirs, except in tpusim's own export, which writes involved_dim for every axes group.
  auto axes = axes_matching_groups(mesh, groups, false);
  if (groups.size() == 1)
    c.axes.clear();
  else if (axes && !ch::find(n.attr(), ch::kKind))
    c.axes = *axes;
  else
    c.replica_groups = groups;
}

CollectiveSpec read_permute(const ch::RankNodes& r, const std::vector<std::size_t>& pair,
                            const std::vector<MeshAxis>& mesh, const std::string& where) {
  const Node& send = r.nodes[pair[0]];
  CollectiveSpec c;
  c.kind = CollectiveKind::CollectivePermute;
  std::vector<std::vector<int>> sends, receives;
  for (long long rank = 0; rank < r.ranks; ++rank) {
    if (r.peers[pair[0]][rank] >= 0) sends.push_back({int(rank), int(r.peers[pair[0]][rank])});
    if (r.peers[pair[1]][rank] >= 0) receives.push_back({int(r.peers[pair[1]][rank]), int(rank)});
  }
  std::sort(receives.begin(), receives.end());
  if (sends != receives)
    throw ConfigError(where,
                      "the ranks' sends and receives do not match (a rank sends to a peer "
                      "that does not receive from it)");
  const auto shift = permute_from_pairs(mesh, sends);
  if (!shift)
    throw ConfigError(where, "its sends are not a uniform shift along mesh axes (" +
                                 describe_mesh(mesh) +
                                 "); tpusim models point-to-point traffic as collective-permutes");
  c.axes = shift->axes;
  c.shift = shift->shift;
  c.wrap = shift->wrap;
  c.bytes = non_negative(ch::get_double(send.attr(), ch::kCommBytes, where), ch::kCommBytes, where);
  if (!ch::find(send.attr(), ch::kCommBytes)) c.bytes = static_cast<double>(r.p2p_bytes[pair[0]]);
  return c;
}

std::vector<MeshAxis> import_mesh(const ch::RankNodes& r, const ChakraImportOptions& options) {
  const std::string where = r.rank0_file + ": metadata";
  std::vector<MeshAxis> mesh;
  if (options.mesh)
    mesh = *options.mesh;
  else if (auto text = ch::get_string(r.meta.attr(), ch::kMesh, where))
    mesh = parse_mesh_axes(*text, where + " " + ch::kMesh);
  else
    mesh = {MeshAxis{"data", static_cast<int>(r.ranks)}};
  long long devices = 1;
  for (const auto& a : mesh) devices *= a.size;
  if (devices != r.ranks)
    throw ConfigError(options.mesh ? "--mesh" : where,
                      "the mesh " + describe_mesh(mesh) + " has " + std::to_string(devices) +
                          " devices but the directory holds " + std::to_string(r.ranks) +
                          " ranks; they must be equal");
  return mesh;
}

// Global batches up to 2^53, the largest integer a JSON double holds (as traces/FORMAT.md says).
constexpr long long kMaxExamplesPerStep = 1LL << 53;

// A recorded topology must be an object the trace reader reads back (replay uses it).
void check_recorded_topology(const nlohmann::json& recorded_on, const std::string& where) {
  if (!recorded_on.contains("topology")) return;
  const nlohmann::json& t = recorded_on["topology"];
  if (!t.is_object())
    throw ConfigError(where, "is " + std::string(t.type_name()) +
                                 "; expected an object such as {\"name\": \"tpu_v3_2x2\", "
                                 "\"dims\": [2, 2], \"wrap\": [false, false]}");
  if (t.contains("name") && !t["name"].is_string())
    throw ConfigError(where + ".name", "is not a string");
  topology_from_json(t, where);
}

// The Program's model, batch and recorded_on from rank 0's metadata (or the options).
void read_metadata(ChakraImport& result, const ch::RankNodes& r, const ChakraImportOptions& options,
                   const std::string& dir) {
  const std::string meta_where = r.rank0_file + ": metadata";
  if (r.meta.version() != kChakraSchemaVersion)
    result.warnings.push_back(meta_where + ": schema version '" + r.meta.version() +
                              "'; this importer follows " + kChakraSchemaVersion);
  Program& p = result.trace.program;
  p.mesh = import_mesh(r, options);
  p.model = options.model.value_or(
      ch::get_string(r.meta.attr(), ch::kModel, meta_where).value_or("imported"));
  if (p.model.empty()) p.model = "imported";
  p.examples_per_step = options.examples_per_step.value_or(
      ch::get_int(r.meta.attr(), ch::kExamplesPerStep, meta_where).value_or(0));
  // What the trace reader (and so replay) accepts, checked here so no trace it refuses is written.
  if (p.examples_per_step < 0 || p.examples_per_step > kMaxExamplesPerStep) {
    const std::string what = std::to_string(p.examples_per_step) +
                             " is not a global batch; expected 0 (unknown) to 2^53";
    if (options.examples_per_step) throw ConfigError("--examples-per-step", what);
    throw ConfigError(meta_where, std::string(ch::kExamplesPerStep) + " " + what);
  }
  nlohmann::json recorded_on = nlohmann::json::object();
  if (auto text = ch::get_string(r.meta.attr(), ch::kRecordedOn, meta_where)) {
    recorded_on = nlohmann::json::parse(*text, nullptr, false);
    if (!recorded_on.is_object())
      throw ConfigError(meta_where, std::string(ch::kRecordedOn) + " is not a JSON object");
    check_recorded_topology(recorded_on, meta_where + " " + ch::kRecordedOn + ".topology");
  }
  recorded_on["chakra_source"] = dir;
  result.trace.recorded_on = recorded_on;
}

// A communication unit (a collective node, or a send with its receive) as a collective op;
// counts the groups and dtypes it had to assume.
void read_communication(Op& op, const ch::RankNodes& r, const std::vector<std::size_t>& members,
                        const std::vector<MeshAxis>& mesh, const std::string& where,
                        int& assumed_all, int& assumed_dtype) {
  const Node& n = r.nodes[members[0]];
  op.is_collective = true;
  if (n.type() == ChakraProtoMsg::COMM_COLL_NODE) {
    const auto type = ch::get_int(n.attr(), ch::kCommType, where);
    if (!type) throw ConfigError(where, "a collective node needs comm_type");
    const auto kind = ch::kind_of_comm_type(*type);
    if (!kind)
      throw ConfigError(where, "comm_type " + std::to_string(*type) +
                                   " is not a collective tpusim models; expected ALL_REDUCE "
                                   "(0), ALL_GATHER (2), ALL_TO_ALL (6), REDUCE_SCATTER (7) or "
                                   "REDUCE_SCATTER_BLOCK (8)");
    op.collective.kind = *kind;
    read_groups(op.collective, n, r.pg_ids[members[0]], mesh, where, assumed_all);
    const auto bytes = ch::find(n.attr(), ch::kCommBytes)
                           ? ch::get_double(n.attr(), ch::kCommBytes, where)
                           : ch::get_double(n.attr(), ch::kCommSize, where);
    if (!bytes) throw ConfigError(where, "a collective node needs comm_size");
    op.collective.bytes = non_negative(bytes, ch::kCommSize, where);
  } else {
    if (members.size() != 2 || n.type() != ChakraProtoMsg::COMM_SEND_NODE)
      throw ConfigError(where, "a send needs a receive with the same comm_tag");
    op.collective = read_permute(r, members, mesh, where);
    if (op.name.size() > 5 && op.name.compare(op.name.size() - 5, 5, ".send") == 0)
      op.name.resize(op.name.size() - 5);
  }
  if (op.kind.empty()) op.kind = to_string(op.collective.kind);
  auto dtype = ch::get_string(n.attr(), ch::kCommDtype, where);
  auto parsed = dtype ? parse_dtype(*dtype) : std::optional<DType>{};
  if (dtype && !parsed)
    throw ConfigError(where, "tpusim_comm_dtype '" + *dtype + "' is not bf16, f32 or i32");
  if (!dtype) ++assumed_dtype;
  op.collective.dtype = parsed.value_or(op.dtype);
}

}  // namespace

ChakraImport read_chakra(const std::string& dir, const ChakraImportOptions& options) {
  const ch::RankNodes r = ch::read_rank_files(dir);
  ChakraImport result;
  result.ranks = r.ranks;
  read_metadata(result, r, options, dir);
  Program& p = result.trace.program;

  const Units units = make_units(r);
  std::vector<std::vector<std::size_t>> unit_deps;
  const auto order = order_units(r, units, unit_deps);
  std::vector<int> op_of_unit(units.nodes.size(), -1);
  int assumed_all = 0, assumed_dtype = 0;
  for (std::size_t k : order) {
    const auto& members = units.nodes[k];
    const Node& n = r.nodes[members[0]];
    const std::string where = r.rank0_file + ": " + ch::node_label(n);
    Op op;
    read_common(op, n, where);
    for (std::size_t d : unit_deps[k]) op.deps.push_back(op_of_unit[d]);
    std::sort(op.deps.begin(), op.deps.end());
    if (n.type() == ChakraProtoMsg::COMP_NODE) {
      if (op.kind.empty()) op.kind = "chakra_comp";
      if (parse_collective_kind(op.kind))
        throw ConfigError(where, "a compute node's tpusim_kind '" + op.kind +
                                     "' is a collective kind; expected a compute kind");
      op.compute = read_compute(n, where);
    } else {
      read_communication(op, r, members, p.mesh, where, assumed_all, assumed_dtype);
    }
    op_of_unit[k] = static_cast<int>(p.ops.size());
    p.ops.push_back(std::move(op));
  }
  if (assumed_all)
    result.warnings.push_back(std::to_string(assumed_all) +
                              " collective nodes name no group (no pg_name or involved_dim); "
                              "taken as spanning every rank");
  if (assumed_dtype)
    result.warnings.push_back(std::to_string(assumed_dtype) +
                              " collectives carry no tpusim_comm_dtype; their reduction type is "
                              "the node's input type (bf16 if none)");
  try {
    p.validate();
  } catch (const ConfigError& e) {
    std::vector<Problem> problems = e.problems();
    for (auto& pr : problems) pr.where = dir + ": " + pr.where;
    throw ConfigError(problems);
  }
  return result;
}

}  // namespace tpusim::trace
