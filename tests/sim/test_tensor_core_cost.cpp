#include <catch2/catch.hpp>

#include "core/config.hpp"
#include "sim/core/tensor_core_cost.hpp"

using namespace tpusim;

namespace {
HardwareSpec v3() { return HardwareSpec::from_config(load_config(nlohmann::json::object())); }
}  // namespace

TEST_CASE("MXU: a large square matmul runs at the peak of dim x dim MACs per MXU per cycle") {
  MxuSpec mxu;  // 2 MXUs of 128x128, 8-row passes of 8 cycles
  MatmulShape s{1, 4096, 4096, 4096};
  const double tiles = 32.0 * 32.0;
  const double expect = tiles / mxu.count * 4096 + mxu.fill_drain_cycles;  // m rows, 1 cycle each
  CHECK(mxu_cycles(mxu, s) == Approx(expect));
  // Useful MACs per cycle approach dim^2 x count.
  CHECK(s.flops() / 2 / mxu_cycles(mxu, s) == Approx(128.0 * 128 * 2).epsilon(0.001));
}

TEST_CASE("MXU: operands are padded to the array so a K of 64 wastes half of it") {
  MxuSpec mxu;
  MatmulShape k64{16, 512, 64, 512};
  MatmulShape k128{16, 512, 128, 512};
  CHECK(mxu_cycles(mxu, k64) == mxu_cycles(mxu, k128));
  // m is padded to the 8-row pass: 1 row costs as much as 8.
  MatmulShape m1{1, 1, 1024, 1024}, m8{1, 8, 1024, 1024};
  CHECK(mxu_cycles(mxu, m1) == mxu_cycles(mxu, m8));
}

TEST_CASE("MXU: with few rows, loading each weight tile dominates") {
  MxuSpec mxu;
  MatmulShape s{1, 8, 1024, 1024};  // 64 tiles, 8 cycles of passes each, 128 to load weights
  CHECK(mxu_cycles(mxu, s) == Approx(64.0 / 2 * mxu.weight_load_cycles + mxu.fill_drain_cycles));
}

TEST_CASE("HBM time is one latency plus bytes over the achievable bandwidth") {
  auto hw = v3();
  const double bytes = 450e6;  // a millisecond of peak bandwidth on one core
  auto t = hbm_time(hw, bytes);
  CHECK(t.seconds() == Approx(hw.hbm_latency.seconds() + 1e-3 / hw.hbm_efficiency));
}

TEST_CASE("a compute op takes the larger of compute and memory time plus the launch overhead") {
  auto hw = v3();
  ComputeCost c;
  c.matmul = MatmulShape{1, 4096, 4096, 4096};
  c.bytes_read = 3 * 4096.0 * 4096 * 2;
  auto t = compute_op_time(hw, c);
  CHECK(t.mxu > t.hbm);
  CHECK(t.total == t.mxu + hw.op_overhead);
}

TEST_CASE("megacore: one device per chip, a matmul's MXU time half a core's, the chip's HBM") {
  const Config cores_cfg = load_config({{"preset", "tpu_v4"}, {"hardware", {{"megacore", false}}}});
  const Config mega_cfg = load_config({{"preset", "tpu_v4"}, {"hardware", {{"megacore", true}}}});
  const HardwareSpec core = HardwareSpec::from_config(cores_cfg);
  const HardwareSpec mega = HardwareSpec::from_config(mega_cfg);
  const int n = static_cast<int>(cores_cfg.integer("hardware.cores_per_chip"));
  REQUIRE(n == 2);
  CHECK(core.devices_per_chip == n);
  CHECK(mega.devices_per_chip == 1);
  CHECK(mega.tensorcores_per_chip == n);
  // Capacity and bandwidth of the device are the chip's: n times one core's figures.
  CHECK(mega.hbm_bytes_per_core ==
        cores_cfg.number("hardware.hbm.GiB_per_core") * n * 1073741824.0);
  CHECK(mega.hbm_bandwidth_per_core.bytes_per_s() ==
        Approx(cores_cfg.number("hardware.hbm.bandwidth_GBps_per_core") * n * 1e9));
  CHECK(mega.peak_flops_per_core() == Approx(core.peak_flops_per_core() * n));
  // A matmul of many weight tiles: the tiles spread over twice the MXUs, so the MXU time less the
  // one fill and drain is half; HBM traffic of twice the bytes takes as long.
  ComputeCost c;
  c.matmul = MatmulShape{1, 4096, 4096, 4096};
  const double fill_drain_s = core.mxu.fill_drain_cycles / core.clock_hz / core.mxu_efficiency;
  const double t_core = compute_op_time(core, c).mxu.seconds();
  const double t_mega = compute_op_time(mega, c).mxu.seconds();
  CHECK(t_mega - fill_drain_s == Approx((t_core - fill_drain_s) / 2));
  CHECK(hbm_time(mega, 2e9).seconds() == Approx(hbm_time(core, 1e9).seconds()));
  CHECK(vpu_cycles(mega, 2e6, 1) == Approx(vpu_cycles(core, 1e6, 1)));
}

