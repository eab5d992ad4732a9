#pragma once
// The data-center network (DCN) that joins the slices of a multislice machine
// (topology.slices > 1): per host two links, named (Machine::link_name)
//   multipod.dcn.host(N).tx        host N's network interfaces, sending (dcn.host_nics x
//                                  dcn.nic_bandwidth_GBps)
//   multipod.dcn.host(N).fabric    host N's share of the switch fabric's bisection
// Only one slice is elaborated: the slices run the same Program on the same kind of slice, so
// each is an image of the others, and a chip's cross-slice traffic is sent over its own host's
// interfaces and fabric share. The receiving host in the next slice takes in what this one
// sends, at the same rate, so its interfaces are no separate link. Links are NetworkLinks,
// carried by the study's network level like the ICI links (docs/network.md, "Multislice").
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/units.hpp"
#include "sim/network/link.hpp"
#include "sim/network/network.hpp"
#include "topologies/host_blocks.hpp"

namespace tpusim {

struct DcnOptions {
  int host_nics = 1;            ///< network interfaces per host
  Bandwidth nic_bandwidth;      ///< per interface, each way
  Bandwidth bisection;          ///< the fabric's, both ways together
  Duration latency;             ///< one way, interface to interface
  std::vector<int> chip_block;  ///< chips per host (hardware.host.chip_block)
  static DcnOptions from_config(const Config& cfg);
};

class Dcn {
 public:
  /// Makes a link (the machine owns it).
  using LinkMaker = std::function<NetworkLink*(Bandwidth, Duration)>;
  /// Builds one host's links per host block of `topology` (one slice of `slices`): tx, then
  /// fabric.
  Dcn(const Topology& topology, int slices, const DcnOptions& options, const LinkMaker& make_link);

  int slices() const { return slices_; }
  const HostBlocks& blocks() const { return blocks_; }
  /// The route of a chip's traffic to its image in the next slice: its host's tx, fabric.
  const Route& route_of_chip(int chip) const { return routes_[blocks_.host_of_chip[chip]]; }
  /// The DCN links of host `host`: tx, fabric.
  const Route& links_of_host(int host) const { return routes_[host]; }
  /// Each host's share of the bisection: 2 x hosts per slice cross-slice flows share it (a ring
  /// over the slices crosses any cut of them into two halves twice).
  Bandwidth fabric_share() const { return fabric_share_; }

 private:
  int slices_;
  HostBlocks blocks_;
  Bandwidth fabric_share_;
  std::vector<Route> routes_;  ///< per host: tx, fabric
};

}  // namespace tpusim
