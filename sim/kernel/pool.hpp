#pragma once
// Records addressed by index and reused through a free list: what a component keeps per message,
// packet or collective step in flight, so that an event names its record by a 32-bit index
// (EventQueue's typed events) and nothing is allocated per record once the pool has grown.
#include <cstdint>
#include <limits>
#include <vector>

namespace tpusim {

using PoolIndex = std::uint32_t;
constexpr PoolIndex kNoIndex = std::numeric_limits<PoolIndex>::max();

/// take() returns a free record as it was left (the caller assigns every field it reads);
/// references into the pool do not survive a take(), which may grow it.
template <class T>
class Pool {
 public:
  PoolIndex take() {
    if (free_.empty()) {
      items_.emplace_back();
      return static_cast<PoolIndex>(items_.size() - 1);
    }
    const PoolIndex i = free_.back();
    free_.pop_back();
    return i;
  }
  void give(PoolIndex i) { free_.push_back(i); }
  std::size_t size() const { return items_.size(); }  ///< records ever held at once
  T& operator[](PoolIndex i) { return items_[i]; }
  const T& operator[](PoolIndex i) const { return items_[i]; }

 private:
  std::vector<T> items_;
  std::vector<PoolIndex> free_;
};

}  // namespace tpusim
