#pragma once
// The network interface: a fidelity level moves batches of transfers over link routes. Three
// implementations register by name: "message" (one reservation per hop of each message, for
// 4096-chip runs), "flow" (max-min fair sharing of links, recomputed at flow start and end) and
// "packet" (per-packet FIFO at every link, the reference; computed in packet trains).
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "sim/kernel/event_queue.hpp"
#include "sim/network/link.hpp"

namespace tpusim {

using Route = std::vector<NetworkLink*>;

struct Transfer {
  const Route* route = nullptr;
  double bytes = 0;
};

struct NetworkOptions {
  std::string fidelity = "message";
  /// The ICI's packet: the packet level's unit; the message and flow levels pipeline a message
  /// over a multi-hop route in it (each extra hop adds one packet's serialisation).
  double packet_bytes = 4096;
  bool contention = true;           ///< false: links never queue (for what-if comparisons)
  bool coalesce_ring_steps = true;  ///< every level: a ring phase is one message per pair
  /// ICI link name (as in reports, multipod.chip(5,0).ici.x+) -> bandwidth factor in (0, 1].
  std::map<std::string, double> degraded_links;
  std::set<std::string> failed_links;  ///< ICI link names that carry nothing
  static NetworkOptions from_config(const Config& cfg);
};

/// Parses network.degraded_links ("multipod.chip(5,0).ici.x+=0.5,multipod.chip(6,0).ici.y-=0.25");
/// throws ConfigError.
std::map<std::string, double> parse_degraded_links(const std::string& text);

/// A list of link names split at its commas, but not at those inside a chip's coordinates.
std::vector<std::string> split_link_list(const std::string& text);

class Network {
 public:
  virtual ~Network() = default;
  /// Starts every transfer now. `on_arrival` runs once with the time the last one has fully
  /// arrived: a level that knows it at once (message) calls it immediately with that future
  /// time; one that finds out by simulating (packet) calls it at that time.
  using ArrivalCallback = std::function<void(Duration arrival)>;
  virtual void send_batch(const std::vector<Transfer>& transfers, ArrivalCallback on_arrival) = 0;
  /// True if a ring's steps may be sent as one message per neighbour pair (see
  /// network.coalesce_ring_steps).
  virtual bool coalesces_steps() const { return false; }
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
