// Flow-level network: every message is a flow over its route; the flows in flight share each link
// max-min fairly (progressive filling), and the rates are recomputed only when a flow starts or
// ends, so the cost follows flow events, not packets. A flow's last byte arrives when it has been
// sent, plus the route's hop latencies, plus one packet's serialisation per extra hop (the
// store-and-forward of the packet level, so that uncontended the two levels agree):
//   S/B + (h-1) min(S, packet)/B + h L for one flow alone on h hops.
#include <algorithm>
#include <limits>
#include <memory>

#include "sim/kernel/pool.hpp"
#include "sim/network/network.hpp"

namespace tpusim {
namespace {

class FlowNetwork : public Network, private EventTarget {
 public:
  FlowNetwork(EventQueue& queue, const NetworkOptions& o) : queue_(queue), opts_(o) {}

  void send_batch(const std::vector<Transfer>& transfers, ArrivalCallback on_arrival) override {
    const Duration now = sim_now();
    advance(now);
    const PoolIndex bi = batches_.take();
    batches_[bi] = Batch{0, now, std::move(on_arrival)};
    for (const auto& t : transfers) {
      if (t.route->empty() || t.bytes <= 0) continue;
      Flow f;
      f.route = t.route;
      f.remaining = t.bytes;
      f.batch = bi;
      Duration latency;
      double slowest = std::numeric_limits<double>::infinity();
      for (const NetworkLink* link : *t.route) {
        latency += link->latency;
        slowest = std::min(slowest, link->bandwidth.bytes_per_s());
        if (static_cast<std::size_t>(link->index) >= load_.size()) {
          load_.resize(link->index + 1, 0.0);
          unfrozen_.resize(link->index + 1, 0);
        }
      }
      const double hops = static_cast<double>(t.route->size() - 1);
      f.tail = latency + Duration::seconds(hops * std::min(t.bytes, opts_.packet_bytes) / slowest);
      ++batches_[bi].pending;
      flows_.push_back(std::move(f));
      ++flow_events_;
    }
    if (batches_[bi].pending == 0) {
      finish(bi);
      return;
    }
    // Many batches start at the same instant (every ring of a phase): share the links once,
    // after all of them.
    if (!recompute_armed_) {
      recompute_armed_ = true;
      queue_.at(now, *this, kRecompute);
    }
  }

  std::uint64_t work_items() const override { return flow_events_; }
  bool coalesces_steps() const override { return opts_.coalesce_ring_steps; }

 private:
  /// The events of this network: the shared recomputation of an instant, a batch whose flows
  /// have all arrived (arg: its record), the next flow to finish (arg: the generation).
  enum Kind : std::uint32_t { kRecompute, kBatchDone, kNextEnd };
  struct Batch {
    std::int64_t pending = 0;
    Duration latest;
    ArrivalCallback done;
  };
  struct Flow {
    const Route* route = nullptr;
    double remaining = 0;  ///< bytes not yet sent
    double rate = 0;       ///< bytes per second
    Duration tail;         ///< from the last byte sent to its arrival
    PoolIndex batch = kNoIndex;
  };

  void on_event(std::uint32_t kind, std::uint64_t arg) override {
    if (kind == kBatchDone) {
      finish(static_cast<PoolIndex>(arg));
      return;
    }
    if (kind == kRecompute)
      recompute_armed_ = false;
    else if (arg != generation_)
      return;  // a newer start or end has re-armed
    const Duration t = sim_now();
    advance(t);
    reschedule(t);
  }

  /// Every flow of the batch has arrived: release its record, then report.
  void finish(PoolIndex bi) {
    ArrivalCallback done = std::move(batches_[bi].done);
    const Duration latest = batches_[bi].latest;
    batches_.give(bi);
    done(latest);
  }

  /// Moves every flow on to `now` at its current rate; finished flows arrive.
  void advance(Duration now) {
    const double dt = (now - last_).seconds();
    const Duration from = last_;
    last_ = now;
    if (dt <= 0 || flows_.empty()) return;
    for (auto& f : flows_) {
      const double sent = std::min(f.remaining, f.rate * dt);
      f.remaining -= sent;
      for (NetworkLink* link : *f.route) {
        const Duration busy = link->bandwidth.time_for(sent);
        link->bytes += sent;
        link->busy_time += busy;
        // The timeline's utilisation counters: this flow's share of the interval, placed at
        // its start (only links of traced chips keep a log).
        link->record_busy(from, from + busy);
      }
    }
  }

