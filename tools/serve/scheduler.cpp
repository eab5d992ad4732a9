#include "tools/serve/scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <deque>

#include "sim/machine/dcn.hpp"
#include "tools/serve/prefix_cache.hpp"
#include "topologies/host_blocks.hpp"

namespace tpusim::serve {
namespace {

constexpr std::int64_t kMinPrefillBucket = 16;

// A sequence holding a slot.
struct Seq {
  std::size_t id = 0;
  std::int64_t input = 0, output = 0;  ///< its request's tokens (kept here: read every step)
  std::int64_t prefilled = 0;          ///< prompt tokens in the cache
  std::int64_t generated = 0;          ///< output tokens sampled
  double reserved = 0;                 ///< KV tokens reserved for it
  std::int64_t hit = 0;                ///< prompt tokens found in the prefix cache
  bool uses_prefix = false;            ///< holds its prefix's cached blocks (until it finishes)
  bool decoding() const { return prefilled >= input; }
};

// JetStream pads a prompt to its prefill bucket: the next power of two (at least 16).
std::int64_t prefill_bucket(std::int64_t tokens) {
  std::int64_t b = kMinPrefillBucket;
  while (b < tokens) b *= 2;
  return b;
}

// One engine: slots, the KV cache's tokens, the waiting queue; steps advance its clock.
class Engine {
 public:
  Engine(const std::vector<Request>& r, const ServingConfig& s, StepTimes& times, ServeRun& out,
         bool keep, int id)
      : req_(r),
        s_(s),
        times_(times),
        cap_(times.capacity()),
        out_(out),
        keep_(keep),
        id_(id),
        prefixes_(cap_.page_tokens) {}

  double t = 0;
  std::deque<std::size_t> waiting;
  std::vector<Seq> running;
  std::size_t finished = 0;

  bool prefix_caching = false;  ///< serving.prefix_caching on this engine

  // The prompt tokens of a request's prefix that its KV blocks hold whole (vLLM shares full
  // blocks only; the prompt's last token is always computed, for its logits).
  std::int64_t shareable(std::size_t id) const {
    const Request& r = req_[id];
    if (!prefix_caching || r.prefix_id < 0) return 0;
    return std::min(r.prefix, r.input - 1) / cap_.page_tokens * cap_.page_tokens;
  }
  std::int64_t hit(std::size_t id) const {
    const std::int64_t n = shareable(id);
    return n > 0 ? prefixes_.cached(req_[id].prefix_id, n) : 0;
  }
  // KV tokens a request holds: preallocated, the model length; paged, its pages (those of a
  // cached prefix are held once, by the cache).
  double reservation(std::size_t id) const {
    if (!cap_.paged) return static_cast<double>(s_.max_model_len);
    const std::int64_t n = req_[id].input + req_[id].output, p = cap_.page_tokens;
    return static_cast<double>((n + p - 1) / p * p - hit(id));
  }
  // A slot is free and the KV cache holds the request, once prefixes no sequence uses are
  // evicted if need be (not the one it would hit).
  bool can_admit() const {
    if (waiting.empty() || static_cast<std::int64_t>(running.size()) >= cap_.slots) return false;
    const std::size_t id = waiting.front();
    const double room = cap_.pool_tokens - kv_used_ - reservation(id);
    if (room >= 0) return true;
    return prefix_caching && room + prefixes_.evictable(hit(id) > 0 ? req_[id].prefix_id : -1) >= 0;
  }
  Seq admit() {
    Seq q;
    q.id = waiting.front();
    q.input = req_[q.id].input;
    q.output = req_[q.id].output;
    waiting.pop_front();
    q.reserved = reservation(q.id);
    q.hit = hit(q.id);
    q.prefilled = q.hit;
    if (q.hit > 0) {
      prefixes_.acquire(req_[q.id].prefix_id);
      q.uses_prefix = true;
    }
    if (kv_used_ + q.reserved > cap_.pool_tokens)
      kv_used_ -= prefixes_.evict(kv_used_ + q.reserved - cap_.pool_tokens);
    kv_used_ += q.reserved;
    out_.prompt_tokens += static_cast<double>(req_[q.id].input);
    if (prefix_caching && req_[q.id].prefix_id >= 0) {
      ++out_.prefix_lookups;
      out_.prefix_hits += q.hit > 0 ? 1 : 0;
      out_.prefix_cached_tokens += static_cast<double>(q.hit);
    }
    return q;
  }
  // A prompt's prefill has ended: its prefix's full blocks stay in the cache, held once (moved
  // from its reservation to the cache's) until evicted.
  void cache_prefix(Seq& q) {
    const std::int64_t n = shareable(q.id);
    if (n == 0) return;
    const std::int64_t moved = prefixes_.insert(req_[q.id].prefix_id, n, q.uses_prefix);
    if (moved > 0) q.uses_prefix = true;
    q.reserved -= static_cast<double>(moved);
  }
  std::int64_t evicted_blocks() const { return prefixes_.evicted_blocks(); }

