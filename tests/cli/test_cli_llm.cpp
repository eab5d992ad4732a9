// Language-model reports end to end (docs/llm.md): model and hardware FLOPs utilisation against
// the MXU's efficiency on a compute-bound toy, tokens per second, communication by mesh axis.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cli/bad_input.hpp"
#include "tests/cli/run_tpusim.hpp"
#include "tests/cli/sweep_fixture.hpp"

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

json llm_json(std::vector<std::string> args, const std::vector<std::string>& extra = {}) {
  args.insert(args.end(), extra.begin(), extra.end());
  const TpusimResult r = run_tpusim(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}
}  // namespace

TEST_CASE("MFU of a compute-bound toy model equals the MXU efficiency, and HFU counts recompute") {
  const json none = llm_json(kToy);
  const double eff = none["config"]["hardware"]["calibration"]["mxu_efficiency"];
  CHECK(none["mfu"].get<double>() == Approx(eff).epsilon(2e-3));
  CHECK(none["hfu"].get<double>() == Approx(eff).epsilon(2e-3));

  // Full rematerialisation recomputes what the backward pass reads of each layer's forward: per
  // token 2 x (the layer's weights but the MLP's down projection, 4 d^2 + d F; only the residual
  // add reads its output) + 4 s d of attention. The model's FLOPs per token: 6N + 12 L s d.
  const json full = llm_json(kToy, {"--set", "workload.remat=full"});
  const double d = 1024, F = 4096, V = 8192, s = 512, L = 2;
  const double N = L * (4 * d * d + 2 * d * F) + V * d;
  const double model = 6 * N + 12 * L * s * d;
  const double recompute = L * (2 * (4 * d * d + d * F) + 4 * s * d);
  CHECK(full["hfu"].get<double>() == Approx(eff).epsilon(2e-3));
  CHECK(full["mfu"].get<double>() == Approx(eff * model / (model + recompute)).epsilon(2e-3));
  CHECK(full["tokens_per_step"].get<double>() == s);
  CHECK(full["tokens_per_s_per_chip"].get<double>() ==
        Approx(s / (full["step_time_ms"].get<double>() * 1e-3)));
}

TEST_CASE("HFU counts an int8 matmul's FLOPs whole, at the int8 rate's peak") {
  // Without remat the hardware runs the model's FLOPs, so HFU equals MFU; an int8 layer matmul
  // runs at int8_rate x the bf16 peak, and HFU (over the bf16 peak) must not cap it there.
  const json q =
      llm_json(kToy, {"--set", "hardware.mxu.int8_rate=2", "--set", "workload.quantization=int8"});
  CHECK(q["hfu"].get<double>() == Approx(q["mfu"].get<double>()).epsilon(1e-6));
  CHECK(q["mfu"].get<double>() > llm_json(kToy)["mfu"].get<double>());
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
  // A 12-way model axis on 8 x 6 chips finds its place as JAX's device mesh gives it (4 chips of
  // X and 3 of Y; the row-major mesh before refused it) and runs.
  const TpusimResult placed = run_tpusim(
      {"run", "configs/studies/decoder_1b_16.json", "--json", "--set", "topology=8x6", "--set",
       "parallelism.fsdp=1", "--set", "workload.heads=12", "--set", "workload.d_model=3072",
       "--set", "parallelism.model=12", "--set", "workload.d_ff=12288", "--set",
       "workload.layers=2", "--set", "workload.seq_len=256"});
  INFO(placed.err);
  REQUIRE(placed.exit_code == 0);
  CHECK(json::parse(placed.out)["collectives_by_axis"]["model"]["bytes_per_core"].get<double>() >
        0);
}

