// Message-level network: each message reserves every link of its route once, FIFO, at the
// moment it is sent. It travels in chunks, so a multi-hop route pipelines: uncontended, S bytes
// over h hops of bandwidth B and latency L arrive after S/B + (h-1) * chunk/B + h * L.
#include <algorithm>

#include "sim/network.hpp"

namespace tpusim {
namespace {

class MessageNetwork : public Network {
 public:
  MessageNetwork(EventQueue& queue, const NetworkOptions& o) : queue_(queue), opts_(o) {}

  void send_batch(const std::vector<Transfer>& transfers, ArrivalCallback on_arrival) override {
    const Duration now = sim_now();
    Duration last = now;
    for (const auto& t : transfers) last = max(last, reserve(*t.route, t.bytes, now));
    on_arrival(last);
  }

  std::uint64_t work_items() const override { return reservations_; }
  bool coalesces_steps() const override { return opts_.coalesce_ring_steps; }

 private:
  Duration reserve(const Route& route, double bytes, Duration now) {
    Duration first_chunk_at = now;  // when the first chunk reaches the current hop
    Duration prev_finish = now;     // when the previous hop sent its last byte
    Duration prev_latency;
    for (std::size_t i = 0; i < route.size(); ++i) {
      LinkModule& link = *route[i];
      // Most hops of a batch share bytes and bandwidth: compute their times once.
      if (bytes != cached_bytes_ || link.bandwidth.bytes_per_s() != cached_bps_) {
        cached_bytes_ = bytes;
        cached_bps_ = link.bandwidth.bytes_per_s();
        cached_serialise_ = link.bandwidth.time_for(bytes);
        cached_chunk_ = link.bandwidth.time_for(std::min(bytes, opts_.chunk_bytes));
      }
      const Duration serialise = cached_serialise_;
      const Duration chunk = cached_chunk_;
      const Duration start =
          opts_.contention ? max(link.busy_until, first_chunk_at) : first_chunk_at;
      Duration finish = start + serialise;
      // The last chunk cannot leave before it has arrived from upstream.
      if (i > 0) finish = max(finish, prev_finish + prev_latency + chunk);
      if (opts_.contention) link.busy_until = finish;
      link.record_busy(finish - serialise, finish);
      link.bytes += bytes;
      link.busy_time += serialise;
      ++link.transfers;
      ++reservations_;
      first_chunk_at = start + chunk + link.latency;
      prev_finish = finish;
      prev_latency = link.latency;
    }
    return prev_finish + prev_latency;
  }

  EventQueue& queue_;
  NetworkOptions opts_;
  std::uint64_t reservations_ = 0;
  double cached_bytes_ = -1, cached_bps_ = -1;
  Duration cached_serialise_, cached_chunk_;
};

const NetworkRegistrar kRegister{
    "message", [](EventQueue& q, const NetworkOptions& o) -> std::unique_ptr<Network> {
      return std::make_unique<MessageNetwork>(q, o);
    }};

}  // namespace
}  // namespace tpusim
