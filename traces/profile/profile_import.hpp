#pragma once
// Importing a TPU profile (Chrome trace event file from the TensorFlow or JAX profiler) as an
// SPMD Program. docs/traces.md lists every field read.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "models/program.hpp"

namespace tpusim::trace {

/// What the user says about a collective the profile does not fully describe (a --sizes entry:
/// a number of bytes, or an object with "bytes" and optionally "dtype", "axes",
/// "replica_groups", "shift", "wrap").
struct CollectiveOverride {
  std::optional<double> bytes;
  std::optional<DType> dtype;
  std::optional<std::vector<std::string>> axes;
  std::optional<std::vector<std::vector<int>>> replica_groups;
  std::optional<int> shift;
  std::optional<bool> wrap;
};
using CollectiveOverrides = std::map<std::string, CollectiveOverride>;

/// Reads a --sizes document: {"all-reduce.3": 4194304, "collective-permute.1": {"bytes": 8192,
/// "axes": ["data"], "shift": 1, "wrap": true}}. Errors name `name` and the key.
CollectiveOverrides read_collective_overrides(const nlohmann::json& doc, const std::string& name);

struct ImportOptions {
  std::vector<MeshAxis> mesh;  ///< empty: one axis "data" over the profile's TPU devices
  CollectiveOverrides overrides;
  std::string model = "imported";
  std::int64_t examples_per_step = 0;  ///< 0: unknown
  std::string ops_thread = "XLA Ops";  ///< the device thread whose events are ops
  int device = -1;  ///< TPU id whose ops become the Program; -1: the lowest id with ops
  int step = -1;    ///< index into the "Steps" track; -1: every op in the file
};

struct ImportResult {
  Program program;
  int representative_tpu = -1;
  std::size_t tpu_devices = 0;       ///< TPU devices found in the profile
  std::size_t matching_devices = 0;  ///< devices whose op sequence equals the representative's
  std::vector<std::string> warnings;
};

/// Imports a parsed profile; errors name `name` and the event ("traceEvents[12].dur").
ImportResult import_profile(const nlohmann::json& doc, const std::string& name,
                            const ImportOptions& options);
/// Same from bytes (gzip detected by magic bytes); the fuzz target's entry point.
ImportResult import_profile_bytes(const std::string& bytes, const std::string& name,
                                  const ImportOptions& options);
ImportResult import_profile_file(const std::string& path, const ImportOptions& options);

}  // namespace tpusim::trace