TEST_CASE("2D and sequence-axis layouts run - a degree that does not divide is one line, exit 2") {
  const std::vector<std::string> small = {"run",   "configs/studies/decoder_1b_16.json",
                                          "--set", "workload.layers=2",
                                          "--set", "workload.seq_len=256",
                                          "--set", "parallelism.fsdp=2",
                                          "--set", "parallelism.shard_activations=true",
                                          "--json"};
  const json j =
      llm_json(small, {"--set", "parallelism.model2=2", "--set", "parallelism.sequence=2"});
  for (const char* axis : {"model", "model2", "sequence", "fsdp"})
    CHECK(j["collectives_by_axis"][axis]["bytes_per_core"].get<double>() > 0);
  const json a2a = llm_json(small, {"--set", "parallelism.sequence=2", "--set",
                                    "parallelism.sequence_attention=all_to_all"});
  CHECK(a2a["collectives"]["all-to-all"]["count"].get<double>() > 0);
  // Flash attention over the sequence axis (MaxText's context parallelism) runs: K and V
  // gathered over it, dK and dV reduce-scattered, the model FLOPs those of any layout.
  const json flash =
      llm_json(small, {"--set", "parallelism.sequence=2", "--set", "workload.attention=flash"});
  const json flash_plain = llm_json(small, {"--set", "workload.attention=flash"});
  CHECK(flash["collectives_by_axis"]["sequence"]["bytes_per_core"].get<double>() > 0);
  CHECK(flash["mfu"].get<double>() * flash["step_time_ms"].get<double>() ==
        Approx(flash_plain["mfu"].get<double>() * flash_plain["step_time_ms"].get<double>()));
  // The model FLOPs of the step (MFU x step time x the same cores' peak) do not depend on the
  // layout.
  const json plain = llm_json(small);
  const double flops_2d = j["mfu"].get<double>() * j["step_time_ms"].get<double>();
  CHECK(flops_2d == Approx(plain["mfu"].get<double>() * plain["step_time_ms"].get<double>()));

  auto refused = [](std::vector<std::string> sets, const std::string& path) {
    std::vector<std::string> args = {"run", "configs/studies/decoder_1b_16.json"};
    for (const auto& s : sets) args.insert(args.end(), {"--set", s});
    const TpusimResult r = run_tpusim(args);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(path) != std::string::npos);
    CHECK(r.err_lines() == 1);
    return r.err;
  };
  // model2 without sharded activations.
  refused({"parallelism.fsdp=1", "parallelism.model2=2"}, "parallelism.model2");
  // d_model 2052 over model2 8 (4 heads of 513).
  CHECK(refused({"parallelism.fsdp=1", "parallelism.model2=8", "parallelism.shard_activations=true",
                 "workload.d_model=2052", "workload.heads=4"},
                "parallelism.model2")
            .find("workload.d_model") != std::string::npos);
  // 250 tokens over sequence 4.
  CHECK(refused({"parallelism.fsdp=1", "parallelism.sequence=4", "workload.seq_len=250"},
                "parallelism.sequence")
            .find("workload.seq_len") != std::string::npos);
  // 4 sequences over the 4 replicas of model 2 x model2 2 leave 1 per replica, which the
  // attention cannot split over model2.
  refused({"parallelism.fsdp=1", "parallelism.model2=2", "parallelism.shard_activations=true",
           "workload.global_batch=4"},
          "parallelism.model2");
  // 4 heads over model 2 leave 2 per model core, which all-to-all over sequence 8 cannot split.
  refused({"parallelism.fsdp=1", "parallelism.sequence=8", "workload.heads=4",
           "parallelism.sequence_attention=all_to_all"},
          "parallelism.sequence");
  // On 8 x 6 chips model2 6 outside model 2 (no sub-grid of the row-major mesh before) takes Y
  // whole, model 2 of X: it runs.
  const json on_y = llm_json(
      {"run", "configs/studies/decoder_1b_16.json", "--json", "--set", "workload.layers=2", "--set",
       "workload.seq_len=256", "--set", "parallelism.shard_activations=true", "--set",
       "topology=8x6", "--set", "parallelism.fsdp=1", "--set", "parallelism.model2=6", "--set",
       "workload.global_batch=24", "--set", "workload.d_model=3072"});
  CHECK(on_y["collectives_by_axis"]["model2"]["bytes_per_core"].get<double>() > 0);
}

