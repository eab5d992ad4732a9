#pragma once
// Reading the rank files of a Chakra trace directory and checking that the ranks agree: every
// rank must have the same metadata and the same nodes (ids, names, types, dependencies,
// durations, attributes) except for what names its peers (pg_name, comm_src, comm_dst, and the
// size of a point-to-point node). Part of the Chakra importer.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "traces/chakra/chakra_et.pb.h"

namespace tpusim::trace::chakra {

struct RankNodes {
  std::string dir;
  long long ranks = 0;
  std::string rank0_file;
  ChakraProtoMsg::GlobalMetadata meta;      ///< rank 0's
  std::vector<ChakraProtoMsg::Node> nodes;  ///< rank 0's, in file order
  /// Collective nodes: each rank's pg_name as an index into pg_dict[node] (-1: none); empty for
  /// other nodes. Ranks with one index are one process group.
  std::vector<std::vector<std::int32_t>> pg_ids;
  std::vector<std::map<std::string, std::int32_t>> pg_dict;
  /// Send (receive) nodes: each rank's comm_dst (comm_src), -1 for a 0-byte or self message.
  std::vector<std::vector<std::int32_t>> peers;
  /// Send and receive nodes: the largest comm_size any rank gives.
  std::vector<std::int64_t> p2p_bytes;
};

/// Reads DIR/<prefix>.<rank>.et (one prefix, ranks 0..N-1). ConfigError naming the file, node and
/// field where a rank differs from rank 0.
RankNodes read_rank_files(const std::string& dir);

/// "node 12 'fusion.3'"
std::string node_label(const ChakraProtoMsg::Node& node);

}  // namespace tpusim::trace::chakra
