// Serving end to end (docs/serving.md): the prefill and decode steps against their roofline
// bounds, tpusim serve's scheduler against closed forms built from `tpusim run` of the same step
// shapes, requests that can never be served, and bad input.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/cli/bad_input.hpp"
#include "tests/cli/run_tpusim.hpp"

namespace {
using json = nlohmann::json;

// The ~1.1 B decoder (20 layers, d_model 2048, d_ff 8192, GELU, vocabulary 32768, tied) on one
// TPU v5e chip.
const std::vector<std::string> kOneChip = {"configs/studies/decoder_1b_16.json",
                                           "--set",
                                           "preset=tpu_v5e",
                                           "--set",
                                           "topology=1x1",
                                           "--set",
                                           "parallelism.model=1",
                                           "--set",
                                           "parallelism.fsdp=1",
                                           "--set",
                                           "hardware.async_collectives=false"};

json run_json(const std::string& command, const std::vector<std::string>& extra) {
  std::vector<std::string> args{command};
  args.insert(args.end(), kOneChip.begin(), kOneChip.end());
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back("--json");
  const TpusimResult r = run_tpusim(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

double step_ms(const std::vector<std::string>& sets) {
  return run_json("run", sets)["step_time_ms"];
}
}  // namespace

TEST_CASE("A decode step at batch 1 reads every weight: at least weight bytes / HBM bandwidth") {
  const json r = run_json("run", {"--set", "workload.program=decode", "--set",
                                  "workload.global_batch=1", "--set", "workload.kv_length=128"});
  // The matrices alone: per layer Q, K, V, O (4 d^2) and the MLP's two (2 d F), the tied
  // embedding (V d), bf16.
  const double d = 2048, F = 8192, L = 20, V = 32768;
  const double weight_bytes = 2 * (L * (4 * d * d + 2 * d * F) + V * d);
  const double bw = r["config"]["hardware"]["hbm"]["bandwidth_GBps_per_core"].get<double>() * 1e9;
  const double bound_ms = weight_bytes / bw * 1e3;
  CHECK(r["step_time_ms"].get<double>() >= bound_ms);
  // What a real step pays beyond the bound (launches, HBM efficiency, the small ops) stays
  // within a factor of two of it at this size.
  CHECK(r["step_time_ms"].get<double>() <= 2 * bound_ms);
  CHECK(r["mfu"].get<double>() < 0.01);
}

TEST_CASE("A prefill step of a long prompt is compute-bound: MFU near the MXU's efficiency") {
  const json r = run_json("run", {"--set", "workload.program=prefill", "--set",
                                  "workload.global_batch=1", "--set", "workload.seq_len=4096"});
  const double eff = r["config"]["hardware"]["calibration"]["mxu_efficiency"];
  CHECK(r["mfu"].get<double>() > 0.7 * eff);
  CHECK(r["mfu"].get<double>() <= eff * 1.0001);
}

TEST_CASE("The KV cache is a resident buffer of its dtype and layout") {
  auto kv_bytes = [](const json& r) {
    return r["memory"]["bytes_by_class"]["kv_cache"].get<double>();
  };
  const std::vector<std::string> decode = {"--set", "workload.program=decode",
                                           "--set", "workload.global_batch=8",
                                           "--set", "workload.kv_length=100"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = decode;
    a.insert(a.end(), extra.begin(), extra.end());
    return run_json("run", a);
  };
  // 2 x layers x kv_heads x head_dim x bytes per token: 2 x 20 x 16 x 128 x 2 = 160 KiB.
  const double per_token = 2.0 * 20 * 16 * 128 * 2;
  CHECK(kv_bytes(with({})) == Approx(8 * 2048 * per_token));  // preallocated: seq_len each
  CHECK(kv_bytes(with({"--set", "workload.kv_cache=paged"})) == Approx(8 * 112 * per_token));
  CHECK(kv_bytes(with({"--set", "workload.kv_cache_dtype=int8"})) ==
        Approx(8 * 2048 * per_token / 2));
}

TEST_CASE(
    "A burst of n equal requests on n slots: TTFT is one prefill step, TPOT one decode "
    "step") {
  // n = 4 prompts of 128 tokens packed into one prefill step of 512 tokens; then every sequence
  // decodes its second token at a cache of 128 tokens. 512 tokens, batch 4 and 128 cached
  // tokens lie on the step grid (model length 1025: cached-token points 0, 128, ..., 1024).
  const json s = run_json(
      "serve", {"--set", "workload.seq_len=1025", "--set", "serving.requests.count=4", "--set",
                "serving.requests.arrival=burst", "--set", "serving.requests.input_tokens=128",
                "--set", "serving.requests.output_tokens=2", "--set", "serving.max_num_seqs=4",
                "--set", "serving.max_num_batched_tokens=512"});
  const double prefill = step_ms({"--set", "workload.program=prefill", "--set",
                                  "workload.global_batch=1", "--set", "workload.seq_len=512"});
  const double decode =
      step_ms({"--set", "workload.program=decode", "--set", "workload.global_batch=4", "--set",
               "workload.seq_len=1025", "--set", "workload.kv_length=128"});
  for (const char* p : {"mean", "p50", "p99"}) {
    CHECK(s["ttft_ms"][p].get<double>() == Approx(prefill).epsilon(1e-9));
    CHECK(s["tpot_ms"][p].get<double>() == Approx(decode).epsilon(1e-9));
  }
  CHECK(s["metrics"]["e2e_ms"]["max"].get<double>() == Approx(prefill + decode).epsilon(1e-9));
  CHECK(s["requests_per_s"].get<double>() == Approx(4 / ((prefill + decode) * 1e-3)));
  CHECK(s["metrics"]["occupancy"]["slots"]["max"].get<double>() == 4);
}

TEST_CASE("Requests longer than the model length are counted as never served, not dropped") {
  const json s =
      run_json("serve", {"--set", "workload.seq_len=512", "--set", "serving.requests.count=20",
                         "--set", "serving.requests.input_tokens=300", "--set",
                         "serving.requests.input_distribution=uniform", "--set",
                         "serving.requests.input_spread=250", "--set",
                         "serving.requests.output_tokens=50", "--set", "serving.max_num_seqs=8"});
  const auto& req = s["metrics"]["requests"];
  CHECK(req["count"].get<int>() == 20);
  CHECK(req["never_served"]["count"].get<int>() > 0);
  CHECK(req["served"].get<int>() + req["never_served"]["count"].get<int>() == 20);
  CHECK(req["never_served"]["reasons"]["longer than serving.max_model_len"].get<int>() ==
        req["never_served"]["count"].get<int>());
}

TEST_CASE("Bad serving input: one error line naming the path, exit 2") {
  auto bad = [](std::vector<std::string> extra, const std::string& named) {
    std::vector<std::string> args{"serve"};
    args.insert(args.end(), kOneChip.begin(), kOneChip.end());
    args.insert(args.end(), extra.begin(), extra.end());
    check_bad(args, named);
  };
  // More tokens than the model has positions for.
  bad({"--set", "serving.max_model_len=4096"}, "serving.max_model_len");
  // A KV cache of 160 KiB per token cannot hold one sequence of 131072 tokens in 16 GB.
  bad({"--set", "workload.seq_len=131072"}, "serving.max_model_len");
  bad({"--set", "serving.requests.rate_per_s=0"}, "serving.requests.rate_per_s");
  bad({"--set", "serving.requests.trace=/nonexistent/trace.jsonl"}, "serving.requests.trace");
  // A decode step with no room for its token.
  std::vector<std::string> run{"run"};
  run.insert(run.end(), kOneChip.begin(), kOneChip.end());
  for (const char* s : {"--set", "workload.program=decode", "--set", "workload.kv_length=2048"})
    run.push_back(s);
  check_bad(run, "workload.kv_length");
}
