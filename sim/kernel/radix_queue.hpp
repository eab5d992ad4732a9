#pragma once
// The event queue's order: a radix heap of (time, push order) entries. A discrete-event queue is
// monotone (nothing is pushed earlier than the last entry popped), so an entry can live in the
// bucket of the highest bit in which its time differs from that last time; the lowest non-empty
// bucket holds the earliest times, and popping from an empty bucket 0 spreads the lowest bucket
// over the buckets below it. Each entry moves down at most 64 times, through contiguous vectors,
// where a binary heap of millions of entries (a packet-level all-to-all) pays log n cache misses
// per pop. Entries of equal time leave in the order they were pushed: an entry only ever joins
// the end of a bucket, and a bucket is spread in order into buckets that are empty, so the
// order is the one of the (time, push sequence) heap it replaces, exactly.
#include <array>
#include <cstdint>
#include <vector>

namespace tpusim {

class RadixQueue {
 public:
  struct Item {
    std::int64_t when_ps;  ///< at least the time of the last item popped
    std::size_t slot;      ///< the owner's payload index
  };

  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }

  /// Adds `item`; its time must not be below the last popped one (throws std::logic_error).
  void push(const Item& item);
  /// The earliest time held (not empty).
  std::int64_t min_time() const;
  /// Removes and returns the earliest item; of equal times, the one pushed first (not empty).
  Item pop();

 private:
  static constexpr int kBuckets = 65;  ///< 0: time == last_; b >= 1: highest differing bit b-1
  int bucket_of(std::int64_t when) const;
  int lowest_nonempty() const;  ///< of buckets 1..64 (bits_ != 0)

  std::array<std::vector<Item>, kBuckets> buckets_;
  std::array<std::int64_t, kBuckets> min_{};  ///< per non-empty bucket, its earliest time
  std::uint64_t bits_ = 0;                    ///< bit b-1 set: bucket b (1..64) is non-empty
  std::size_t head0_ = 0;                     ///< bucket 0 pops from the front
  std::int64_t last_ = 0;                     ///< the time of the last pop's bucket spread
  std::size_t size_ = 0;
};

}  // namespace tpusim
