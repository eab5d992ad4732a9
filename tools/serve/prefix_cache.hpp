#pragma once
// The prefix cache of a serve (serving.prefix_caching, vLLM's automatic prefix caching): the
// whole KV blocks of shared prompt prefixes, held once, with least-recently-used eviction. A
// prefix's blocks stay cached after the sequences using them finish; when the KV cache needs
// room for a sequence, blocks of prefixes no running sequence uses are evicted, least recently
// released first and a prefix's last blocks first (vLLM frees a sequence's blocks in reverse
// order onto its free queue and evicts from the queue's head). docs/serving.md, "Prefix
// caching".
#include <cstdint>
#include <list>
#include <unordered_map>

namespace tpusim::serve {

class PrefixCache {
 public:
  explicit PrefixCache(std::int64_t block_tokens) : block_(block_tokens) {}

  /// Tokens of prefix `id` in the cache, at most `want`.
  std::int64_t cached(std::int64_t id, std::int64_t want) const;
  /// Tokens that eviction could free now, those of prefix `keep` left out (-1: none).
  double evictable(std::int64_t keep) const;
  /// A sequence uses prefix `id`'s cached blocks (a hit): they cannot be evicted while it runs.
  void acquire(std::int64_t id);
  /// A sequence that used prefix `id` finished: the blocks can be evicted once no sequence uses
  /// them, after those released before.
  void release(std::int64_t id);
  /// Evicts whole blocks until at least `tokens` are freed or nothing is left to evict; returns
  /// the tokens freed.
  double evict(double tokens);
  /// A prompt's prefill has ended with `tokens` of prefix `id` in whole blocks: if the prefix is
  /// not cached, its blocks become the cache's (the sequence then uses them); if the sequence
  /// uses it (`uses`) and it holds fewer, the sequence's further blocks join it. Returns the
  /// tokens that moved from the sequence to the cache.
  std::int64_t insert(std::int64_t id, std::int64_t tokens, bool uses);

  std::int64_t evicted_blocks() const { return evicted_blocks_; }

 private:
  struct Entry {
    std::int64_t tokens = 0;
    int users = 0;
    std::list<std::int64_t>::iterator lru;  ///< valid when users == 0
  };
  std::int64_t block_;
  std::unordered_map<std::int64_t, Entry> entries_;
  std::list<std::int64_t> lru_;  ///< unused prefixes, least recently released first
  double evictable_ = 0;         ///< tokens of the prefixes in lru_
  std::int64_t evicted_blocks_ = 0;
};

}  // namespace tpusim::serve
