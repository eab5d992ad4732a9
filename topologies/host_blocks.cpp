#include "topologies/host_blocks.hpp"

#include <algorithm>

#include "core/errors.hpp"
#include "core/param_handle.hpp"
#include "core/params.hpp"

namespace tpusim {
namespace {
// One parameter per line reads as a table.
// clang-format off
// 8 chips (16 TensorCores) per host as a 4x2 block of the chip grid: the mlperf07 system
// files and launch flags (512 hosts on the 128x32 Multipod). Clipped to smaller grids.
const Param<std::vector<std::int64_t>> kHostChipBlock{{"hardware.host.chip_block", ParamType::IntegerList, "chips", nlohmann::json::array({4, 2}), "chips one host feeds, as a block of the chip grid (X first; clipped to the grid, must tile it) (tpusim train)", 1, 1 << 20}};
// clang-format on
}  // namespace

std::vector<int> host_chip_block(const Config& cfg) {
  std::vector<int> block;
  for (auto e : kHostChipBlock(cfg)) block.push_back(static_cast<int>(e));
  if (block.empty())
    throw ConfigError(kHostChipBlock.path(),
                      "[] names no block; allowed: the chips one host feeds along each grid "
                      "dimension, X first, e.g. [4, 2] (a dimension left out has extent 1)");
  return block;
}

std::string HostBlocks::describe() const {
  std::string s;
  for (std::size_t d = 0; d < extent.size(); ++d) s += (d ? "x" : "") + std::to_string(extent[d]);
  return s + " chips per host";
}

HostBlocks host_blocks(const Topology& topology, const std::vector<int>& block,
                       const std::string& where) {
  const int dims = topology.num_dims();
  if (static_cast<int>(block.size()) > dims)
    for (std::size_t d = dims; d < block.size(); ++d)
      if (block[d] != 1)
        throw ConfigError(where, "names " + std::to_string(block.size()) +
                                     " dimensions but the topology " + topology.describe() +
                                     " has " + std::to_string(dims) +
                                     "; the extra extents must be 1");
  HostBlocks h;
  std::vector<int> hosts_along(dims);
  int hosts = 1;
  for (int d = 0; d < dims; ++d) {
    const int want = d < static_cast<int>(block.size()) ? block[d] : 1;
    if (want < 1)
      throw ConfigError(where, "extents must be 1 or more, not " + std::to_string(want));
    const int e = std::min(want, topology.dim(d));
    if (topology.dim(d) % e != 0)
      throw ConfigError(where, "a host block of " + std::to_string(e) + " chips along dimension " +
                                   std::to_string(d) + " does not tile the " +
                                   std::to_string(topology.dim(d)) + " chips of " +
                                   topology.describe() + "; give extents that divide the grid");
    h.extent.push_back(e);
    hosts_along[d] = topology.dim(d) / e;
    hosts *= hosts_along[d];
  }
  h.chips.assign(hosts, {});
  h.host_of_chip.assign(topology.num_chips(), -1);
  for (int c = 0; c < topology.num_chips(); ++c) {
    int host = 0, stride = 1;
    for (int d = 0; d < dims; ++d) {
      host += topology.coord(c, d) / h.extent[d] * stride;
      stride *= hosts_along[d];
    }
    h.host_of_chip[c] = host;
    h.chips[host].push_back(c);
  }
  return h;
}

}  // namespace tpusim
