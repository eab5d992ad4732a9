#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/cli/bad_input.hpp"

TEST_CASE("tpusim collective --json reports time and bandwidths that agree with each other") {
  auto r = run_tpusim(
      {"collective", "--op", "all-reduce", "--bytes", "8MiB", "--topology", "4x4", "--json"});
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  const double bytes = 8.0 * 1024 * 1024;
  const double t = j["collective_time_ns"].get<double>() * 1e-9;
  CHECK(j["algbw_GBps"].get<double>() == Approx(bytes / t * 1e-9));
  const double n = j["cores"].get<double>();
  CHECK(j["busbw_GBps"].get<double>() == Approx(j["algbw_GBps"].get<double>() * 2 * (n - 1) / n));
  CHECK(j["chips"] == 16);
  CHECK(j["cores"] == 32);
  CHECK(j["events"].get<double>() > 0);
  CHECK(j["wall_s"].get<double>() >= 0);
}

TEST_CASE("the text report names the algorithm and the topology") {
  auto r = run_tpusim({"collective", "--op", "reduce-scatter", "--bytes", "1MiB", "--topology",
                       "8x8:wrap=0,1", "--algorithm", "bidirectional_ring"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("bidirectional_ring"));
  CHECK_THAT(r.out, Catch::Contains("8x8 (X open Y wraps)"));
}

TEST_CASE("bad collective input is one error line naming the value with exit code 2") {
  check_bad({"collective", "--op", "all-sum", "--bytes", "1MiB"}, "all-sum");
  check_bad({"collective", "--op", "all-reduce", "--bytes", "1MiB", "--algorithm", "tree"}, "tree");
  check_bad({"collective", "--op", "all-reduce", "--bytes", "1MiB", "--topology", "tpu_v9_pod"},
            "tpu_v9_pod");
  check_bad({"collective", "--op", "all-reduce", "--bytes", "lots"}, "lots");
  check_bad({"collective", "--op", "all-reduce", "--bytes", "0"}, "--bytes");
  check_bad({"collective", "--op", "all-reduce", "--bytes", "-5MiB"}, "-5MiB");
  check_bad({"collective", "--op", "all-reduce", "--bytes", "5XB"}, "XB");
  check_bad({"collective", "--op", "all-reduce", "--bytes", "1MiB", "--topology", "4x4", "--mesh",
             "data=64"},
            "parallelism");
  check_bad({"collective", "--op", "all-reduce", "--bytes", "1MiB", "--topology",
             "tests/data/malformed_topology.json"},
            "malformed_topology.json:1:");
  check_bad(
      {"collective", "--op", "all-reduce", "--bytes", "1MiB", "--set", "hardware.ici.speed=3"},
      "hardware.ici.speed");
  check_bad({"collective", "--op", "all-reduce", "--bytes", "1MiB", "--set",
             "hardware.ici.bandwidth_GBps=-3"},
            "hardware.ici.bandwidth_GBps");
  check_bad({"collective", "--op", "all-reduce", "--bytes", "1MiB", "--topology", "4x4",
             "--algorithm", "onchip"},
            "onchip");
}

// tpusim kernel: one compute op on one device (the single-op sibling of tpusim collective).

namespace {
nlohmann::json kernel_json(std::vector<std::string> args) {
  args.insert(args.begin(), "kernel");
  args.push_back("--json");
  auto r = run_tpusim(args);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}
double term(const nlohmann::json& j, const char* key) { return j["terms"][key].get<double>(); }
}  // namespace

TEST_CASE("tpusim kernel times a matmul by the MXU cycle formula plus its fixed costs") {
  const auto j = kernel_json({"--op", "matmul", "--shape", "1024,1024,1024"});
  const auto& hw = j["config"]["hardware"];
  const double n = 1024, t = j["time_ns"].get<double>();
  CHECK(j["flops"].get<double>() == Approx(2 * n * n * n));
  CHECK(j["tflops"].get<double>() == Approx(2 * n * n * n / t * 1e-3));
  CHECK(j["bytes"].get<double>() == Approx(3 * n * n * 2));  // no padding at multiples of 128
  CHECK(j["bytes_per_s"].get<double>() == Approx(3 * n * n * 2 / t * 1e9));
  // 8 x 8 weight tiles of 128 over the core's MXUs, each 1024 rows in 8-row passes of 8 cycles.
  const double dim = hw["mxu"]["dim"], mxus = hw["mxu"]["count"];
  const double tiles = (n / dim) * (n / dim) / mxus * n;
  const double fill = hw["mxu"]["fill_drain_cycles"];
  const double eff = hw["calibration"]["mxu_efficiency"], ghz = hw["clock_MHz"].get<double>() / 1e3;
  CHECK(term(j, "mxu_tiles_ns") == Approx(tiles / eff / ghz));
  CHECK(term(j, "fill_drain_ns") == Approx(fill / eff / ghz));
  CHECK(term(j, "launch_ns") == Approx(hw["calibration"]["op_overhead_ns"].get<double>()));
  const double longest = std::max({term(j, "mxu_tiles_ns") + term(j, "fill_drain_ns"),
                                   term(j, "hbm_ns"), term(j, "vector_ns")});
  CHECK(t == Approx(term(j, "launch_ns") + term(j, "pipeline_ns") + longest));
  CHECK(j["bound"] == "MXU");
}

TEST_CASE("tpusim kernel: an int8 matmul on TPU v5e streams its passes at the int8 rate") {
  const auto bf16 =
      kernel_json({"--op", "matmul", "--shape", "8192,8192,8192", "--preset", "tpu_v5e"});
  const auto int8 = kernel_json(
      {"--op", "matmul", "--shape", "8192,8192,8192", "--preset", "tpu_v5e", "--dtype", "int8"});
  const double rate = int8["config"]["hardware"]["mxu"]["int8_rate"];
  CHECK(rate == 2);  // 394 int8 TOPS against 197 bf16 TFLOP/s per chip (Cloud docs)
  CHECK(term(int8, "mxu_tiles_ns") == Approx(term(bf16, "mxu_tiles_ns") / rate));
  CHECK(int8["peak_tflops"].get<double>() == Approx(bf16["peak_tflops"].get<double>() * rate));
}

TEST_CASE("tpusim kernel: conv, elementwise, reduction and attention count their work") {
  // A 3x3 convolution of 256 channels: 2 x 9 x Cin x Cout FLOPs per output pixel.
  const auto conv = kernel_json({"--op", "conv", "--shape", "8,28,28,256,256,3"});
  CHECK(conv["flops"].get<double>() == Approx(2.0 * 9 * 256 * 256 * 8 * 28 * 28));
  // x + y: read two tensors, write one; a streaming op is bound by HBM.
  const auto add = kernel_json({"--op", "elementwise", "--shape", "4096,4096"});
  CHECK(add["bytes"].get<double>() == Approx(3.0 * 4096 * 4096 * 2));
  CHECK(add["bound"] == "HBM");
  CHECK(term(add, "pipeline_ns") == 0);
  // A sum over the last dimension writes one value per row.
  const auto sum = kernel_json({"--op", "reduction", "--shape", "4096,4096", "--dtype", "f32"});
  CHECK(sum["bytes"].get<double>() == Approx((4096.0 * 4096 + 4096) * 4));
  // Attention: Q K^T and P V, 2 x S^2 x D multiply-adds per head.
  const auto att = kernel_json({"--op", "attention", "--shape", "2,16,2048,128"});
  CHECK(att["flops"].get<double>() == Approx(4.0 * 2 * 16 * 2048 * 2048 * 128));
  CHECK(att["bytes"].get<double>() == Approx(4.0 * 2 * 16 * 2048 * 128 * 2));
}

TEST_CASE("bad kernel input is one error line naming the value with exit code 2") {
  check_bad({"kernel", "--op", "fft", "--shape", "4,4,4"}, "fft");
  check_bad({"kernel", "--op", "matmul", "--shape", "4,4"}, "--shape");
  check_bad({"kernel", "--op", "matmul", "--shape", "0,4,4"}, "'0'");
  check_bad({"kernel", "--op", "matmul", "--shape", "4,x,4"}, "'x'");
  check_bad({"kernel", "--op", "matmul", "--shape", "4,4,99999999999999"}, "99999999999999");
  check_bad({"kernel", "--op", "matmul", "--shape", "4,4,4", "--dtype", "fp16"}, "fp16");
  check_bad({"kernel", "--op", "matmul", "--shape", "4,4,4", "--dtype", "int8"},
            "hardware.mxu.int8_rate");
  check_bad({"kernel", "--op", "matmul", "--shape", "4,4,4", "--preset", "tpu_v9"}, "tpu_v9");
  check_bad({"kernel", "--op", "conv", "--shape", "1,8,8,8,8,100"}, "--shape");
  check_bad({"kernel", "--op", "elementwise", "--shape", "1048576,1048576,1048576"}, "too large");
  check_bad({"kernel", "--op", "matmul", "--shape", "2097152,1048576,1048576"}, "too large");
  check_bad({"kernel", "--op", "matmul", "--shape", "4,4,4", "--set", "hardware.mxu.dim=0"},
            "hardware.mxu.dim");
}
