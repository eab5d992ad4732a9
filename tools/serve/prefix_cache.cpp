#include "tools/serve/prefix_cache.hpp"

#include <algorithm>
#include <cmath>

namespace tpusim::serve {

std::int64_t PrefixCache::cached(std::int64_t id, std::int64_t want) const {
  const auto it = entries_.find(id);
  return it == entries_.end() ? 0 : std::min(it->second.tokens, want);
}

double PrefixCache::evictable(std::int64_t keep) const {
  const auto it = entries_.find(keep);
  const bool kept = it != entries_.end() && it->second.users == 0;
  return evictable_ - (kept ? static_cast<double>(it->second.tokens) : 0.0);
}

void PrefixCache::acquire(std::int64_t id) {
  Entry& e = entries_.at(id);
  if (e.users++ == 0) {
    lru_.erase(e.lru);
    evictable_ -= static_cast<double>(e.tokens);
  }
}

void PrefixCache::release(std::int64_t id) {
  Entry& e = entries_.at(id);
  if (--e.users == 0) {
    e.lru = lru_.insert(lru_.end(), id);
    evictable_ += static_cast<double>(e.tokens);
  }
}

double PrefixCache::evict(double tokens) {
  double freed = 0;
  while (freed < tokens && !lru_.empty()) {
    const auto it = entries_.find(lru_.front());
    Entry& e = it->second;
    const auto blocks = std::min<std::int64_t>(
        e.tokens / block_,
        static_cast<std::int64_t>(std::ceil((tokens - freed) / static_cast<double>(block_))));
    e.tokens -= blocks * block_;
    evicted_blocks_ += blocks;
    freed += static_cast<double>(blocks * block_);
    evictable_ -= static_cast<double>(blocks * block_);
    if (e.tokens == 0) {
      lru_.pop_front();
      entries_.erase(it);
    }
  }
  return freed;
}

std::int64_t PrefixCache::insert(std::int64_t id, std::int64_t tokens, bool uses) {
  if (tokens <= 0) return 0;
  const auto it = entries_.find(id);
  if (it == entries_.end()) {
    Entry& e = entries_[id];
    e.tokens = tokens;
    e.users = 1;  // the sequence whose blocks they are
    return tokens;
  }
  Entry& e = it->second;
  if (!uses || e.tokens >= tokens) return 0;  // a sequence that missed keeps its own copy
  const std::int64_t more = tokens - e.tokens;
  e.tokens = tokens;
  return more;
}

}  // namespace tpusim::serve