  /// Removes the flows that have sent everything, recomputes the rates and arms the next event.
  void reschedule(Duration now) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < flows_.size(); ++i) {
      Flow& f = flows_[i];
      // Within a picosecond of done counts as done (times are whole picoseconds).
      if (f.remaining <= f.rate * 1e-12 + 1e-9) {
        for (NetworkLink* link : *f.route) ++link->transfers;
        Batch& b = batches_[f.batch];
        b.latest = max(b.latest, now + f.tail);
        if (--b.pending == 0) queue_.at(b.latest, *this, kBatchDone, f.batch);
        ++flow_events_;
        continue;
      }
      if (kept != i) flows_[kept] = std::move(f);
      ++kept;
    }
    flows_.resize(kept);
    if (flows_.empty()) return;
    share_links();
    double soonest = std::numeric_limits<double>::infinity();
    for (const auto& f : flows_)
      if (f.rate > 0) soonest = std::min(soonest, f.remaining / f.rate);
    if (soonest == std::numeric_limits<double>::infinity()) return;  // no link has capacity
    queue_.at(now + Duration::seconds(soonest) + Duration::ps(1), *this, kNextEnd, ++generation_);
  }

  /// Max-min fair rates by progressive filling: the link whose remaining capacity divided by
  /// its unfixed flows is least fixes those flows at that share; repeat until all are fixed.
  void share_links() {
    if (!opts_.contention) {
      for (auto& f : flows_) {
        f.rate = std::numeric_limits<double>::infinity();
        for (const NetworkLink* link : *f.route)
          f.rate = std::min(f.rate, link->bandwidth.bytes_per_s());
      }
      return;
    }
    touched_.clear();
    for (auto& f : flows_) {
      f.rate = -1;  // unfixed
      for (NetworkLink* link : *f.route) {
        if (unfrozen_[link->index] == 0 && load_[link->index] == 0) touched_.push_back(link);
        ++unfrozen_[link->index];
      }
    }
    std::size_t unfixed = flows_.size();
    while (unfixed > 0) {
      double share = std::numeric_limits<double>::infinity();
      for (const NetworkLink* link : touched_) {
        const int n = unfrozen_[link->index];
        if (n > 0)
          share = std::min(share, (link->bandwidth.bytes_per_s() - load_[link->index]) / n);
      }
      // Every unfixed flow crossing a link at that share is fixed at it.
      for (auto& f : flows_) {
        if (f.rate >= 0) continue;
        bool bottlenecked = false;
        for (const NetworkLink* link : *f.route) {
          const int n = unfrozen_[link->index];
          if ((link->bandwidth.bytes_per_s() - load_[link->index]) / n <= share * (1 + 1e-12)) {
            bottlenecked = true;
            break;
          }
        }
        if (!bottlenecked) continue;
        f.rate = std::max(share, 0.0);
        --unfixed;
        for (const NetworkLink* link : *f.route) {
          load_[link->index] += f.rate;
          --unfrozen_[link->index];
        }
      }
    }
    for (const NetworkLink* link : touched_) {
      load_[link->index] = 0;
      unfrozen_[link->index] = 0;
    }
  }

  EventQueue& queue_;
  NetworkOptions opts_;
  std::vector<Flow> flows_;
  Pool<Batch> batches_;
  Duration last_;
  std::uint64_t generation_ = 0;
  bool recompute_armed_ = false;  ///< a recomputation is queued for the current instant
  std::uint64_t flow_events_ = 0;
  std::vector<double> load_;   ///< per link index: rate already given to fixed flows
  std::vector<int> unfrozen_;  ///< per link index: unfixed flows crossing it
  std::vector<const NetworkLink*> touched_;
};

const NetworkRegistrar kNetworkFlowRegister{
    "flow", [](EventQueue& q, const NetworkOptions& o) -> std::unique_ptr<Network> {
      return std::make_unique<FlowNetwork>(q, o);
    }};

}  // namespace
}  // namespace tpusim
