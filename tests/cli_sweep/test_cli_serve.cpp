// tpusim serve beyond its core (docs/serving.md): int8 weights in the step programs against
// their roofline bounds, prefix caching against the prefill of the uncached tokens and its LRU
// eviction against closed forms, the serve columns of results.csv in a sweep and in --out,
// latency-against-load plots, diff of two serve reports, and their bad input.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cli/bad_input.hpp"
#include "tests/cli/run_tpusim.hpp"
#include "tests/cli/sweep_fixture.hpp"

namespace {
using json = nlohmann::json;

json tpusim_json(const std::string& command, const std::vector<std::string>& extra) {
  std::vector<std::string> args = one_v5e_decoder(command, extra);
  args.push_back("--json");
  const TpusimResult r = run_tpusim(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

std::vector<std::string> plus(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

const double kD = 2048, kF = 8192, kL = 20, kV = 32768;
// The layers' matrices (Q, K, V, O: 4 d^2; the MLP's two: 2 d F) and the tied embedding.
const double kLayerParams = kL * (4 * kD * kD + 2 * kD * kF), kEmbedParams = kV * kD;
}  // namespace

TEST_CASE("int8 weights: a batch-1 decode step reads them at one byte, at least bytes / HBM BW") {
  const std::vector<std::string> decode = {"--set", "workload.program=decode",
                                           "--set", "workload.global_batch=1",
                                           "--set", "workload.kv_length=128"};
  const json bf16 = tpusim_json("run", decode);
  const json int8 = tpusim_json("run", plus(decode, {"--set", "workload.quantization=int8"}));
  // The layers' weights in 8 bits; the embedding (and the logits that read it) stay bf16.
  const double weight_bytes = kLayerParams * 1 + kEmbedParams * 2;
  const double bw =
      int8["config"]["hardware"]["hbm"]["bandwidth_GBps_per_core"].get<double>() * 1e9;
  const double bound_ms = weight_bytes / bw * 1e3;
  const double t8 = int8["step_time_ms"].get<double>(), t16 = bf16["step_time_ms"].get<double>();
  CHECK(t8 >= bound_ms);
  CHECK(t8 <= 2 * bound_ms);
  // Half the layers' bytes read: the step takes well under the bf16 one's time, but not under
  // half of it (the embedding and the cache stay; the MXUs still load every weight tile).
  CHECK(t8 < 0.8 * t16);
  CHECK(t8 > 0.5 * t16);
  // The weights held: the layers' copies at one byte each, the embedding at two.
  const json& cls = int8["memory"]["bytes_by_class"];
  const json& cls16 = bf16["memory"]["bytes_by_class"];
  const std::string w = cls.contains("weight_copies") ? "weight_copies" : "weights";
  REQUIRE(cls.contains(w));
  CHECK(cls16[w].get<double>() - cls[w].get<double>() ==
        Approx(kLayerParams).epsilon(0.01));  // biases: a few ten-thousandths more
}

TEST_CASE("int8 weights: a long prefill runs the layers' products at the int8 MXU rate") {
  const std::vector<std::string> prefill = {"--set", "workload.program=prefill",
                                            "--set", "workload.global_batch=1",
                                            "--set", "workload.seq_len=4096"};
  const json bf16 = tpusim_json("run", prefill);
  const json int8 = tpusim_json("run", plus(prefill, {"--set", "workload.quantization=int8"}));
  const double t8 = int8["step_time_ms"].get<double>(), t16 = bf16["step_time_ms"].get<double>();
  // Compute-bound: the layers' 2 x tokens x params FLOPs at twice the rate, the attention and
  // the last token's logits at the bf16 rate. The bound: the layers' FLOPs at the int8 peak
  // (MXUs x dim^2 multiply-adds a cycle, twice that in int8).
  const json& hw = int8["config"]["hardware"];
  const double dim = hw["mxu"]["dim"].get<double>();
  const double peak =
      hw["mxu"]["count"].get<double>() * dim * dim * 2 * hw["clock_MHz"].get<double>() * 1e6;
  CHECK(hw["mxu"]["int8_rate"].get<double>() == 2);
  CHECK(t8 * 1e-3 >= 2 * 4096 * kLayerParams / (2 * peak));
  CHECK(t8 < 0.75 * t16);
  CHECK(t8 > 0.5 * t16);
}

TEST_CASE("Prefix caching: TTFT with a cache hit is the prefill of the uncached tokens") {
  SweepScratch s;
  // Two requests of a 512-token shared prefix and 128 more tokens, the second after the first
  // is done. Model length 1025 puts 512 cached tokens on the step grid (0, 128, ..., 1024) and
  // 128 new tokens on the token grid (16 x 2^i).
  {
    std::ofstream t(s.path("trace.jsonl"));
    t << R"({"input_tokens": 640, "output_tokens": 2, "prefix_id": 7, "prefix_tokens": 512, "arrival_s": 0})"
      << "\n"
      << R"({"input_tokens": 640, "output_tokens": 2, "prefix_id": 7, "prefix_tokens": 512, "arrival_s": 10})"
      << "\n";
  }
  const std::vector<std::string> serve = {
      "--set", "workload.seq_len=1025",
      "--set", "workload.kv_cache=paged",
      "--set", "serving.requests.trace=" + s.path("trace.jsonl"),
      "--set", "serving.requests.arrival=timestamps",
      "--set", "serving.max_num_seqs=4"};
  const json on = tpusim_json(
      "serve", plus(serve, {"--set", "serving.prefix_caching=true", "--out", s.path("on")}));
  const json off = tpusim_json("serve", serve);
  const double hit_prefill = tpusim_json(
      "run", {"--set", "workload.program=prefill", "--set", "workload.global_batch=1", "--set",
              "workload.seq_len=640", "--set", "workload.kv_length=512"})["step_time_ms"];
  // requests.csv: the second request's TTFT.
  const auto rows = tpusim::sweep::read_csv(s.path("on/requests.csv"));
  REQUIRE(rows.rows.size() == 2);
  CHECK(*rows.number(1, "ttft_ms") == Approx(hit_prefill).epsilon(1e-5));  // 6 digits in CSV
  CHECK(*rows.number(0, "ttft_ms") > hit_prefill);
  const json& pc = on["metrics"]["prefix_cache"];
  CHECK(pc["lookups"] == 2);
  CHECK(pc["hits"] == 1);
  CHECK(pc["hit_rate"].get<double>() == Approx(0.5));
  CHECK(pc["cached_tokens"].get<double>() == 512);
  CHECK(pc["token_hit_rate"].get<double>() == Approx(512.0 / 1280));
  CHECK(off["metrics"]["prefix_cache"]["hits"] == 0);
  // Without the cache both requests pay the whole prompt: the same TTFT.
  CHECK(off["ttft_ms"]["max"].get<double>() ==
        Approx(off["ttft_ms"]["p50"].get<double>()).epsilon(1e-12));
  CHECK(on["ttft_ms"]["p50"].get<double>() < off["ttft_ms"]["p50"].get<double>());
  // --out writes the serve's row of results.csv with the serve columns.
  const auto res = tpusim::sweep::read_csv(s.path("on/results.csv"));
  REQUIRE(res.rows.size() == 1);
  CHECK(*res.number(0, "ttft_ms_p99") == Approx(on["ttft_ms"]["p99"].get<double>()));
  CHECK(*res.number(0, "requests_per_s") == Approx(on["requests_per_s"].get<double>()));
  CHECK(*res.number(0, "prefix_cache_hit_rate") == Approx(0.5));
}

TEST_CASE("Prefix caching: a shared prefix's KV blocks are held once") {
  SweepScratch s;
  // The first request decodes 300 tokens; the second arrives while it does (its prefill takes
  // about 10 ms, its decode steps a few ms each). Paged by 16: the first holds 944 tokens, the
  // second 656; with the cache, the 512 of the prefix once: 512 + 432 + 144 = 1088.
  {
    std::ofstream t(s.path("trace.jsonl"));
    t << R"({"input_tokens": 640, "output_tokens": 300, "prefix_id": 0, "prefix_tokens": 512, "arrival_s": 0})"
      << "\n"
      << R"({"input_tokens": 640, "output_tokens": 2, "prefix_id": 0, "prefix_tokens": 512, "arrival_s": 0.1})"
      << "\n";
  }
  const std::vector<std::string> serve = {
      "--set", "workload.seq_len=1025",
      "--set", "workload.kv_cache=paged",
      "--set", "serving.requests.trace=" + s.path("trace.jsonl"),
      "--set", "serving.requests.arrival=timestamps",
      "--set", "serving.max_num_seqs=4"};
  const json on = tpusim_json("serve", plus(serve, {"--set", "serving.prefix_caching=true"}));
  const json off = tpusim_json("serve", serve);
  REQUIRE(on["metrics"]["prefix_cache"]["hits"] == 1);
  CHECK(on["metrics"]["occupancy"]["kv_cache"]["max_tokens"].get<double>() == 1088);
  CHECK(off["metrics"]["occupancy"]["kv_cache"]["max_tokens"].get<double>() == 944 + 656);
}

TEST_CASE("Prefix caching: LRU eviction on a cache of one prefix, two prefixes alternating") {
  SweepScratch s;
  // Requests of 300 prompt tokens (256 of them a shared prefix: 16 blocks of 16) and 4 output
  // tokens, 10 s apart (each done before the next arrives). A request that misses reserves
  // 304 tokens (19 blocks), one that hits 304 - 256 = 48 (3 blocks). The model length is 304.
  auto trace = [&](const std::string& name, const std::vector<int>& prefixes) {
    std::ofstream t(s.path(name));
    for (std::size_t i = 0; i < prefixes.size(); ++i)
      t << json{{"input_tokens", 300},
                {"output_tokens", 4},
                {"prefix_id", prefixes[i]},
                {"prefix_tokens", 256},
                {"arrival_s", 10.0 * static_cast<double>(i)}}
               .dump()
        << "\n";
    return s.path(name);
  };
  const std::string two = trace("two.jsonl", {0, 1, 0, 1, 0, 1, 0, 1});
  const std::string three = trace("three.jsonl", {0, 1, 2, 0, 1, 2, 0, 1, 2});
  auto serve = [&](const std::string& t, int blocks) {
    return tpusim_json(
        "serve",
        {"--set", "workload.kv_cache=paged", "--set", "serving.prefix_caching=true", "--set",
         "serving.max_model_len=304", "--set", "serving.requests.count=0", "--set",
         "serving.requests.arrival=timestamps", "--set", "serving.requests.trace=" + t, "--set",
         "serving.kv_cache_blocks=" + std::to_string(blocks)})["metrics"];
  };
  // 19 blocks: a finished request's prefix (16) stays cached, but the next request with the
  // other prefix misses and needs 19 blocks, 16 more than are free: the cached prefix is evicted
  // whole. Every request misses; each after the first evicts 16 blocks.
  const json one = serve(two, 19);
  CHECK(one["prefix_cache"]["lookups"] == 8);
  CHECK(one["prefix_cache"]["hits"] == 0);
  CHECK(one["prefix_cache"]["hit_rate"].get<double>() == 0);
  CHECK(one["prefix_cache"]["evicted_blocks"] == 7 * 16);
  CHECK(one["prefix_cache"]["evicted_tokens"] == 7 * 16 * 16);
  CHECK(one["occupancy"]["kv_cache"]["capacity_tokens"].get<double>() == 19 * 16);
  // 35 blocks hold both prefixes and a request's 3 others: the first two miss, the rest hit,
  // nothing is evicted.
  const json both = serve(two, 35);
  CHECK(both["prefix_cache"]["hits"] == 6);
  CHECK(both["prefix_cache"]["hit_rate"].get<double>() == Approx(6.0 / 8));
  CHECK(both["prefix_cache"]["evicted_blocks"] == 0);
  // Three prefixes in turn on the cache of two: least recently used is the one needed next,
  // so LRU evicts it every time (from the third request on) and every request misses.
  const json cycle = serve(three, 35);
  CHECK(cycle["prefix_cache"]["hits"] == 0);
  CHECK(cycle["prefix_cache"]["evicted_blocks"] == 7 * 16);
  // A cache of fewer blocks than one sequence of the model length is refused.
  check_bad_input(run_tpusim(one_v5e_decoder("serve", {"--set", "workload.kv_cache=paged", "--set",
                                                       "serving.max_model_len=304", "--set",
                                                       "serving.kv_cache_blocks=18"})),
                  "serving.kv_cache_blocks");
}

TEST_CASE("Drawn requests share serving.requests.prefixes prefixes round robin") {
  const json r = tpusim_json("serve", {"--set", "workload.seq_len=1025",
                                       "--set", "workload.layers=2",
                                       "--set", "workload.kv_cache=paged",
                                       "--set", "serving.prefix_caching=true",
                                       "--set", "serving.requests.count=40",
                                       "--set", "serving.requests.rate_per_s=4",
                                       "--set", "serving.requests.input_tokens=300",
                                       "--set", "serving.requests.output_tokens=8",
                                       "--set", "serving.requests.prefix_tokens=200",
                                       "--set", "serving.requests.prefixes=4",
                                       "--set", "serving.max_num_seqs=8"});
  const json& pc = r["metrics"]["prefix_cache"];
  // Arrivals 0.25 s apart on average, each served in tens of ms: each of the 4 prefixes misses
  // once, then hits; the cached part is the prefix's whole 16-token blocks, 192 tokens.
  CHECK(pc["lookups"] == 40);
  CHECK(pc["hits"] == 36);
  CHECK(pc["cached_tokens"].get<double>() == 36 * 192);
  CHECK(pc["token_hit_rate"].get<double>() == Approx(36.0 * 192 / (40 * 300)));
}

TEST_CASE("Bad prefix-caching input: one error line naming the path, exit 2") {
  check_bad_input(run_tpusim(one_v5e_decoder("serve", {"--set", "serving.prefix_caching=true"})),
                  "serving.prefix_caching");
  SweepScratch s;
  std::ofstream(s.path("t.jsonl"))
      << R"({"input_tokens": 100, "output_tokens": 2, "prefix_id": 1, "prefix_tokens": 200})"
      << "\n";
  check_bad_input(
      run_tpusim(one_v5e_decoder(
          "serve", {"--set", "workload.kv_cache=paged", "--set", "serving.prefix_caching=true",
                    "--set", "serving.requests.trace=" + s.path("t.jsonl")})),
      "serving.requests.trace");
}

TEST_CASE("A serve sweep over the request rate: serve columns in results.csv, latency plots") {
  SweepScratch s;
  json base = json::parse(
      slurp(std::string(TPUSIM_SOURCE_DIR) + "/configs/studies/serve_llama3_8b_chunked.json"));
  base["workload"]["layers"] = 2;
  base["serving"]["requests"]["count"] = 60;
  const json sweep = {{"command", "serve"},
                      {"base", base},
                      {"axes", {{{"path", "serving.requests.rate_per_s"}, {"values", {2, 20}}}}}};
  auto r = run_tpusim({"sweep", s.write("rate.json", sweep), "-j", "2", "--out", s.path("rate")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto t = results_of(s.path("rate"));
  REQUIRE(t.rows.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(t.cell(i, "status") == "ok");
    const json rep = point_report(s.path("rate"), t.cell(i, "id"));
    CHECK(*t.number(i, "ttft_ms_p99") == Approx(rep["ttft_ms"]["p99"].get<double>()));
    CHECK(*t.number(i, "tpot_ms_p50") == Approx(rep["tpot_ms"]["p50"].get<double>()));
    CHECK(*t.number(i, "requests_per_s") == Approx(rep["requests_per_s"].get<double>()));
    CHECK(*t.number(i, "goodput_requests_per_s") ==
          Approx(rep["metrics"]["goodput"]["requests_per_s"].get<double>()));
    CHECK(*t.number(i, "output_tokens_per_s") ==
          Approx(rep["metrics"]["output_tokens_per_s"].get<double>()));
  }
  CHECK(t.column("step_time_ms") < 0);
  // More load, more queueing: the p99 TTFT rises with the rate.
  CHECK(*t.number(1, "ttft_ms_p99") > *t.number(0, "ttft_ms_p99"));

  auto p =
      run_tpusim({"plot", "--dpi", "96", s.path("rate/results.csv"), "--out", s.path("plots")});
  INFO(p.err);
  REQUIRE(p.exit_code == 0);
  const json m = json::parse(slurp(s.path("plots/charts.json")));
  CHECK(m["x"] == "serving.requests.rate_per_s");
  for (const char* chart : {"ttft_p99", "tpot_p99", "requests_per_s", "goodput"}) {
    const json c = chart_named(m, chart);
    REQUIRE_FALSE(c.is_null());
    REQUIRE(c["series"].size() == 1);
    CHECK(c["series"][0]["x"][0].get<double>() == 2);
    CHECK(c["series"][0]["x"][1].get<double>() == 20);
    CHECK(std::filesystem::exists(s.path(std::string("plots/") + chart + ".png")));
  }
  CHECK(chart_named(m, "ttft_p99")["series"][0]["y"][1].get<double>() ==
        Approx(*t.number(1, "ttft_ms_p99")));
}

TEST_CASE("diff of two serve reports: the latency percentiles side by side") {
  SweepScratch s;
  const std::vector<std::string> small = {"--set", "workload.layers=2",
                                          "--set", "serving.requests.count=40",
                                          "--set", "serving.requests.input_tokens=256",
                                          "--set", "serving.requests.output_tokens=16"};
  auto a = run_tpusim(one_v5e_decoder("serve", plus(small, {"--json"})));
  auto b = run_tpusim(
      one_v5e_decoder("serve", plus(small, {"--set", "serving.requests.rate_per_s=50", "--json"})));
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  std::ofstream(s.path("a.json")) << a.out;
  std::ofstream(s.path("b.json")) << b.out;
  const json ja = json::parse(a.out), jb = json::parse(b.out);
  auto d = run_tpusim({"diff", s.path("a.json"), s.path("b.json"), "--json"});
  INFO(d.err);
  REQUIRE(d.exit_code == 0);
  const json j = json::parse(d.out);
  bool found = false;
  for (const auto& n : j["numbers"]) {
    CHECK(n["where"] != "simulate_wall_s");  // a wall-clock time, not compared
    if (n["where"] == "ttft_ms.p99") {
      found = true;
      CHECK(n["a"].get<double>() == Approx(ja["ttft_ms"]["p99"].get<double>()));
      CHECK(n["b"].get<double>() == Approx(jb["ttft_ms"]["p99"].get<double>()));
    }
  }
  CHECK(found);
  REQUIRE(j["inputs"].size() == 1);
  CHECK(j["inputs"][0]["where"] == "serving.requests.rate_per_s");
  auto same = run_tpusim({"diff", s.path("a.json"), s.path("a.json"), "--tolerance", "0"});
  CHECK(same.exit_code == 0);
}
