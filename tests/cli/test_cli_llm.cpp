// Language-model reports end to end (docs/llm.md): model and hardware FLOPs utilisation against
// the MXU's efficiency on a compute-bound toy, tokens per second, communication by mesh axis.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/cli/run_tpusim.hpp"

namespace {
using json = nlohmann::json;

// One chip in megacore mode (one core, no collectives); every dimension a multiple of the
// 128 x 128 MXU tiles and of its 8 arrays; no fill and drain, no launch cost, a vector unit and
// HBM so fast that only the MXU takes time.
const std::vector<std::string> kToy = {"run",   "configs/studies/decoder_1b_16.json",
                                       "--set", "topology=1x1",
                                       "--set", "parallelism.model=1",
                                       "--set", "parallelism.fsdp=1",
                                       "--set", "workload.global_batch=1",
                                       "--set", "workload.layers=2",
                                       "--set", "workload.d_model=1024",
                                       "--set", "workload.heads=8",
                                       "--set", "workload.d_ff=4096",
                                       "--set", "workload.vocab=8192",
                                       "--set", "workload.seq_len=512",
                                       "--set", "hardware.calibration.op_overhead_ns=0",
                                       "--set", "hardware.mxu.fill_drain_cycles=0",
                                       "--set", "hardware.vpu.lanes=4096",
                                       "--set", "hardware.vpu.sublanes=1024",
                                       "--set", "hardware.hbm.bandwidth_GBps_per_core=1e6",
                                       "--set", "hardware.hbm.latency_ns=0",
                                       "--json"};

json run_json(std::vector<std::string> args, const std::vector<std::string>& extra = {}) {
  args.insert(args.end(), extra.begin(), extra.end());
  const TpusimResult r = run_tpusim(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}
}  // namespace

TEST_CASE("MFU of a compute-bound toy model equals the MXU efficiency, and HFU counts recompute") {
  const json none = run_json(kToy);
  const double eff = none["config"]["hardware"]["calibration"]["mxu_efficiency"];
  CHECK(none["mfu"].get<double>() == Approx(eff).epsilon(2e-3));
  CHECK(none["hfu"].get<double>() == Approx(eff).epsilon(2e-3));

  // Full rematerialisation recomputes each layer's forward: per token 2 x (the layer's weights
  // 4 d^2 + 2 d F) + 4 s d of attention. The model's FLOPs per token: 6N + 12 L s d.
  const json full = run_json(kToy, {"--set", "workload.remat=full"});
  const double d = 1024, F = 4096, V = 8192, s = 512, L = 2;
  const double N = L * (4 * d * d + 2 * d * F) + V * d;
  const double model = 6 * N + 12 * L * s * d;
  const double recompute = L * (2 * (4 * d * d + 2 * d * F) + 4 * s * d);
  CHECK(full["hfu"].get<double>() == Approx(eff).epsilon(2e-3));
  CHECK(full["mfu"].get<double>() == Approx(eff * model / (model + recompute)).epsilon(2e-3));
  CHECK(full["tokens_per_step"].get<double>() == s);
  CHECK(full["tokens_per_s_per_chip"].get<double>() ==
        Approx(s / (full["step_time_ms"].get<double>() * 1e-3)));
}

TEST_CASE("the communication of a sharded decoder is reported by mesh axis") {
  const TpusimResult r = run_tpusim(
      {"run", "configs/studies/decoder_1b_16.json", "--set", "workload.layers=2", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  REQUIRE(j.contains("collectives_by_axis"));
  CHECK(j["collectives_by_axis"].contains("fsdp"));
  CHECK(j["collectives_by_axis"].contains("model"));
  CHECK(j["collectives_by_axis"]["fsdp"]["bytes_per_core"].get<double>() > 0);
  const TpusimResult text =
      run_tpusim({"run", "configs/studies/decoder_1b_16.json", "--set", "workload.layers=2"});
  CHECK(text.out.find("model FLOPs utilisation") != std::string::npos);
  CHECK(text.out.find("communication by mesh axis") != std::string::npos);
}

TEST_CASE("a language-model layout that does not fit is one line naming the path, exit 2") {
  const TpusimResult r =
      run_tpusim({"run", "configs/studies/decoder_1b_16.json", "--set", "parallelism.fsdp=3"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("parallelism.fsdp") != std::string::npos);
  CHECK(r.err_lines() == 1);
  const TpusimResult off = run_tpusim(
      {"run", "configs/studies/decoder_1b_16.json", "--set", "topology=8x6", "--set",
       "parallelism.fsdp=1", "--set", "workload.heads=12", "--set", "workload.d_model=3072",
       "--set", "parallelism.model=12", "--set", "workload.d_ff=12288"});
  CHECK(off.exit_code == 2);
  CHECK(off.err.find("parallelism.model") != std::string::npos);
  CHECK(off.err.find("does not map onto the torus") != std::string::npos);
}
