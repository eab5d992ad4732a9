// libFuzzer target: the topology and mesh parsers. The input is tried as a --topology text (a
// shape such as 128x32:wrap=0,1 or a preset name; no paths: the target reads no files), as a
// topology object, and as a --mesh text. What parses must build: a Topology (up to 4096 chips, to
// keep each input fast) with consistent routes.
#include <cstdint>
#include <string>

#include "core/config.hpp"
#include "core/errors.hpp"
#include "topologies/topology.hpp"
#include "traces/format/mesh_groups.hpp"

namespace {
void build(const tpusim::TopologySpec& spec) {
  long long chips = 1;
  for (int d : spec.dims) chips *= d;
  if (chips > 4096) return;
  tpusim::Topology t(spec);
  const int last = t.num_chips() - 1;
  (void)t.describe();
  (void)t.hops(0, last);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpusim;
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (text.find('/') == std::string::npos && text.find('\0') == std::string::npos) {
    try {
      build(parse_topology(text));
    } catch (const ConfigError&) {
    }
  }
  try {
    build(topology_from_json(parse_json_text(text, "fuzz.json")));
  } catch (const ConfigError&) {
  }
  try {
    (void)trace::parse_mesh_axes(text, "--mesh");
  } catch (const ConfigError&) {
  }
  return 0;
}
