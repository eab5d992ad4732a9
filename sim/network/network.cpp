#include "sim/network/network.hpp"

#include <cstdlib>
#include <map>

#include "core/errors.hpp"
#include "core/param_handle.hpp"

namespace tpusim {
namespace {
using T = ParamType;
// One parameter per line reads as a table.
// clang-format off
const Param<std::string> kNetworkFidelity{{"network.fidelity", T::String, "", "message", "network model: message (per-message reservations, any size), flow (max-min fair sharing of links, rates recomputed at flow start and end) or packet (per-packet FIFO at every link, computed in packet trains; the reference)", -1e300, 1e300, {}, "", "", false, &network_names}};
const Param<std::int64_t> kNetworkPacketBytes{{"network.packet_bytes", T::Integer, "bytes", 4096, "the ICI's packet: the packet level's unit; at the message and flow levels each extra hop of a route adds one packet's serialisation (cut-through)", 16, 1e9}};
const Param<bool> kNetworkCoalesceRingSteps{{"network.coalesce_ring_steps", T::Boolean, "", true, "every level: the steps of one ring phase travel as one message per neighbour pair (at the packet level one packet train; each step still pays latency and synchronisation); false sends every step separately (slower, finer contention)"}};
const Param<std::string> kNetworkDegradedLinks{{"network.degraded_links", T::String, "", "", "ICI link directions that run slower, as NAME=FACTOR[,NAME=FACTOR...] with NAME as in reports (multipod.chip(5,0).ici.x+: the link of the chip at x=5, y=0 towards +X; x-, y+, y-, z+...) and FACTOR from 1e-6 to 1 multiplying its bandwidth", -1e300, 1e300}};
const Param<std::string> kNetworkFailedLinks{{"network.failed_links", T::String, "", "", "ICI link directions that carry nothing, as NAME[,NAME...] (names as in network.degraded_links); routes go the other way round the dimension's ring, and a group they cut off is an error", -1e300, 1e300}};
const Param<bool> kNetworkContention{{"network.contention", T::Boolean, "", true, "links queue transfers FIFO; false lets flows share links without waiting (what-if only)"}};
// clang-format on

std::map<std::string, NetworkFactory>& network_registry() {
  static std::map<std::string, NetworkFactory> r;
  return r;
}
}  // namespace

std::vector<std::string> split_link_list(const std::string& text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  out.emplace_back();
  int depth = 0;  // a chip's coordinates, chip(x,y), hold commas
  for (char ch : text) {
    depth += ch == '(' ? 1 : ch == ')' ? -1 : 0;
    if (ch == ',' && depth == 0)
      out.emplace_back();
    else
      out.back() += ch;
  }
  return out;  // a trailing comma leaves an empty last name: an error for the caller to report
}

NetworkOptions NetworkOptions::from_config(const Config& c) {
  NetworkOptions o;
  o.fidelity = kNetworkFidelity(c);
  o.packet_bytes = static_cast<double>(kNetworkPacketBytes(c));
  o.contention = kNetworkContention(c);
  o.coalesce_ring_steps = kNetworkCoalesceRingSteps(c);
  o.degraded_links = parse_degraded_links(kNetworkDegradedLinks(c));
  for (const std::string& name : split_link_list(kNetworkFailedLinks(c)))
    if (name.empty() || !o.failed_links.insert(name).second)
      throw ConfigError(kNetworkFailedLinks.path(),
                        name.empty()
                            ? "an empty name (a trailing or doubled comma); give NAME[,NAME...] "
                              "(e.g. multipod.chip(5,0).ici.x+)"
                            : "'" + name + "' is given twice");
  for (const std::string& name : o.failed_links)
    if (o.degraded_links.count(name))
      throw ConfigError(kNetworkDegradedLinks.path(),
                        "'" + name +
                            "' is also in network.failed_links; allowed: a link failed or "
                            "degraded, not both");
  return o;
}

std::map<std::string, double> parse_degraded_links(const std::string& text) {
  std::map<std::string, double> out;
  for (const std::string& item : split_link_list(text)) {
    if (item.empty())
      throw ConfigError(kNetworkDegradedLinks.path(),
                        "an empty entry (a trailing or doubled comma); give "
                        "NAME=FACTOR[,NAME=FACTOR...] (e.g. multipod.chip(5,0).ici.x+=0.5)");
    const std::size_t eq = item.find('=');
    const std::string name = item.substr(0, eq);
    double factor = 0;
    std::size_t used = 0;
    if (eq != std::string::npos) {  // strtod: a number too small for stod is still a number
      const std::string text = item.substr(eq + 1);
      char* end = nullptr;
      factor = std::strtod(text.c_str(), &end);
      used = static_cast<std::size_t>(end - text.c_str());
    }
    if (eq == std::string::npos || name.empty() || used == 0 || used != item.size() - eq - 1)
      throw ConfigError(kNetworkDegradedLinks.path(),
                        "'" + item + "' is not NAME=FACTOR (e.g. multipod.chip(5,0).ici.x+=0.5)");
    // Below 1e-6 a link's time passes the simulated-time limit for any sizeable message.
    if (!(factor >= 1e-6 && factor <= 1))
      throw ConfigError(
          kNetworkDegradedLinks.path(),
          "factor of '" + name + "' is " + item.substr(eq + 1) + "; allowed: from 1e-6 to 1");
    if (!out.emplace(name, factor).second)
      throw ConfigError(kNetworkDegradedLinks.path(), "'" + name + "' is given twice");
  }
  return out;
}

NetworkRegistrar::NetworkRegistrar(const char* name, NetworkFactory make) {
  network_registry()[name] = make;
}

std::unique_ptr<Network> make_network(EventQueue& queue, const NetworkOptions& options) {
  auto it = network_registry().find(options.fidelity);
  if (it == network_registry().end()) {
    std::string names;
    for (const auto& n : network_names()) names += (names.empty() ? "" : ", ") + n;
    throw ConfigError(kNetworkFidelity.path(),
                      "unknown fidelity '" + options.fidelity + "'; allowed: " + names);
  }
  return it->second(queue, options);
}

std::vector<std::string> network_names() {
  std::vector<std::string> out;
  for (const auto& [name, _] : network_registry()) out.push_back(name);
  return out;
}

}  // namespace tpusim
