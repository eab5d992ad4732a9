#include "traces/chakra/chakra_ranks.hpp"

#include <filesystem>
#include <map>
#include <unordered_map>

#include "core/errors.hpp"
#include "traces/chakra/chakra.hpp"
#include "traces/chakra/chakra_attrs.hpp"
#include "traces/chakra/chakra_names.hpp"
#include "traces/chakra/chakra_stream.hpp"

namespace tpusim::trace::chakra {
namespace {
using ChakraProtoMsg::Node;

// DIR/<prefix>.<rank>.et files: rank -> path, for the one prefix the directory holds.
std::vector<std::string> rank_files(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw ConfigError(dir, "is not a directory; expected a directory of <prefix>.<rank>.et files");
  std::map<std::string, std::map<long long, std::string>> by_prefix;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() < 4 || name.compare(name.size() - 3, 3, ".et") != 0) continue;
    const std::string stem = name.substr(0, name.size() - 3);
    const auto dot = stem.rfind('.');
    const std::string digits = dot == std::string::npos ? "" : stem.substr(dot + 1);
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      throw ConfigError(entry.path().string(),
                        "is not named <prefix>.<rank>.et with a rank number");
    by_prefix[stem.substr(0, dot)][std::stoll(digits)] = entry.path().string();
  }
  if (ec) throw ConfigError(dir, "cannot list the directory: " + ec.message());
  if (by_prefix.empty()) throw ConfigError(dir, "holds no .et files; expected <prefix>.<rank>.et");
  if (by_prefix.size() > 1)
    throw ConfigError(dir, "holds the .et files of several traces ('" + by_prefix.begin()->first +
                               "' and '" + std::next(by_prefix.begin())->first +
                               "'); keep one trace per directory");
  const auto& ranks = by_prefix.begin()->second;
  std::vector<std::string> files;
  for (const auto& [rank, path] : ranks) {
    if (rank != static_cast<long long>(files.size()))
      throw ConfigError(dir, "rank " + std::to_string(files.size()) + " is missing (" +
                                 by_prefix.begin()->first + "." + std::to_string(files.size()) +
                                 ".et); expected ranks 0 to " + std::to_string(ranks.size() - 1));
    if (rank >= kMaxMeshDevices)
      throw ConfigError(dir, "more than " + std::to_string(kMaxMeshDevices) + " ranks");
    files.push_back(path);
  }
  return files;
}

bool rank_specific(const Node& node, const std::string& attr) {
  const bool p2p = node.type() == ChakraProtoMsg::COMM_SEND_NODE ||
                   node.type() == ChakraProtoMsg::COMM_RECV_NODE;
  return attr == kPgName || (p2p && (attr == kCommSrc || attr == kCommDst || attr == kCommSize));
}

// The node without what names its peers: what every rank must agree on.
std::string canonical(const Node& node) {
  Node copy = node;
  auto* attrs = copy.mutable_attr();
  for (int i = attrs->size() - 1; i >= 0; --i)
    if (rank_specific(node, attrs->Get(i).name())) attrs->DeleteSubrange(i, 1);
  return copy.SerializeAsString();
}

std::string deps_text(const Node& n) {
  std::string s;
  for (auto d : n.data_deps()) s += (s.empty() ? "" : ",") + std::to_string(d);
  for (auto d : n.ctrl_deps()) s += (s.empty() ? "ctrl " : ",ctrl ") + std::to_string(d);
  return "[" + s + "]";
}

// What differs between a rank's node and rank 0's, first found.
std::string difference(const Node& a, const Node& rank0) {
  if (a.name() != rank0.name())
    return "name '" + a.name() + "' differs from rank 0's '" + rank0.name() + "'";
  if (a.type() != rank0.type())
    return "type " + ChakraProtoMsg::NodeType_Name(a.type()) + " differs from rank 0's " +
           ChakraProtoMsg::NodeType_Name(rank0.type());
  if (deps_text(a) != deps_text(rank0))
    return "dependencies " + deps_text(a) + " differ from rank 0's " + deps_text(rank0);
  if (a.duration_micros() != rank0.duration_micros())
    return "duration_micros " + std::to_string(a.duration_micros()) + " differs from rank 0's " +
           std::to_string(rank0.duration_micros());
  for (const auto& attr : rank0.attr()) {
    if (rank_specific(rank0, attr.name())) continue;
    const auto* mine = find(a.attr(), attr.name());
    if (!mine) return "attribute '" + attr.name() + "' is missing (rank 0 has it)";
    if (mine->SerializeAsString() != attr.SerializeAsString())
      return "attribute '" + attr.name() + "' = " + mine->ShortDebugString() +
             " differs from rank 0's " + attr.ShortDebugString();
  }
  for (const auto& attr : a.attr())
    if (!rank_specific(a, attr.name()) && !find(rank0.attr(), attr.name()))
      return "attribute '" + attr.name() + "' is not on rank 0's node";
  return "inputs, outputs or start time differ from rank 0's";
}

const char* kSpmd = "; tpusim imports SPMD programs, where every rank runs the same nodes";
}  // namespace

std::string node_label(const Node& node) {
  return "node " + std::to_string(node.id()) + " '" + node.name() + "'";
}

