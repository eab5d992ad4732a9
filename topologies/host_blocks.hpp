#pragma once
// Which chips each host feeds: the chip grid cut into equal rectangular blocks
// (hardware.host.chip_block, 4x2 on TPU v3: 512 hosts of 8 chips on the 128x32 Multipod). Plain
// C++; the hosts themselves are sim/machine/host.hpp.
#include <string>
#include <vector>

#include "core/config.hpp"
#include "topologies/topology.hpp"

namespace tpusim {

struct HostBlocks {
  /// The block's extent along each dimension of the topology: the requested extent (1 for a
  /// dimension the request does not name), clipped to the grid's size along it.
  std::vector<int> extent;
  std::vector<std::vector<int>> chips;  ///< per host: its chip ids, X fastest
  std::vector<int> host_of_chip;
  int chips_per_host() const { return chips.empty() ? 0 : static_cast<int>(chips[0].size()); }
  std::string describe() const;  ///< "4x2 chips per host"
};

/// The study's hardware.host.chip_block (declared in host_blocks.cpp: a preset may set it).
std::vector<int> host_chip_block(const Config& cfg);

/// Cuts `topology` into blocks of `block` chips (X first). A block longer than the grid along a
/// dimension is clipped to the grid (a 2x2 slice has one host of 4 chips); extents that do not
/// divide the grid are a ConfigError naming `where`. Hosts are numbered by their block's
/// coordinates, X fastest, as chips are.
HostBlocks host_blocks(const Topology& topology, const std::vector<int>& block,
                       const std::string& where = "hardware.host.chip_block");

}  // namespace tpusim
