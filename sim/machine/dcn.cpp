#include "sim/machine/dcn.hpp"

#include "core/hardware.hpp"

namespace tpusim {
DcnOptions DcnOptions::from_config(const Config& cfg) {
  DcnOptions o;
  o.host_nics = static_cast<int>(kDcnHostNics(cfg));
  o.nic_bandwidth = Bandwidth::GBps(kDcnNicBandwidthGBps(cfg));
  o.bisection = Bandwidth::GBps(kDcnBisectionBandwidthGBps(cfg));
  o.latency = Duration::ns(kDcnLatencyUs(cfg) * 1e3);
  o.chip_block = host_chip_block(cfg);
  return o;
}

Dcn::Dcn(const Topology& topology, int slices, const DcnOptions& options,
         const LinkMaker& make_link)
    : slices_(slices), blocks_(host_blocks(topology, options.chip_block)) {
  const int hosts = static_cast<int>(blocks_.chips.size());
  fabric_share_ = Bandwidth::bytes_per_s(options.bisection.bytes_per_s() / (2.0 * hosts));
  const Bandwidth nic =
      Bandwidth::bytes_per_s(options.nic_bandwidth.bytes_per_s() * options.host_nics);
  for (int h = 0; h < hosts; ++h) {
    NetworkLink* tx = make_link(nic, Duration{});
    NetworkLink* fabric = make_link(fabric_share_, options.latency);
    routes_.push_back({tx, fabric});
  }
}

}  // namespace tpusim
