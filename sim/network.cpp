#include "sim/network.hpp"

#include <map>

#include "core/errors.hpp"
#include "core/params.hpp"

namespace tpusim {
namespace {
using T = ParamType;
// One parameter per line reads as a table.
// clang-format off
const ParamRegistrar kParams{{
    {"network.fidelity", T::String, "", "message", "network model: message (per-message reservations, any size), flow (max-min fair sharing of links, rates recomputed at flow start and end) or packet (per-packet events, the reference)", -1e300, 1e300, {"message", "flow", "packet"}},
    {"network.chunk_bytes", T::Integer, "bytes", 65536, "message level: unit in which messages pipeline over multi-hop routes", 64, 1e12},
    {"network.packet_bytes", T::Integer, "bytes", 4096, "packet level: packet size; flow level: each extra hop adds one packet's serialisation (store-and-forward)", 16, 1e9},
    {"network.coalesce_ring_steps", T::Boolean, "", true, "message and flow levels: the steps of one ring phase travel as one message per neighbour pair (each step still pays latency and synchronisation); false sends every step separately (slower, finer contention)"},
    {"network.contention", T::Boolean, "", true, "links queue transfers FIFO; false lets flows share links without waiting (what-if only)"},
}};
// clang-format on

std::map<std::string, NetworkFactory>& registry() {
  static std::map<std::string, NetworkFactory> r;
  return r;
}
}  // namespace

NetworkOptions NetworkOptions::from_config(const Config& c) {
  NetworkOptions o;
  o.fidelity = c.string("network.fidelity");
  o.chunk_bytes = static_cast<double>(c.integer("network.chunk_bytes"));
  o.packet_bytes = static_cast<double>(c.integer("network.packet_bytes"));
  o.contention = c.boolean("network.contention");
  o.coalesce_ring_steps = c.boolean("network.coalesce_ring_steps");
  return o;
}

NetworkRegistrar::NetworkRegistrar(const char* name, NetworkFactory make) {
  registry()[name] = make;
}

std::unique_ptr<Network> make_network(EventQueue& queue, const NetworkOptions& options) {
  auto it = registry().find(options.fidelity);
  if (it == registry().end()) {
    std::string names;
    for (const auto& n : network_names()) names += (names.empty() ? "" : ", ") + n;
    throw ConfigError("network.fidelity",
                      "unknown fidelity '" + options.fidelity + "'; allowed: " + names);
  }
  return it->second(queue, options);
}

std::vector<std::string> network_names() {
  std::vector<std::string> out;
  for (const auto& [name, _] : registry()) out.push_back(name);
  return out;
}

}  // namespace tpusim