  void record(const char* kind, double dur, std::int64_t batch, std::int64_t tokens) {
    if (keep_) out_.steps.push_back({t, t + dur, id_, kind, batch, tokens});
    t += dur;
    ++out_.iterations;
  }
  void sample() {
    const Occupancy o{t, id_, static_cast<std::int64_t>(running.size()), kv_used_};
    if (id_ == 0) out_.occupancy_stats.add(o);
    if (keep_) out_.occupancy.push_back(o);
  }

  // The prompts `fresh` were prefilled in the step that ended at t: their first tokens; those
  // with more to generate take their slots in the decode batch.
  void started(std::vector<Seq>& fresh) {
    for (Seq& q : fresh) {
      cache_prefix(q);
      q.generated = 1;
      out_.results[q.id].first_token_s = t;
      if (q.output <= 1)
        finish(q);
      else
        running.push_back(q);
    }
  }
  void finish(const Seq& q) {
    out_.results[q.id].done_s = t;
    kv_used_ -= q.reserved;
    if (q.uses_prefix) prefixes_.release(req_[q.id].prefix_id);
    ++finished;
  }

  // One decode step of every running sequence that has its prompt in the cache.
  void decode_step() {
    std::int64_t b = 0, kv = 0;  // the cached tokens summed exactly (a loop without a float)
    bool done = false;
    for (Seq& q : running)
      if (q.decoding()) {
        ++b;
        kv += q.prefilled + q.generated - 1;
        done |= ++q.generated >= q.output;
      }
    if (b == 0) return;
    record("decode", times_.decode_s(b, static_cast<double>(kv) / static_cast<double>(b)), b, 0);
    if (done) retire();
  }
  // The sequences that have all their tokens leave, the others keep their order.
  void retire() {
    auto kept = running.begin();
    for (auto it = running.begin(); it != running.end(); ++it) {
      if (it->generated >= it->output)
        finish(*it);
      else
        *kept++ = *it;
    }
    running.erase(kept, running.end());
  }

  // Prompts packed into one prefill step (continuous, disaggregated's prefill slice).
  std::vector<Seq> take_prefills(bool one, bool padded) {
    std::vector<Seq> fresh;
    std::int64_t tokens = 0;
    double cached = 0;  // the prefixes the prompts attend to, weighted by their new tokens
    while (can_admit()) {
      const std::int64_t n = req_[waiting.front()].input - hit(waiting.front());
      if (!fresh.empty() && (one || tokens + n > s_.max_num_batched_tokens)) break;
      fresh.push_back(admit());
      const std::int64_t step = padded ? prefill_bucket(n) : n;
      cached += static_cast<double>(fresh.back().hit) * static_cast<double>(step);
      fresh.back().prefilled = fresh.back().input;
      tokens += step;
    }
    if (!fresh.empty())
      record("prefill",
             times_.prefill_s(static_cast<double>(tokens), cached / static_cast<double>(tokens)),
             static_cast<std::int64_t>(fresh.size()), tokens);
    return fresh;
  }

