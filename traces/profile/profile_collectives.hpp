#pragma once
// Turning the events of one XLA collective (a synchronous op, or a -start/-done pair) into a
// CollectiveSpec: size, dtype, group and permute shift. Part of the profile importer.
#include <set>
#include <string>
#include <vector>

#include "models/program.hpp"
#include "traces/profile/device_tracks.hpp"
#include "traces/profile/profile_import.hpp"

namespace tpusim::trace {

struct CollectiveEvents {
  CollectiveKind kind = CollectiveKind::AllReduce;
  const SpanEvent* first =
      nullptr;  ///< the synchronous op or the -start event (its name names the op)
  const SpanEvent* done = nullptr;  ///< the -done event, if any
};

/// State shared by every collective of one import.
struct CollectiveContext {
  std::string file;
  std::vector<MeshAxis> mesh;
  long long devices = 1;
  const CollectiveOverrides* overrides = nullptr;
  std::set<std::string> used_overrides;
  int assumed_all_devices = 0;  ///< collectives without group information
  int assumed_dtype = 0;        ///< collectives without an element type
};

/// Resolves the collective; ConfigError naming the event if its size or group cannot be known.
CollectiveSpec resolve_collective(const CollectiveEvents& events, CollectiveContext& ctx);

}  // namespace tpusim::trace
