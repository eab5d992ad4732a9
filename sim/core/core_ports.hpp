#pragma once
// What a TensorCore asks of the parts above it, as interfaces they implement: the collective
// engine takes the core's collectives (sim/collectives/collective_engine.hpp), the hosts fill its
// infeed queue (sim/machine/host.hpp). A core sees only these, so sim/core includes neither
// sim/collectives/ nor sim/machine/ (the layering of docs/design.md).
#include "core/units.hpp"

namespace tpusim {

/// Where a core's collectives go.
class CollectivePort {
 public:
  virtual ~CollectivePort() = default;
  /// Core `core` reaches collective op `op_index` now.
  virtual void arrive(int op_index, int core) = 0;
};

/// What a TensorCore asks at an infeed op.
class InfeedPort {
 public:
  virtual ~InfeedPort() = default;
  /// True if batch `batch` is in core `core`'s queue at `now`. A false answer records that the
  /// core waits from `now` on (the core is woken when the batch arrives).
  virtual bool available(int core, int batch, Duration now) = 0;
  /// Core `core` takes batch `batch` at `now`, freeing its queue slot.
  virtual void dequeue(int core, int batch, Duration now) = 0;
};

}  // namespace tpusim
