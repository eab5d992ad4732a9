#pragma once
// The network interface: a fidelity level moves batches of transfers over link routes. Two
// implementations register by name: "message" (one reservation per hop of each message, for
// 4096-chip runs) and "packet" (one event per packet per hop, for small slices).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "sim/event_queue.hpp"
#include "sim/link.hpp"

namespace tpusim {

using Route = std::vector<LinkModule*>;

struct Transfer {
  const Route* route = nullptr;
  double bytes = 0;
};

struct NetworkOptions {
  std::string fidelity = "message";
  double chunk_bytes = 65536;   ///< message level: pipelining unit over multi-hop routes
  double packet_bytes = 4096;   ///< packet level: packet size
  bool contention = true;       ///< false: links never queue (for what-if comparisons)
  static NetworkOptions from_config(const Config& cfg);
};

class Network {
 public:
  virtual ~Network() = default;
  /// Starts every transfer now; `done` runs once, when the last one has fully arrived.
  virtual void send_batch(const std::vector<Transfer>& transfers, std::function<void()> done) = 0;
  /// Kernel-visible work done (reservations or packet-hops), for reports.
  virtual std::uint64_t work_items() const = 0;
};

using NetworkFactory = std::unique_ptr<Network> (*)(EventQueue&, const NetworkOptions&);
/// Registers a fidelity level under a name.
struct NetworkRegistrar {
  NetworkRegistrar(const char* name, NetworkFactory make);
};
std::unique_ptr<Network> make_network(EventQueue& queue, const NetworkOptions& options);
std::vector<std::string> network_names();

}  // namespace tpusim
