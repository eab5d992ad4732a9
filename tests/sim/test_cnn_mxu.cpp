// Convolutions on the MXU model: small channel counts waste the array. Utilisation = useful
// FLOPs / (MXU time x peak), derived from the lowering (docs/cnn.md): a 3x3 conv of 64 -> 64
// channels packs 2 taps per 128-row pass (5 tiles for 9 taps) and fills half the 128 columns,
// so at most 9*64*64 / (5*128*128) = 0.45 of the array; a 3x3 conv of 512 -> 512 fills it.
#include <catch2/catch.hpp>

#include "models/workload.hpp"
#include "sim/core/tensor_core_cost.hpp"

using namespace tpusim;

namespace {
const Op& op_named(const Program& p, const std::string& name) {
  for (const auto& op : p.ops)
    if (op.name == name) return op;
  throw std::runtime_error("no op " + name);
}
}  // namespace

TEST_CASE("MXU utilisation of ResNet-50 convolutions follows their channel counts") {
  // 8 images per core, data parallel on 2x2 chips.
  const Config cfg = load_config(
      {{"topology", "2x2"}, {"workload", {{"model", "resnet50"}, {"global_batch", 64}}}});
  Topology topo(topology_from_json(cfg.json().at("topology")));
  const HardwareSpec hw = HardwareSpec::from_config(cfg);
  const Program p = build_program(cfg, topo, hw);
  auto utilisation = [&](const std::string& name) {
    const ComputeCost& c = op_named(p, name).compute;
    const double mxu_s = hw.cycles(mxu_cycles(hw.mxu, *c.matmul)).seconds();
    return c.flops / (mxu_s * hw.peak_flops_per_core());
  };
  // 5 tiles over 2 MXUs take 3 rounds of 8*56*56 rows: 9*64*64 / (2 x 3 x 128*128), about 0.37.
  const double rows = 8.0 * 56 * 56;
  CHECK(utilisation("stage1.1.conv2") ==
        Approx(9.0 * 64 * 64 * rows / (2.0 * 128 * 128 * (3 * rows + 256))).epsilon(1e-6));
  // 512 -> 512 on 7x7: 9 x 4 x 4 tiles over 2 MXUs, 49 passes of 8 rows each, one fill/drain.
  const double busy = 72.0 * 392;
  CHECK(utilisation("stage4.1.conv2") == Approx(busy / (busy + 256)).epsilon(1e-6));
}
