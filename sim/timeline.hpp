#pragma once
// Receives spans and counters during a simulation; the Chrome trace writer is one sink.
#include <string>

#include "core/units.hpp"

namespace tpusim {

class TimelineSink {
 public:
  virtual ~TimelineSink() = default;
  virtual void span(int core, const std::string& name, const std::string& category, Duration start,
                    Duration end) = 0;
  virtual void counter(const std::string& track, const std::string& name, Duration at,
                       double value) = 0;
};

}  // namespace tpusim
