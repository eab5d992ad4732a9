// The measured kernels and collectives of docs/kernels.md (scaling book, accelerator-
// microbenchmarks) that tpusim can set up, each within 15 % (docs/kernels.md lists them with
// tpusim's figures). These are validations against measurements, not closed forms: the measured
// value is the expectation, and the parameters each point sets are named in docs/kernels.md.
#include <catch2/catch.hpp>

#include "core/config.hpp"
#include "sim/core/tensor_core_cost.hpp"
#include "tests/sim/sim_fixture.hpp"

using namespace tpusim;
using namespace tpusim::test;

namespace {

constexpr double kTolerance = 0.15;

/// TFLOP/s of a square bf16 GEMM of side n on one device of `preset`: both operands read, the
/// result written, as `tpusim kernel --op matmul` times it (no padding at multiples of 128).
double gemm_tflops(const std::string& preset, std::int64_t n) {
  const HardwareSpec hw = HardwareSpec::from_config(load_config({{"preset", preset}}));
  ComputeCost c;
  c.matmul = MatmulShape{1, n, n, n};
  c.flops = c.matmul->flops();
  c.bytes_read = 2.0 * n * n * 2;
  c.bytes_written = 1.0 * n * n * 2;
  return c.flops / compute_op_time(hw, c).total.seconds() * 1e-12;
}

void check_gemm(std::int64_t n, double measured_tflops) {
  INFO("TPU v7 GEMM " << n << ": measured " << measured_tflops << " TFLOP/s");
  const double tpusim = gemm_tflops("tpu_v7", n);
  CHECK(tpusim == Approx(measured_tflops).epsilon(kTolerance));
}

/// Seconds of an all-gather of `bytes` per chip (gathered) over the 4-chip open axis of an 8x4
/// TPU v5e slice, as the scaling book measured it.
double v5e_all_gather_s(double bytes, const char* fidelity = "message") {
  const Config cfg = load_config(
      {{"preset", "tpu_v5e"}, {"topology", "4x8:wrap=0,0"}, {"network", {{"fidelity", fidelity}}}});
  Program p;
  p.mesh = {{"y", 8}, {"x", 4}};
  p.ops.push_back(collective_op(CollectiveKind::AllGather, bytes, {"x"}));
  return simulate_child(p, cfg).step_s;
}

/// Bus bandwidth (GB/s) of an f32 all-gather of `shard` bytes per device over the 8 devices of
/// a 2x2x1 TPU v7 slice, in accelerator-microbenchmarks' convention: shard x 6 inter-chip peers
/// (both cores of a chip on one ring) over the time.
double v7_all_gather_busbw(double shard) {
  const Config cfg = load_config({{"preset", "tpu_v7"}, {"topology", "2x2x1"}});
  Op op = collective_op(CollectiveKind::AllGather, 8 * shard);
  op.collective.dtype = DType::F32;
  return shard * 6 / simulate_child(one_op(8, op), cfg).step_s * 1e-9;
}

}  // namespace

// The scaling book's all-gathers over a v5e axis (sharding.md).
TEST_CASE("measured: TPU v5e all-gather of 32 MiB over 4 chips in 680 us") {
  CHECK(v5e_all_gather_s(32.0 * 1048576) == Approx(680e-6).epsilon(kTolerance));
  // The same costs at the other network levels.
  CHECK(v5e_all_gather_s(32.0 * 1048576, "flow") == Approx(680e-6).epsilon(kTolerance));
  CHECK(v5e_all_gather_s(32.0 * 1048576, "packet") == Approx(680e-6).epsilon(kTolerance));
}
TEST_CASE("measured: TPU v5e all-gather of 128 KiB over 4 chips in about 8 us") {
  CHECK(v5e_all_gather_s(128.0 * 1024) == Approx(8e-6).epsilon(kTolerance));
  CHECK(v5e_all_gather_s(128.0 * 1024, "flow") == Approx(8e-6).epsilon(kTolerance));
  CHECK(v5e_all_gather_s(128.0 * 1024, "packet") == Approx(8e-6).epsilon(kTolerance));
  // Message and packet levels pipeline a message over its hops in the same packets: one time.
  CHECK(v5e_all_gather_s(128.0 * 1024) ==
        Approx(v5e_all_gather_s(128.0 * 1024, "packet")).epsilon(1e-5));
}

// accelerator-microbenchmarks, Ironwood: all-gather bus bandwidth, 2x2x1, f32.
TEST_CASE("measured: TPU v7 all-gather of 1.57 MB at 71.8 GB/s bus bandwidth") {
  CHECK(v7_all_gather_busbw(256.0 * 1024) == Approx(71.8).epsilon(kTolerance));
}
TEST_CASE("measured: TPU v7 all-gather of 6.3 MB at 129.2 GB/s bus bandwidth") {
  CHECK(v7_all_gather_busbw(1048576.0) == Approx(129.2).epsilon(kTolerance));
}
TEST_CASE("measured: TPU v7 all-gather of 25 MB at 161.9 GB/s bus bandwidth") {
  CHECK(v7_all_gather_busbw(4 * 1048576.0) == Approx(161.9).epsilon(kTolerance));
}
TEST_CASE("measured: TPU v7 all-gather of 101 MB at 174.8 GB/s bus bandwidth") {
  CHECK(v7_all_gather_busbw(16 * 1048576.0) == Approx(174.8).epsilon(kTolerance));
}
TEST_CASE("measured: TPU v7 all-gather of 403 MB at 178.8 GB/s bus bandwidth") {
  CHECK(v7_all_gather_busbw(64 * 1048576.0) == Approx(178.8).epsilon(kTolerance));
}

// accelerator-microbenchmarks, Ironwood: square bf16 GEMMs on one device.
TEST_CASE("measured: TPU v7 GEMM 128 at 2.6 TFLOP/s") { check_gemm(128, 2.6); }
TEST_CASE("measured: TPU v7 GEMM 256 at 18.3 TFLOP/s") { check_gemm(256, 18.3); }
TEST_CASE("measured: TPU v7 GEMM 512 at 105 TFLOP/s") { check_gemm(512, 105); }
TEST_CASE("measured: TPU v7 GEMM 1024 at 350 TFLOP/s") { check_gemm(1024, 350); }
TEST_CASE("measured: TPU v7 GEMM 2048 at 679 TFLOP/s") { check_gemm(2048, 679); }
TEST_CASE("measured: TPU v7 GEMM 4096 at 893 TFLOP/s") { check_gemm(4096, 893); }
TEST_CASE("measured: TPU v7 GEMM 16384 at 950 TFLOP/s") { check_gemm(16384, 950); }
TEST_CASE("measured: TPU v7 GEMM 32768 at 956 TFLOP/s") { check_gemm(32768, 956); }
