// Packet-level network: messages are cut into packets that the source injects at the pace of
// its first link; every packet takes one event per hop and queues FIFO at each link, so flows
// that share a link interleave packet by packet. Costly: for small slices and for checking the
// message level.
#include <algorithm>
#include <cmath>
#include <memory>

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "sim/network.hpp"

namespace tpusim {
namespace {

class PacketNetwork : public Network {
 public:
  PacketNetwork(EventQueue& queue, const NetworkOptions& o) : queue_(queue), opts_(o) {}

  void send_batch(const std::vector<Transfer>& transfers, ArrivalCallback on_arrival) override {
    auto batch = std::make_shared<Batch>();
    batch->done = std::move(on_arrival);
    const Duration now = sim_now();
    // The whole batch is counted before any of its packets is queued.
    for (const auto& t : transfers)
      if (!t.route->empty() && t.bytes > 0) created_ += std::ceil(t.bytes / opts_.packet_bytes);
    if (created_ > kMaxPackets)
      throw ConfigError("network.packet_bytes",
                        "the run needs at least " + format_number(created_) + " packets of " +
                            format_number(opts_.packet_bytes) + " bytes, " +
                            past_limit(kMaxPackets, "packets", "kMaxPackets") +
                            "; use larger packets or network.fidelity=message");
    for (const auto& t : transfers) {
      if (t.route->empty() || t.bytes <= 0) continue;
      const auto packets = static_cast<std::int64_t>(std::ceil(t.bytes / opts_.packet_bytes));
      const LinkModule& first = *t.route->front();
      for (std::int64_t p = 0; p < packets; ++p) {
        const double size =
            std::min(opts_.packet_bytes, t.bytes - static_cast<double>(p) * opts_.packet_bytes);
        ++batch->pending;
        // Injected at the pace of the first link.
        const Duration inject =
            now + first.bandwidth.time_for(static_cast<double>(p) * opts_.packet_bytes);
        queue_.at(inject, [this, batch, route = t.route, size] { hop(batch, route, 0, size); });
      }
    }
    if (batch->pending == 0) batch->done(now);
  }

  std::uint64_t work_items() const override { return packet_hops_; }

 private:
  struct Batch {
    std::int64_t pending = 0;
    Duration latest;  ///< latest arrival of any packet so far
    ArrivalCallback done;
  };

  // A packet of `size` bytes reaches hop `i` of `route` now.
  void hop(const std::shared_ptr<Batch>& batch, const Route* route, std::size_t i, double size) {
    LinkModule& link = *(*route)[i];
    const Duration now = sim_now();
    const Duration start = opts_.contention ? max(now, link.busy_until) : now;
    const Duration serialise = link.bandwidth.time_for(size);
    if (opts_.contention) link.busy_until = start + serialise;
    link.record_busy(start, start + serialise);
    link.bytes += size;
    link.busy_time += serialise;
    ++packet_hops_;
    const Duration arrive = start + serialise + link.latency;
    if (i + 1 < route->size()) {
      queue_.at(arrive, [this, batch, route, i, size] { hop(batch, route, i + 1, size); });
    } else {
      batch->latest = max(batch->latest, arrive);
      if (--batch->pending == 0) queue_.at(batch->latest, [batch] { batch->done(batch->latest); });
    }
  }

  EventQueue& queue_;
  NetworkOptions opts_;
  std::uint64_t packet_hops_ = 0;
  double created_ = 0;  ///< packets created so far (bounded by kMaxPackets)
};

const NetworkRegistrar kRegister{
    "packet", [](EventQueue& q, const NetworkOptions& o) -> std::unique_ptr<Network> {
      return std::make_unique<PacketNetwork>(q, o);
    }};

}  // namespace
}  // namespace tpusim
