#pragma once
// Turns a SweepSpec into its points: every combination of the value axes (first axis outermost),
// derived values computed, each point's study validated with the core loader and keyed by a
// hash of its resolved config (the key that resume and file names use).
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/sweep/sweep_spec.hpp"

namespace tpusim::sweep {

struct SweepPoint {
  std::size_t index = 0;               ///< position in expansion order, from 0
  std::vector<nlohmann::json> values;  ///< aligned with SweepSpec::column_names()
  nlohmann::json study;                ///< base + --set + axis values, as written
  nlohmann::json resolved;             ///< after load_config: presets, defaults, validated
  std::string id;                      ///< 16 hex digits: FNV-1a 64 of resolved.dump()
};

/// Chips and devices of a study (presets and shorthands resolved, declared defaults used for
/// what is not given): a device is a TensorCore, or a whole chip with hardware.megacore. Throws
/// ConfigError if the topology cannot be read.
struct ChipCount {
  std::int64_t chips = 0;
  std::int64_t cores = 0;
  std::int64_t devices_per_chip = 0;
};
ChipCount count_chips(const nlohmann::json& study);

/// Checks one point's study and returns its resolved config; throws ConfigError. The default is
/// the core loader (load_config); `tpusim sweep` passes every check of `tpusim validate`
/// (layout and program too), so that no point fails on input that could be checked first.
using StudyValidator = std::function<nlohmann::json(const nlohmann::json& study)>;
nlohmann::json validate_with_core_loader(const nlohmann::json& study);

/// Every point with its study and derived values; `sets` ("path=value") apply to the base before
/// the axes. Then each point is validated; all problems of all points are thrown together, each
/// prefixed with the point ("point 3 [topology=4x4]: ..."). Two points that resolve to the same
/// study are an error too (an axis without effect).
std::vector<SweepPoint> expand(const SweepSpec& spec, const std::vector<std::string>& sets,
                               const StudyValidator& validate = validate_with_core_loader);

/// A value as written in CSV cells and labels: strings bare, everything else compact JSON.
std::string value_text(const nlohmann::json& v);
/// "topology=4x4 workload.global_batch=64"
std::string point_label(const SweepSpec& spec, const SweepPoint& point);

/// FNV-1a 64-bit, fed piece by piece (plan's Program fingerprint feeds it numbers' bytes).
class Fnv1a {
 public:
  void bytes(const void* p, std::size_t n);
  /// The hash so far as 16 lowercase hex digits.
  std::string hex() const;

 private:
  std::uint64_t h_ = 14695981039346656037ull;
};

/// FNV-1a 64-bit of `text` as 16 lowercase hex digits.
std::string fnv1a_hex(const std::string& text);

/// A resolved study's id: the FNV-1a hash of its JSON text. A sweep's or plan's point is stored
/// under it (DIR/points/ID.json), and the Program file plan writes for a point is tagged with it.
std::string study_id(const nlohmann::json& resolved);

/// Indices in [0, n) that shard `shard` (1-based) of `count` runs: round robin, index % count ==
/// shard - 1, so large and small points spread over the shards. Every index is in exactly one.
std::vector<std::size_t> shard_indices(std::size_t n, int shard, int count);

}  // namespace tpusim::sweep
