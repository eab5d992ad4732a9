#pragma once
// Receives spans and counters during a simulation; the Chrome trace writer is one sink.
#include <string>

#include "core/units.hpp"

namespace tpusim {

class TimelineSink {
 public:
  virtual ~TimelineSink() = default;
  /// A span of `core`'s time; `op_index` is the Program op it plays (-1 if it is no op), so a
  /// sink can describe it (FLOPs, bytes, group) from the Program.
  virtual void span(int core, int op_index, const std::string& name, const std::string& category,
                    Duration start, Duration end) = 0;
  /// A counter sample of `track` (e.g. a link) that belongs to `chip`.
  virtual void counter(int chip, const std::string& track, const std::string& name, Duration at,
                       double value) = 0;
};

}  // namespace tpusim