  // chunked_prefill: the decode tokens first, then prompt chunks in the budget left.
  void mixed_step() {
    const std::int64_t budget = s_.max_num_batched_tokens;
    std::int64_t b = 0, kv = 0;
    bool done = false;
    std::size_t first_prefill = running.size();
    for (std::size_t i = 0; i < running.size(); ++i) {
      Seq& q = running[i];
      if (!q.decoding()) {
        first_prefill = std::min(first_prefill, i);
      } else if (b < budget) {  // its next token (sampled at the end of the step)
        ++b;
        kv += q.prefilled + q.generated - 1;
        done |= ++q.generated >= q.output;
      }
    }
    std::int64_t left = budget - b, chunk = 0, prefix = -1;
    while (can_admit()) running.push_back(admit());
    done_prefill.clear();
    for (std::size_t i = first_prefill; i < running.size() && left > 0; ++i) {
      Seq& q = running[i];
      const std::int64_t need = q.input - q.prefilled;
      if (need <= 0) continue;
      const std::int64_t c = std::min(need, left);
      if (prefix < 0) prefix = q.prefilled;
      q.prefilled += c;
      chunk += c;
      left -= c;
      if (q.decoding()) done_prefill.push_back(i);
    }
    const double mean_kv = b > 0 ? static_cast<double>(kv) / static_cast<double>(b) : 0;
    double dur = 0;
    if (chunk == 0) {
      dur = times_.decode_s(b, mean_kv);
    } else {
      // The prefill program over all the step's tokens (the linear layers see every token, the
      // prompt chunk attends to its prefix), plus what the decodes' attention to their caches
      // adds to a decode step.
      dur = times_.prefill_s(static_cast<double>(chunk + b), static_cast<double>(prefix));
      if (b > 0) dur += times_.decode_s(b, mean_kv) - times_.decode_s(b, 0);
    }
    record(chunk == 0 ? "decode" : "mixed", dur, b, chunk);
    for (std::size_t i : done_prefill) {
      cache_prefix(running[i]);
      running[i].generated = 1;
      done |= running[i].output <= 1;
      out_.results[running[i].id].first_token_s = t;
    }
    if (done) retire();
  }

 private:
  const std::vector<Request>& req_;
  const ServingConfig& s_;
  StepTimes& times_;
  const KvCapacity& cap_;
  ServeRun& out_;
  bool keep_;
  int id_;
  double kv_used_ = 0;
  PrefixCache prefixes_;                  ///< the cached prefixes (serving.prefix_caching)
  std::vector<std::size_t> done_prefill;  ///< mixed_step's, kept to reuse its memory
};

// Requests that can never be served: counted, not dropped silently.
std::size_t mark_never(const std::vector<Request>& r, const ServingConfig& s, const KvCapacity& cap,
                       ServeRun& out) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < r.size(); ++i) {
    const std::int64_t total = r[i].input + r[i].output;
    if (total > s.max_model_len)
      out.results[i].never = "longer than serving.max_model_len";
    else if (cap.paged && static_cast<double>(total) > cap.pool_tokens)
      out.results[i].never = "KV cache larger than the HBM left for it";
    n += out.results[i].never.empty() ? 0 : 1;
  }
  return n;
}

// The arrivals up to `e.t` join the waiting queue; an idle engine jumps to the next one.
bool take_arrivals(Engine& e, const std::vector<double>& arrival, const ServeRun& out,
                   std::size_t& next) {
  while (next < arrival.size() && !out.results[next].never.empty()) ++next;
  if (e.waiting.empty() && e.running.empty()) {
    if (next >= arrival.size()) return false;
    e.t = std::max(e.t, arrival[next]);
  }
  while (next < arrival.size() && arrival[next] <= e.t) {
    if (out.results[next].never.empty()) e.waiting.push_back(next);
    ++next;
  }
  return true;
}

void run_one_engine(const std::vector<Request>& r, const ServingConfig& s, StepTimes& times,
                    const std::vector<double>& arrival, Engine& e, ServeRun& out,
                    const std::function<void(std::size_t)>& progress, bool decode_only) {
  std::size_t next = 0;
  while (take_arrivals(e, arrival, out, next)) {
    if (decode_only) {
      while (e.can_admit()) {
        Seq q = e.admit();
        q.prefilled = r[q.id].input;
        q.generated = 1;
        e.running.push_back(q);
      }
      if (e.running.empty()) {  // nothing fits yet: wait for the next arrival
        if (next >= arrival.size()) break;
        e.t = arrival[next];
        continue;
      }
      e.decode_step();
    } else if (s.scheduler == "chunked_prefill") {
      e.mixed_step();
    } else if (s.scheduler == "interleaved") {
      std::vector<Seq> fresh = e.take_prefills(true, true);
      e.started(fresh);
      e.decode_step();
    } else {  // continuous
      std::vector<Seq> fresh = e.take_prefills(false, false);
      if (!fresh.empty())
        e.started(fresh);
      else
        e.decode_step();
    }
    e.sample();
    if (progress && out.iterations % 256 == 0) progress(e.finished);
  }
}

}  // namespace

