// Message-level network: each message reserves every link of its route once, FIFO, at the
// moment it is sent. It travels in the ICI's packets (network.packet_bytes), so a multi-hop route
// pipelines: uncontended, S bytes over h hops of bandwidth B and latency L arrive after
// S/B + (h-1) * min(S, packet)/B + h * L, as at the flow and packet levels.
#include <algorithm>

#include "sim/network/network.hpp"

namespace tpusim {
namespace {

class MessageNetwork : public Network {
 public:
  MessageNetwork(EventQueue&, const NetworkOptions& o) : opts_(o) {}

  void send_batch(const std::vector<Transfer>& transfers, ArrivalCallback on_arrival) override {
    const Duration now = sim_now();
    // Hop by hop across the batch (every first hop, then every second hop...): the transfers
    // start together, so a link serves the messages that start on it before those that must
    // first cross other links; reserving whole routes one after the other would let a long
    // route hold its later links while its first hops queue.
    fronts_.assign(transfers.size(), Front{now, now, Duration{}});
    std::size_t longest = 0;
    for (const auto& t : transfers) longest = std::max(longest, t.route->size());
    for (std::size_t hop = 0; hop < longest; ++hop)
      for (std::size_t k = 0; k < transfers.size(); ++k)
        if (hop < transfers[k].route->size())
          reserve(*(*transfers[k].route)[hop], hop, transfers[k].bytes, fronts_[k]);
    Duration last = now;
    for (std::size_t k = 0; k < transfers.size(); ++k)
      if (!transfers[k].route->empty()) last = max(last, fronts_[k].finish + fronts_[k].latency);
    on_arrival(last);
  }

  std::uint64_t work_items() const override { return reservations_; }
  bool coalesces_steps() const override { return opts_.coalesce_ring_steps; }

 private:
  /// How far one message has got: when its first packet reaches the next hop, when the last hop
  /// reserved sends its last byte, and that hop's latency.
  struct Front {
    Duration first_chunk_at, finish, latency;
  };

  void reserve(NetworkLink& link, std::size_t hop, double bytes, Front& f) {
    // Most hops of a batch share bytes and bandwidth: compute their times once.
    if (bytes != cached_bytes_ || link.bandwidth.bytes_per_s() != cached_bps_) {
      cached_bytes_ = bytes;
      cached_bps_ = link.bandwidth.bytes_per_s();
      cached_serialise_ = link.bandwidth.time_for(bytes);
      cached_chunk_ = link.bandwidth.time_for(std::min(bytes, opts_.packet_bytes));
    }
    const Duration serialise = cached_serialise_;
    const Duration chunk = cached_chunk_;
    const Duration start =
        opts_.contention ? max(link.busy_until, f.first_chunk_at) : f.first_chunk_at;
    Duration finish = start + serialise;
    // The last chunk cannot leave before it has arrived from upstream.
    if (hop > 0) finish = max(finish, f.finish + f.latency + chunk);
    if (opts_.contention) link.busy_until = finish;
    link.record_busy(finish - serialise, finish);
    link.bytes += bytes;
    link.busy_time += serialise;
    ++link.transfers;
    ++reservations_;
    f.first_chunk_at = start + chunk + link.latency;
    f.finish = finish;
    f.latency = link.latency;
  }

  NetworkOptions opts_;
  std::uint64_t reservations_ = 0;
  double cached_bytes_ = -1, cached_bps_ = -1;
  Duration cached_serialise_, cached_chunk_;
  std::vector<Front> fronts_;  ///< per transfer of the batch being reserved
};

const NetworkRegistrar kNetworkMessageRegister{
    "message", [](EventQueue& q, const NetworkOptions& o) -> std::unique_ptr<Network> {
      return std::make_unique<MessageNetwork>(q, o);
    }};

}  // namespace
}  // namespace tpusim
