#pragma once
// Chakra execution traces (MLCommons, schema 0.0.4): one `.et` file per rank, each a stream of
// length-delimited protobuf messages (a GlobalMetadata, then Nodes). The exporter writes every
// rank of an SPMD Program; the importer reads the ranks of a directory back into one Program
// and refuses ranks that do not run the same nodes. docs/chakra.md is the user guide. Plain C++
// (no SystemC).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "traces/format/trace_format.hpp"

namespace tpusim::trace {

constexpr const char* kChakraSchemaVersion = "0.0.4";
/// Largest single message accepted in a `.et` stream (a node of a real trace is a few hundred
/// bytes; the metadata holds the recorded study, a few KiB). Bounds what a corrupt length asks.
constexpr std::uint64_t kMaxChakraMessageBytes = std::uint64_t{64} << 20;
/// Most nodes per rank (a BERT step is about 1000), and most per-rank entries (collective and
/// point-to-point nodes x ranks) kept while the ranks are compared: 4 bytes each.
constexpr std::size_t kMaxChakraNodes = std::size_t{1} << 20;
constexpr std::uint64_t kMaxChakraRankEntries = std::uint64_t{1} << 27;
/// Largest `.et` file read (the whole file is held while it is parsed).
constexpr std::uint64_t kMaxChakraFileBytes = std::uint64_t{1} << 30;

struct ChakraExportOptions {
  std::string prefix = "tpusim";  ///< files are DIR/<prefix>.<rank>.et
  /// Also write tpusim's own attributes (tpusim_*: the exact cost model inputs, kind, phase,
  /// dtype, mesh, recorded study), so that import gives back exactly the same Program.
  bool tpusim_attributes = true;
};

struct ChakraExportSummary {
  long long ranks = 0;
  std::size_t nodes_per_rank = 0;
  std::uintmax_t bytes = 0;  ///< all files together
};

/// Writes one `.et` file per mesh device. `duration_ns[i]` is compute op i's duration (measured
/// or modelled; ignored for collectives), written as duration_micros. `recorded_on` (null or an
/// object) goes into the metadata with the tpusim attributes.
ChakraExportSummary write_chakra(const Program& program, const nlohmann::json& recorded_on,
                                 const std::vector<double>& duration_ns, const std::string& dir,
                                 const ChakraExportOptions& options);

struct ChakraImportOptions {
  std::optional<std::vector<MeshAxis>> mesh;   ///< default: tpusim_mesh, else data = ranks
  std::optional<std::string> model;            ///< default: tpusim_model, else "imported"
  std::optional<long long> examples_per_step;  ///< default: tpusim_examples_per_step, else 0
};

struct ChakraImport {
  TraceFile trace;  ///< recorded_on: the exported tpusim_recorded_on, plus the source
  long long ranks = 0;
  std::vector<std::string> warnings;
};

/// Reads DIR/<prefix>.<rank>.et for ranks 0..N-1 into one SPMD Program. Throws ConfigError
/// naming the file and node on malformed input or ranks that disagree.
ChakraImport read_chakra(const std::string& dir, const ChakraImportOptions& options);

}  // namespace tpusim::trace
