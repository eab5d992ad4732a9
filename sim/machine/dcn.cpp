#include "sim/machine/dcn.hpp"

#include "core/param_handle.hpp"

namespace tpusim {
namespace {
using T = ParamType;
// One parameter per line reads as a table.
// clang-format off
const Param<std::int64_t> kDcnHostNics{{"dcn.host_nics", T::Integer, "interfaces", 1, "multislice: data-center network interfaces of each host (assumption, docs/reference.md: one per host, as a server of the era)", 1, 64}};
const Param<double> kDcnNicBandwidthGBps{{"dcn.nic_bandwidth_GBps", T::Number, "GB/s", 12.5, "multislice: bandwidth of one host network interface, each way (assumption, docs/reference.md: 100 Gb/s Ethernet, the common data-center line rate of 2020-2022 servers; no published Cloud TPU host figure)", 1e-3, 1e6}};
const Param<double> kDcnBisectionBandwidthGBps{{"dcn.bisection_bandwidth_GBps", T::Number, "GB/s", 162500, "multislice: the switch fabric's bisection, both ways together, shared equally by the cross-slice flows (Jupiter's 1.3 Pb/s, Singh et al., SIGCOMM 2015: a whole data-center fabric, an upper bound for what a job gets)", 1e-3, 1e9}};
const Param<double> kDcnLatencyUs{{"dcn.latency_us", T::Number, "us", 10.0, "multislice: one-way latency of the data-center network, interface to interface (assumption, docs/reference.md: a few switch hops and the hosts' network stacks)", 0, 1e6}};
// clang-format on
}  // namespace

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