// Serving end to end (docs/serving.md): the prefill and decode steps against their roofline
// bounds, tpusim serve's scheduler against closed forms built from `tpusim run` of the same step
// shapes, requests that can never be served, and bad input.
namespace {
using json = nlohmann::json;

json serve_json(const std::string& command, const std::vector<std::string>& extra) {
  std::vector<std::string> args = one_v5e_decoder(command, extra);
  args.push_back("--json");
  const TpusimResult r = run_tpusim(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

double serve_step_ms(const std::vector<std::string>& sets) {
  return serve_json("run", sets)["step_time_ms"];
}
}  // namespace

TEST_CASE("A decode step at batch 1 reads every weight: at least weight bytes / HBM bandwidth") {
  const json r = serve_json("run", {"--set", "workload.program=decode", "--set",
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
  const json r = serve_json("run", {"--set", "workload.program=prefill", "--set",
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
    return serve_json("run", a);
  };
  // 2 x layers x kv_heads x head_dim x bytes per token: 2 x 20 x 16 x 128 x 2 = 160 KiB.
  const double per_token = 2.0 * 20 * 16 * 128 * 2;
  CHECK(kv_bytes(with({})) == Approx(8 * 2048 * per_token));  // preallocated: seq_len each
  CHECK(kv_bytes(with({"--set", "workload.kv_cache=paged"})) == Approx(8 * 112 * per_token));
  CHECK(kv_bytes(with({"--set", "workload.kv_cache_dtype=int8"})) ==
        Approx(8 * 2048 * per_token / 2));
}

TEST_CASE("Grouped-query heads over a larger model axis: each core holds the head it needs") {
  // decoder_1b with 2 key/value heads for its 16 query heads. On a 2x2 slice with model 4 each
  // head is held by two cores, each core the one its 4 query heads share (not both, whole): per
  // core 8 sequences x 2048 tokens x 2 (K, V) x 20 layers x 1 head x 128 x 2 bytes, half the
  // one-chip cache. The replicated heads count once in the model's FLOPs (mfu x step x cores).
  auto at = [](const std::string& topology, const std::string& model, const std::string& program) {
    std::vector<std::string> args{"run", "configs/studies/decoder_1b_16.json", "--json"};
    for (const std::string& set : std::vector<std::string>{
             "preset=tpu_v5e", "topology=" + topology, "parallelism.model=" + model,
             "parallelism.fsdp=1", "hardware.async_collectives=false",
             "workload.program=" + program, "workload.global_batch=8", "workload.kv_heads=2"})
      args.insert(args.end(), {"--set", set});
    if (program == "decode") args.insert(args.end(), {"--set", "workload.kv_length=100"});
    if (program == "train") args.push_back("--allow-oom");  // 8 sequences on one chip
    const TpusimResult r = run_tpusim(args);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return json::parse(r.out);
  };
  auto model_flops = [](const json& r, double cores) {
    return r["mfu"].get<double>() * r["step_time_ms"].get<double>() * cores;
  };
  const json four = at("2x2", "4", "decode"), one = at("1x1", "1", "decode");
  const double kv = four["memory"]["bytes_by_class"]["kv_cache"].get<double>();
  CHECK(kv == Approx(8 * 2048 * 2.0 * 20 * 1 * 128 * 2));
  CHECK(one["memory"]["bytes_by_class"]["kv_cache"].get<double>() == Approx(2 * kv));
  CHECK(model_flops(four, 4) == Approx(model_flops(one, 1)).epsilon(1e-9));
  const json train4 = at("2x2", "4", "train"), train1 = at("1x1", "1", "train");
  CHECK(model_flops(train4, 4) == Approx(model_flops(train1, 1)).epsilon(1e-9));
}

TEST_CASE(
    "A burst of n equal requests on n slots: TTFT is one prefill step, TPOT one decode "
    "step") {
  // n = 4 prompts of 128 tokens packed into one prefill step of 512 tokens; then every sequence
  // decodes its second token at a cache of 128 tokens. 512 tokens, batch 4 and 128 cached
  // tokens lie on the step grid (model length 1025: cached-token points 0, 128, ..., 1024).
  const json s = serve_json(
      "serve", {"--set", "workload.seq_len=1025", "--set", "serving.requests.count=4", "--set",
                "serving.requests.arrival=burst", "--set", "serving.requests.input_tokens=128",
                "--set", "serving.requests.output_tokens=2", "--set", "serving.max_num_seqs=4",
                "--set", "serving.max_num_batched_tokens=512"});
  const double prefill =
      serve_step_ms({"--set", "workload.program=prefill", "--set", "workload.global_batch=1",
                     "--set", "workload.seq_len=512"});
  const double decode =
      serve_step_ms({"--set", "workload.program=decode", "--set", "workload.global_batch=4",
                     "--set", "workload.seq_len=1025", "--set", "workload.kv_length=128"});
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
      serve_json("serve", {"--set", "workload.seq_len=512", "--set", "serving.requests.count=20",
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
    check_bad(one_v5e_decoder("serve", extra), named);
  };
  // More tokens than the model has positions for.
  bad({"--set", "serving.max_model_len=4096"}, "serving.max_model_len");
  // A KV cache of 160 KiB per token cannot hold one sequence of 131072 tokens in 16 GB.
  bad({"--set", "workload.seq_len=131072"}, "serving.max_model_len");
  bad({"--set", "serving.requests.rate_per_s=0"}, "serving.requests.rate_per_s");
  bad({"--set", "serving.requests.trace=/nonexistent/trace.jsonl"}, "serving.requests.trace");
  // A decode step with no room for its token.
  check_bad(one_v5e_decoder(
                "run", {"--set", "workload.program=decode", "--set", "workload.kv_length=2048"}),
            "workload.kv_length");
}

TEST_CASE("mixture-of-experts input that cannot be built is one line naming the path, exit 2") {
  auto refused = [](std::vector<std::string> sets, const std::string& path) {
    std::vector<std::string> args = {"run",   "configs/studies/decoder_1b_16.json",
                                     "--set", "workload.layers=2",
                                     "--set", "workload.experts=8"};
    for (const auto& s : sets) args.insert(args.end(), {"--set", s});
    check_bad_input(run_tpusim(args), path);
  };
  refused({"workload.experts_per_token=9"}, "workload.experts_per_token");
  refused({"workload.moe_dispatch=capacity", "workload.capacity_factor=0"},
          "workload.capacity_factor");
  refused({"workload.capacity_factor=-1"}, "workload.capacity_factor");
  refused({"workload.expert_imbalance=0.5"}, "workload.expert_imbalance");
  // Experts that do not divide over the expert axis (16 devices, all on it: the study's fsdp 8
  // and model 2 would not divide the replicas first).
  refused({"parallelism.expert=16", "parallelism.fsdp=1", "parallelism.model=1"},
          "parallelism.expert: 16 does not divide the 8 experts");
}

// Pipeline parallelism through the command (docs/pipeline.md): the bubble each stage waited in
// the report, against the closed forms of the schedules; bad pipeline input is one error line
// naming its JSON path, exit 2.
namespace {

// A small decoder of 8 layers on 4 TPU v4 chips in megacore mode: 4 pipeline stages. Its
// iterations are short: 1F1B's bubble is about 23 us below GPipe's at any MXU efficiency (fixed
// costs placed differently), 2 % of the bubble at the 0.62 the closed forms below were written
// with, 3.4 % at v4's 0.83. The MXU efficiency is pinned at 0.62 so that the schedules' shared
// term dominates as the closed forms assume.
nlohmann::json pipeline_study(int microbatches, const std::string& schedule, int repeats) {
  return {
      {"preset", "tpu_v4_megacore"},
      {"hardware", {{"calibration", {{"mxu_efficiency", 0.62}}}}},
      {"topology", {{"name", "v4_2x2x1"}, {"dims", {2, 2, 1}}, {"wrap", {false, false, false}}}},
      {"workload",
       {{"model", "decoder_lm"},
        {"layers", 8},
        {"d_model", 512},
        {"heads", 8},
        {"d_ff", 2048},
        {"vocab", 4096},
        {"seq_len", 256},
        {"global_batch", 2 * microbatches},
        {"microbatches", microbatches}}},
      {"parallelism",
       {{"pipeline", 4}, {"pipeline_schedule", schedule}, {"pipeline_repeats", repeats}}}};
}

nlohmann::json run_json(const SweepScratch& s, const nlohmann::json& study) {
  const auto r = run_tpusim({"run", s.write("study.json", study), "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

double mean_wait(const nlohmann::json& j) { return j["pipeline"]["bubble_ms"].get<double>(); }

}  // namespace

TEST_CASE("the bubble: p - 1 iterations each way on every stage, v times smaller interleaved") {
  SweepScratch s;
  const int p = 4;
  const auto gpipe4 = run_json(s, pipeline_study(4, "gpipe", 1));
  const auto gpipe8 = run_json(s, pipeline_study(8, "gpipe", 1));
  const auto ofob8 = run_json(s, pipeline_study(8, "1f1b", 1));
  const auto inter8 = run_json(s, pipeline_study(8, "interleaved", 2));
  for (const auto* j : {&gpipe4, &gpipe8, &ofob8, &inter8}) {
    const auto& pl = (*j)["pipeline"];
    const int m = pl["microbatches"].get<int>(), v = pl["repeats"].get<int>();
    CHECK(pl["stages"].get<int>() == p);
    CHECK(pl["iterations"].get<int>() == m * v + p - 1);
    CHECK(pl["closed_form_bubble_fraction"].get<double>() ==
          Approx(static_cast<double>(p - 1) / (m * v + p - 1)));
    // Every stage waits p - 1 forward and p - 1 backward iterations of stage work (its layers
    // and its permute; the embedding is the first stage's work, the head the last's): with
    // equal stages the same wait on each, and the bubble the closed form's share of the stage
    // iterations, (p - 1) / (m v + p - 1). A unit's simulated time varies a few per cent with
    // its place in the schedule (what its permute overlaps), so each stage's wait within 5 %.
    for (const auto& w : pl["stage_wait_ms"])
      CHECK(w.get<double>() == Approx(pl["bubble_ms"].get<double>()).epsilon(0.05));
    CHECK(pl["bubble_fraction"].get<double>() ==
          Approx(static_cast<double>(p - 1) / (m * v + p - 1)).epsilon(0.02));
    CHECK(pl["bubble_share_of_step"].get<double>() ==
          Approx(pl["bubble_ms"].get<double>() / (*j)["step_time_ms"].get<double>()));
    // The stages' work: the layers' iterations less the wait, the embedding on the first
    // stage, the head and loss on the last.
    const auto busy = pl["stage_busy_ms"].get<std::vector<double>>();
    const double layers_busy =
        pl["stage_iterations_ms"].get<double>() - pl["bubble_ms"].get<double>();
    CHECK(busy[1] == Approx(layers_busy).epsilon(0.01));
    CHECK(busy[0] == Approx(layers_busy + pl["embedding_ms"].get<double>()).epsilon(0.01));
    CHECK(busy[p - 1] == Approx(layers_busy + pl["head_ms"].get<double>()).epsilon(0.01));
    CHECK(pl["embedding_ms"].get<double>() > 0);
    CHECK(pl["head_ms"].get<double>() > 0);
    // One microbatch's activations per permute: 2 sequences x 256 tokens x d_model 512, bf16.
    CHECK(pl["permute_bytes_per_core"].get<double>() == Approx(2.0 * 256 * 512 * 2));
  }
  // The bubble is (p - 1)(t_f + t_b): not a function of m; the same for GPipe and 1F1B; with
  // v = 2 chunks per stage each iteration is half a stage of compute.
  CHECK(mean_wait(gpipe8) == Approx(mean_wait(gpipe4)).epsilon(0.03));
  CHECK(mean_wait(ofob8) == Approx(mean_wait(gpipe8)).epsilon(0.03));
  // (Each interleaved unit is half a stage of compute but a whole permute, so its bubble is
  // above half GPipe's; its share of the stage iterations is the closed form's, checked above.)
  CHECK(mean_wait(inter8) < mean_wait(gpipe8) * 0.6);
  CHECK(mean_wait(inter8) > mean_wait(gpipe8) / 2);
  // (m + p - 1)(t_f + t_b) for both GPipe and 1F1B: the same step.
  CHECK(ofob8["step_time_ms"].get<double>() ==
        Approx(gpipe8["step_time_ms"].get<double>()).epsilon(0.05));
  // ... and the step grows by one iteration pair per microbatch: (m + p - 1) with p - 1 of them
  // the bubble, so 4 more microbatches add 4 / (p - 1) bubbles' worth of stage work and their
  // embedding and head.
  const double grow = gpipe8["step_time_ms"].get<double>() - gpipe4["step_time_ms"].get<double>();
  CHECK(grow >= 4.0 / (p - 1) * mean_wait(gpipe4) * 0.98);
  // Activations in flight: GPipe holds all 8 microbatches', 1F1B at most p = 4.
  CHECK(ofob8["memory"]["peak_bytes"].get<double>() < gpipe8["memory"]["peak_bytes"].get<double>());
}

TEST_CASE("bad pipeline input: one error line naming the path, exit 2") {
  SweepScratch s;
  const std::string study = s.write("study.json", pipeline_study(4, "gpipe", 1));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"parallelism.pipeline=3", "parallelism.pipeline: "},
      {"workload.layers=6", "parallelism.pipeline: 4: does not divide the 6 layers"},
      {"parallelism.pipeline_schedule=zero", "parallelism.pipeline_schedule: "},
      {"parallelism.pipeline_repeats=4", "parallelism.pipeline_repeats: 4"},
  };
  for (const auto& [set, prefix] : cases) {
    auto r = run_tpusim(with_sets({"validate", study}, {set}));
    INFO(set << "\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("tpusim: error: " + prefix, 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

// The pipeline across slices (parallelism.dcn_pipeline; docs/pipeline.md): the study above on S
// slices of 4 chips, its 4 stages p / S in each slice, data parallel only inside the slices.
nlohmann::json dcn_pipeline_study(int slices, int microbatches) {
  auto j = pipeline_study(microbatches, "gpipe", 1);
  j["topology"]["slices"] = slices;
  j["parallelism"]["slices"] = slices;
  j["parallelism"]["dcn_pipeline"] = slices;
  j["workload"]["global_batch"] = 4 * microbatches;
  return j;
}

TEST_CASE("pipeline across slices: only the stage-boundary permutes cross the DCN") {
  SweepScratch s;
  const int p = 4, m = 4;
  for (int slices : {2, 4}) {
    INFO("slices " << slices);
    const auto j = run_json(s, dcn_pipeline_study(slices, m));
    CHECK_THAT(j["layout"].get<std::string>(),
               Catch::Contains("dcn_pipeline=" + std::to_string(slices)));
    const auto& pl = j["pipeline"];
    CHECK(pl["stages"].get<int>() == p);
    CHECK(pl["iterations"].get<int>() == m + p - 1);
    // The slices run one pipeline on the one batch: the data replicas are those of a slice,
    // 4 cores / (p / S) stages, and a microbatch of a replica holds 4 m / replicas / m sequences.
    const int stages_in_slice = p / slices, replicas = 4 / stages_in_slice;
    CHECK(j["global_batch"].get<int>() == 4 * m);
    const double b = 4.0 / replicas * 256 * 512 * 2;  // bf16 activations of a microbatch
    CHECK(pl["permute_bytes_per_core"].get<double>() == Approx(b));
    // Each iteration, forward (activations) and backward (their gradients), the stage at the
    // end of each of the slice's replicas sends its microbatch's boundary bytes to the next
    // slice; the bubble iterations send as the others do (lockstep SPMD). Nothing else crosses
    // the DCN: no gradient all-reduce spans the slices.
    const double chips = 4, dcn_senders = replicas;
    CHECK(j["dcn"]["bytes_per_chip"].get<double>() ==
          Approx(2.0 * (m + p - 1) * b * dcn_senders / chips));
    CHECK(j["communication_dcn_ms"].get<double>() > 0);
  }
}

TEST_CASE("bad pipeline-across-slices input: one error line naming the path, exit 2") {
  SweepScratch s;
  const std::string study = s.write("study.json", dcn_pipeline_study(2, 4));
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"topology.slices=1", "parallelism.slices=1"},
       "parallelism.dcn_pipeline: 2 with parallelism.slices = 1"},
      {{"parallelism.dcn_pipeline=4"}, "parallelism.dcn_pipeline: 4 with parallelism.slices = 2"},
      {{"parallelism.pipeline=3"},
       "parallelism.pipeline: 3 stages over parallelism.dcn_pipeline = 2"},
  };
  for (const auto& [sets, prefix] : cases) {
    auto r = run_tpusim(with_sets({"validate", study}, sets));
    INFO(prefix << "\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("tpusim: error: " + prefix, 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("plan finds a pipelined layout when no layout without a pipeline fits the devices") {
  // 2 sequences of a decoder with 2 heads on 8 TPU v3 cores: without a pipeline at most
  // model 2 x 2 replicas = 4 cores take part, so every such layout is refused; plan's default
  // space adds the pipeline (docs/plan.md) and its winner pipelines the 8 layers.
  SweepScratch s;
  const nlohmann::json study{{"topology", "2x2"},
                             {"workload",
                              {{"model", "decoder_lm"},
                               {"layers", 8},
                               {"d_model", 512},
                               {"heads", 2},
                               {"d_ff", 2048},
                               {"vocab", 4096},
                               {"seq_len", 256},
                               {"global_batch", 2}}}};
  const auto r =
      run_tpusim({"plan", s.write("study.json", study), "--space", "workload.remat=full", "--space",
                  "workload.attention=dot_product", "--space", "workload.microbatches=2", "--space",
                  "parallelism.pipeline_schedule=1f1b", "--space", "parallelism.pipeline_repeats=1",
                  "--space", "parallelism.fsdp=1,2", "-j", "2", "--out", s.path("plan")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::ifstream in(s.path("plan") + "/plan.json");
  const auto plan = nlohmann::json::parse(in);
  REQUIRE(plan["counts"]["simulated"].get<int>() >= 1);
  for (const auto& [id, c] : plan["candidates"].items())
    CHECK(c["values"]["parallelism.pipeline"].get<int>() > 1);
  const auto& winner = plan["candidates"].at(plan["winner"]["id"].get<std::string>());
  CHECK(winner["values"]["parallelism.pipeline"].get<int>() > 1);
}