namespace {

/// What read_rank_files keeps while it reads: rank 0's node index and canonical forms, the
/// communication entries counted against the limit, rank 0's metadata.
struct RankReading {
  std::unordered_map<std::uint64_t, std::size_t> index;
  std::vector<std::string> canon;
  std::string meta0;
  std::uint64_t entries = 0;
};

/// A node of rank 0: adds it (and room for every rank's group and peer); returns its index.
std::size_t add_rank0_node(RankNodes& r, RankReading& s, const Node& node,
                           const std::string& where) {
  if (!s.index.emplace(node.id(), r.nodes.size()).second)
    throw ConfigError(where, "a second node with this id; node ids must be unique");
  const std::size_t i = r.nodes.size();
  s.canon.push_back(canonical(node));
  r.nodes.push_back(node);
  const bool coll = node.type() == ChakraProtoMsg::COMM_COLL_NODE;
  const bool p2p = node.type() == ChakraProtoMsg::COMM_SEND_NODE ||
                   node.type() == ChakraProtoMsg::COMM_RECV_NODE;
  if (r.nodes.size() > kMaxChakraNodes)
    throw ConfigError(where, "more than " + std::to_string(kMaxChakraNodes) + " nodes in one rank");
  if (coll || p2p) s.entries += static_cast<std::uint64_t>(r.ranks);
  if (s.entries > kMaxChakraRankEntries)
    throw ConfigError(where, "communication nodes x ranks exceeds " +
                                 std::to_string(kMaxChakraRankEntries) + "; import a smaller mesh");
  r.pg_ids.emplace_back(coll ? r.ranks : 0, -1);
  r.pg_dict.emplace_back();
  r.peers.emplace_back(p2p ? r.ranks : 0, -1);
  r.p2p_bytes.push_back(0);
  return i;
}

/// A node of another rank: the index of rank 0's node it must equal.
std::size_t match_rank0_node(const RankNodes& r, const RankReading& s,
                             const std::vector<bool>& seen, const Node& node,
                             const std::string& where) {
  auto it = s.index.find(node.id());
  if (it == s.index.end())
    throw ConfigError(where, "rank 0 has no node with this id" + std::string(kSpmd));
  const std::size_t i = it->second;
  if (seen[i]) throw ConfigError(where, "a second node with this id; node ids must be unique");
  if (canonical(node) != s.canon[i])
    throw ConfigError(where, difference(node, r.nodes[i]) + std::string(kSpmd));
  return i;
}

/// The rank-specific parts of node i on `rank`: its process group, its peer and size.
void record_rank_parts(RankNodes& r, std::size_t i, long long rank, const Node& node,
                       const std::string& where) {
  if (!r.pg_ids[i].empty())
    if (auto pg = get_string(node.attr(), kPgName, where))
      r.pg_ids[i][rank] = r.pg_dict[i]
                              .try_emplace(*pg, static_cast<std::int32_t>(r.pg_dict[i].size()))
                              .first->second;
  if (r.peers[i].empty()) return;
  const bool send = node.type() == ChakraProtoMsg::COMM_SEND_NODE;
  const auto peer = get_int(node.attr(), send ? kCommDst : kCommSrc, where);
  const auto size = get_int(node.attr(), kCommSize, where);
  if (!peer || !size)
    throw ConfigError(where, std::string("needs the attributes ") + (send ? kCommDst : kCommSrc) +
                                 " and " + kCommSize);
  if (*peer < 0 || *peer >= r.ranks)
    throw ConfigError(where, std::string(send ? kCommDst : kCommSrc) + " " + std::to_string(*peer) +
                                 " is not a rank; expected 0 to " + std::to_string(r.ranks - 1));
  if (*size < 0)
    throw ConfigError(where, std::string(kCommSize) + " " + std::to_string(*size) +
                                 " is negative; expected a size in bytes >= 0");
  r.peers[i][rank] = (*size == 0 || *peer == rank) ? -1 : static_cast<std::int32_t>(*peer);
  r.p2p_bytes[i] = std::max(r.p2p_bytes[i], *size);
}

/// One rank's file: its metadata (rank 0's, or equal to it) and its nodes.
void read_rank(RankNodes& r, RankReading& s, long long rank, const std::string& file) {
  const std::string bytes = read_chakra_file(file);
  DelimitedReader reader(bytes, file);
  if (reader.at_end()) throw ConfigError(file, "is empty; expected a GlobalMetadata message");
  ChakraProtoMsg::GlobalMetadata meta;
  reader.next(meta, "metadata");
  if (rank == 0) {
    r.meta = meta;
    s.meta0 = meta.SerializeAsString();
  } else if (meta.SerializeAsString() != s.meta0) {
    throw ConfigError(file, "its GlobalMetadata differs from rank 0's" + std::string(kSpmd));
  }
  std::vector<bool> seen(r.nodes.size(), false);
  std::size_t count = 0;
  while (!reader.at_end()) {
    Node node;
    reader.next(node, "node");
    const std::string where = file + ": " + node_label(node);
    const std::size_t i =
        rank == 0 ? add_rank0_node(r, s, node, where) : match_rank0_node(r, s, seen, node, where);
    if (rank > 0) seen[i] = true;
    ++count;
    record_rank_parts(r, i, rank, node, where);
  }
  if (rank > 0 && count != r.nodes.size())
    for (std::size_t i = 0; i < r.nodes.size(); ++i)
      if (!seen[i])
        throw ConfigError(file,
                          node_label(r.nodes[i]) + " of rank 0 is missing" + std::string(kSpmd));
}

}  // namespace

RankNodes read_rank_files(const std::string& dir) {
  const auto files = rank_files(dir);
  RankNodes r;
  r.dir = dir;
  r.ranks = static_cast<long long>(files.size());
  r.rank0_file = files[0];
  RankReading reading;
  for (long long rank = 0; rank < r.ranks; ++rank) read_rank(r, reading, rank, files[rank]);
  return r;
}

}  // namespace tpusim::trace::chakra
