#pragma once
// Offloaded rematerialisation's PCIe copies (decoder_lm's qkv_proj_offloaded, minimal_offloaded;
// docs/llm.md): each offloaded tensor goes to host memory once in the forward pass, after the op
// that produces it, and comes back once, in its fetch op (`NAME.fetch`, training.cpp, never fused),
// over the device's share of its chip's host link (hardware.host.pcie_GBps / devices per chip;
// PCIe carries both directions at once). A fetch op starts its copy (training.cpp issues a
// layer's fetches one layer ahead) and the first op that depends on it waits for the copy: the
// part of the copies that the compute between does not hide lengthens that op.
#include <vector>

#include "core/units.hpp"
#include "models/program.hpp"

namespace tpusim {

struct HostOffloadTimes {
  std::vector<Duration> op_time;  ///< the op times, the waits for the copies added
  double bytes_out = 0;           ///< per device and step, device to host
  double bytes_in = 0;            ///< per device and step, host to device
  Duration exposed;               ///< the waits added for the copies
};

/// The waits for the fetches' copies on the host link of bandwidth `link` per device. O(ops).
HostOffloadTimes host_offload_times(const Program& program, const std::vector<Duration>& op_time,
                                    Bandwidth link);

}  // namespace tpusim
