#include "sim/kernel/radix_queue.hpp"

#include <stdexcept>

namespace tpusim {

int RadixQueue::bucket_of(std::int64_t when) const {
  if (when == last_) return 0;
  const auto diff = static_cast<std::uint64_t>(when) ^ static_cast<std::uint64_t>(last_);
  return 64 - __builtin_clzll(diff);
}

int RadixQueue::lowest_nonempty() const { return __builtin_ctzll(bits_) + 1; }

void RadixQueue::push(const Item& item) {
  if (item.when_ps < last_) throw std::logic_error("tpusim bug: an event before the last one");
  const int b = bucket_of(item.when_ps);
  auto& bucket = buckets_[static_cast<std::size_t>(b)];
  if (b != 0) {  // bucket 0 holds only last_: no minimum or bit to keep
    std::int64_t& earliest = min_[static_cast<std::size_t>(b)];
    if (bucket.empty() || item.when_ps < earliest) earliest = item.when_ps;
    bits_ |= std::uint64_t{1} << (b - 1);
  }
  bucket.push_back(item);
  ++size_;
}

std::int64_t RadixQueue::min_time() const {
  if (head0_ < buckets_[0].size()) return last_;
  return min_[static_cast<std::size_t>(lowest_nonempty())];
}

RadixQueue::Item RadixQueue::pop() {
  auto& zero = buckets_[0];
  if (head0_ == zero.size()) {
    // Bucket 0 is spent: spread the lowest non-empty bucket, in order, over the (empty) buckets
    // below it, relative to its earliest time.
    zero.clear();
    head0_ = 0;
    const int b = lowest_nonempty();
    auto& from = buckets_[static_cast<std::size_t>(b)];
    last_ = min_[static_cast<std::size_t>(b)];
    bits_ &= ~(std::uint64_t{1} << (b - 1));
    size_ -= from.size();  // push counts them again
    for (const Item& it : from) push(it);
    from.clear();
  }
  --size_;
  return zero[head0_++];
}

}  // namespace tpusim