TEST_CASE("a matmul loads its first block before its MXUs start and stores its last after") {
  const Config cfg = load_config({{"hardware", {{"calibration", {{"exposed_block_MiB", 1}}}}}});
  const HardwareSpec hw = HardwareSpec::from_config(cfg);
  const double block = 1048576.0;
  const double bw = cfg.number("hardware.hbm.bandwidth_GBps_per_core") * 1e9 * hw.hbm_efficiency;
  ComputeCost big;
  big.matmul = MatmulShape{1, 4096, 4096, 4096};
  big.bytes_read = 2 * 4096.0 * 4096 * 2;  // both operands, bf16: more than a block
  big.bytes_written = 4096.0 * 4096 * 2;
  const OpTiming t = compute_op_time(hw, big);
  CHECK(t.pipeline.seconds() == Approx(2 * block / bw));
  CHECK(t.total == max(max(t.mxu, t.vpu), t.hbm) + hw.op_overhead + t.pipeline);
  // A kernel smaller than the block does not overlap its HBM traffic at all.
  ComputeCost small;
  small.matmul = MatmulShape{1, 256, 256, 256};
  small.bytes_read = 2 * 256.0 * 256 * 2;
  small.bytes_written = 256.0 * 256 * 2;
  const OpTiming s = compute_op_time(hw, small);
  CHECK(s.pipeline.seconds() == Approx((small.bytes_read + small.bytes_written) / bw));
  // A vector op streams: nothing is exposed.
  ComputeCost add;
  add.vpu_elements = 1 << 20;
  add.bytes_read = 4 << 20;
  CHECK(compute_op_time(hw, add).pipeline == Duration{});
  // TPU v3's preset exposes nothing (its calibration predates the term).
  CHECK(compute_op_time(v3(), big).pipeline == Duration{});
}

TEST_CASE("the MXU terms: tiles and the fill and drain add up to the cycle formula") {
  const HardwareSpec hw = v3();
  const MatmulShape s{1, 1024, 1024, 1024};
  const MxuCycles c = mxu_cycle_terms(hw.mxu, s);
  CHECK(c.fill_drain == hw.mxu.fill_drain_cycles);
  CHECK(c.tiles + c.fill_drain == mxu_cycles(hw.mxu, s));
  ComputeCost cost;
  cost.matmul = s;
  const OpTiming t = compute_op_time(hw, cost);
  CHECK(t.mxu_fill_drain.seconds() ==
        Approx(hw.mxu.fill_drain_cycles / hw.mxu_efficiency / hw.clock_hz));
}

TEST_CASE("an int8 matmul streams its passes at hardware.mxu.int8_rate (quantized training)") {
  // TPU v5p: 2 int8 products per bf16 one. [8192, 8192] x [8192, 8192] on one megacore device
  // (8 MXUs): 64 x 64 tiles of 8192 / (8 x 2) passes of 8 cycles, the weight loads hidden.
  HardwareSpec hw = HardwareSpec::from_config(load_config({{"preset", "tpu_v5p"}}));
  REQUIRE(hw.mxu.int8_rate == 2);
  ComputeCost c;
  c.matmul = MatmulShape{1, 8192, 8192, 8192};
  c.mxu_dtype = DType::I8;
  const double tiles = 64.0 * 64 / hw.mxu.count;
  const double passes = 8192.0 / (hw.mxu.rows_per_pass * 2) * hw.mxu.pass_cycles;
  const OpTiming t = compute_op_time(hw, c);
  CHECK((t.mxu - t.mxu_fill_drain).seconds() ==
        Approx(tiles * passes / hw.mxu_efficiency / hw.clock_hz));
  c.mxu_dtype = DType::BF16;
  CHECK((compute_op_time(hw, c).mxu - t.mxu_fill_drain).seconds() ==
        Approx(2 * (t.mxu - t.mxu_fill_drain).seconds()));
  // A chip without the rate refuses the op, naming the parameter.
  c.mxu_dtype = DType::F8;
  hw.mxu.fp8_rate = 0;
  CHECK_THROWS_WITH(compute_op_time(hw, c), Catch::Contains("hardware.mxu.fp8_rate"));
}