double kv_transfer_s(double tokens, const ServingConfig& s, const StepTimes& times,
                     const cli::Study& study) {
  const Config& cfg = study.config;
  const Topology topology(study.topology);
  const double bytes = tokens * times.capacity().bytes_per_token;
  if (s.kv_transfer == "dcn") {
    const HostBlocks hosts = host_blocks(topology, host_chip_block(cfg));
    const DcnOptions dcn = DcnOptions::from_config(cfg);
    const double bw =
        static_cast<double>(hosts.chips.size()) * dcn.host_nics * dcn.nic_bandwidth.bytes_per_s();
    return dcn.latency.seconds() + bytes / bw;
  }
  // Each chip sends its shard over one link to its peer in the decode slice.
  const HardwareSpec& hw = study.hardware;
  return hw.ici_latency.seconds() +
         hw.ici_bandwidth.time_for(bytes / topology.num_chips()).seconds();
}

ServeRun run_scheduler(const std::vector<Request>& requests, const ServingConfig& s,
                       StepTimes& times, bool keep_steps,
                       const std::function<void(std::size_t)>& progress) {
  ServeRun out;
  out.results.resize(requests.size());
  mark_never(requests, s, times.capacity(), out);
  std::vector<double> arrival;
  for (const auto& r : requests) arrival.push_back(r.arrival_s);
  if (s.scheduler != "disaggregated") {
    Engine e(requests, s, times, out, keep_steps, 0);
    e.prefix_caching = s.prefix_caching;
    run_one_engine(requests, s, times, arrival, e, out, progress, false);
    out.prefix_evicted_blocks = e.evicted_blocks();
    return out;
  }
  // Prefill slice: packed prefills only; each prompt's KV then moves to the decode slice, which
  // admits it to a free slot and decodes.
  Engine pre(requests, s, times, out, keep_steps, 1);
  pre.prefix_caching = s.prefix_caching;
  std::size_t next = 0;
  std::vector<double> ready(requests.size(), 0);
  while (take_arrivals(pre, arrival, out, next)) {
    std::vector<Seq> fresh = pre.take_prefills(false, false);
    for (Seq& q : fresh) {
      pre.cache_prefix(q);
      out.results[q.id].first_token_s = pre.t;
      const double move =
          kv_transfer_s(static_cast<double>(requests[q.id].input), s, times, times.study());
      ready[q.id] = pre.t + move;
      if (keep_steps)
        out.steps.push_back({pre.t, pre.t + move, 1, "kv_transfer", 1, requests[q.id].input});
      pre.finish(q);
    }
    pre.sample();
  }
  out.prefix_evicted_blocks = pre.evicted_blocks();
  std::vector<std::size_t> order(requests.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return ready[a] < ready[b]; });
  // The decode slice sees the requests in the order their caches arrive.
  std::vector<Request> moved;
  std::vector<double> moved_at;
  for (std::size_t i : order) {
    moved.push_back(requests[i]);
    moved_at.push_back(out.results[i].never.empty() ? ready[i] : 0);
  }
  ServeRun dec;
  dec.results.resize(moved.size());
  for (std::size_t k = 0; k < order.size(); ++k) {
    dec.results[k].never = out.results[order[k]].never;
    if (moved[k].output <= 1 && dec.results[k].never.empty()) dec.results[k].never = "prefill only";
  }
  Engine e(moved, s, times, dec, keep_steps, 0);
  run_one_engine(moved, s, times, moved_at, e, dec, progress, true);
  for (std::size_t k = 0; k < order.size(); ++k) {
    RequestResult& r = out.results[order[k]];
    r.done_s =
        r.never.empty() ? (moved[k].output <= 1 ? r.first_token_s : dec.results[k].done_s) : -1;
  }
  out.iterations += dec.iterations;
  out.occupancy_stats = dec.occupancy_stats;
  out.occupancy.insert(out.occupancy.end(), dec.occupancy.begin(), dec.occupancy.end());
  out.steps.insert(out.steps.end(), dec.steps.begin(), dec.steps.end());
  return out;
}

}  // namespace tpusim::serve
