// Every declared parameter has an effect: changed in a study where it applies, some output of the
// report changes (or the run refuses the value, naming it). A parameter that nothing reads would
// let a user believe a what-if ran that did not. Parameters that only name things are declared as
// labels (ParamSpec::label) and skipped.
//
// The parameters come from `tpusim params --json`, so a parameter added anywhere is checked
// without editing this test. Each is tried in the studies of kStudies where it applies (its
// `when` condition holds in the study's resolved config) until one shows an effect; a parameter
// without effect in all of them fails the test, which names it. A parameter that acts only
// together with others (packet size at the packet level) gets a study that sets those.
#include <catch2/catch.hpp>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "tests/cli/run_tpusim.hpp"

namespace {
using json = nlohmann::json;

/// Commands with a JSON report that embeds the resolved config ("config"): small studies, one
/// per model, on small slices so that each run takes a fraction of a second, and the settings
/// in which the parameters that act together with others are active.
const std::vector<std::vector<std::string>> kStudies = {
    {"run", "configs/studies/bert_large_16.json", "--set", "topology=2x2", "--set",
     "workload.global_batch=8"},
    {"run", "configs/studies/resnet50_16.json", "--set", "topology=2x2", "--set",
     "workload.global_batch=16"},
    {"run", "configs/studies/ssd_64.json", "--set", "topology=2x2", "--set",
     "workload.global_batch=16", "--set", "parallelism.bn_group_cores=2"},
    {"run", "configs/studies/maskrcnn_16.json", "--set", "topology=2x2", "--set",
     "workload.global_batch=8"},
    {"run", "configs/studies/transformer_big_256.json", "--set", "topology=2x2", "--set",
     "workload.global_batch=16"},
    // The decoder-only language model, sharded over model x fsdp (megacore v4, 16 chips).
    {"run", "configs/studies/decoder_1b_16.json", "--set", "workload.layers=2", "--set",
     "workload.seq_len=256"},
    // Flash attention's block acts only with workload.attention = flash.
    {"run", "configs/studies/decoder_1b_16.json", "--set", "workload.layers=2", "--set",
     "workload.seq_len=1024", "--set", "workload.attention=flash"},
    // The attention's resharding acts only with a sequence axis.
    {"run", "configs/studies/decoder_1b_16.json", "--set", "workload.layers=2", "--set",
     "workload.seq_len=256", "--set", "parallelism.fsdp=4", "--set", "parallelism.sequence=2"},
    // Mixture-of-experts layers (capacity dispatch, where the capacity factor and the routing
    // skew act without an expert axis; a dense first layer, a shared expert) and latent attention.
    {"run", "configs/studies/decoder_1b_16.json", "--set", "workload.layers=2", "--set",
     "workload.seq_len=256", "--set", "workload.experts=4", "--set", "workload.experts_per_token=2",
     "--set", "workload.moe_dispatch=capacity", "--set", "workload.first_dense_layers=1", "--set",
     "workload.shared_experts=1"},
    {"run", "configs/studies/decoder_1b_16.json", "--set", "workload.layers=2", "--set",
     "workload.seq_len=256", "--set", "workload.attention_type=mla", "--set",
     "workload.positions=rotary"},
    // The pipeline's schedule and repeats act only with pipeline stages (docs/pipeline.md).
    {"run", "configs/studies/decoder_1b_16.json", "--set", "workload.layers=4", "--set",
     "workload.seq_len=256", "--set", "parallelism.fsdp=1", "--set", "parallelism.pipeline=2",
     "--set", "workload.microbatches=4"},
    // The SPMD copies the compiler inserts exist only under spatial partitioning.
    {"run", "configs/studies/ssd_64.json", "--set", "topology=2x2", "--set",
     "workload.global_batch=4", "--set", "parallelism.spatial=2", "--set",
     "parallelism.bn_group_cores=2"},
    // Per-chip slowdowns act only together: a slow chip and a factor other than 1.
    {"run", "configs/studies/bert_large_16.json", "--set", "topology=2x2", "--set",
     "workload.global_batch=8", "--set", "hardware.slow_chips=[1]", "--set",
     "hardware.slow_chip_factor=2"},
    // The MXUs' int8 and fp8 rates act in tpusim kernel only, on a kernel of that dtype.
    {"kernel", "--op", "matmul", "--shape", "1024,1024,1024", "--dtype", "int8", "--set",
     "hardware.mxu.int8_rate=2"},
    {"kernel", "--op", "matmul", "--shape", "1024,1024,1024", "--dtype", "fp8", "--set",
     "hardware.mxu.fp8_rate=2"},
    // Packet size acts at the packet level only.
    {"run", "configs/studies/bert_large_16.json", "--set", "topology=2x2", "--set",
     "workload.global_batch=8", "--set", "network.fidelity=packet"},
    // Ring steps sent separately differ from coalesced ones on a single ring.
    {"run", "configs/studies/bert_large_16.json", "--set", "topology=4x2:wrap=0,0", "--set",
     "workload.global_batch=16", "--set", "collectives.algorithm=ring"},
    // The hosts and their input pipelines act in tpusim train only (its report gives their CPU
    // use): an image pipeline and a detection one, with anchor matching.
    {"train", "configs/studies/resnet50_16.json", "--set", "topology=2x2", "--set",
     "workload.global_batch=16", "--set", "train.dataset_examples=64", "--set",
     "train.target_epochs=1", "--set", "train.eval_every_epochs=1", "--set",
     "train.eval_examples=32"},
    {"train", "configs/studies/ssd_64.json", "--set", "topology=2x2", "--set",
     "workload.global_batch=16", "--set", "parallelism.bn_group_cores=2", "--set",
     "train.target_steps=4", "--set", "train.eval_every_steps=4", "--set",
     "train.eval_examples=32"},
    // The host-side evaluation metrics act in tpusim train only: COCO mAP of boxes and masks,
    // BLEU (a short decode keeps the beam search cheap to simulate).
    {"train", "configs/studies/maskrcnn_16.json", "--set", "topology=2x2", "--set",
     "workload.global_batch=8", "--set", "train.target_steps=4", "--set",
     "train.eval_every_steps=4", "--set", "train.eval_examples=32"},
    {"train", "configs/studies/transformer_big_256.json", "--set", "topology=2x2", "--set",
     "workload.global_batch=16", "--set", "workload.decode_length=4", "--set",
     "train.target_steps=4", "--set", "train.eval_every_steps=4", "--set",
     "train.eval_examples=32"},
    // Multislice: two 2x2 slices joined by the data-center network (dcn.*).
    {"run", "configs/studies/bert_large_16.json", "--set", "topology=2x2", "--set",
     "topology.slices=2", "--set", "parallelism.slices=2", "--set", "workload.global_batch=16",
     "--set", "parallelism.weight_update_sharding=false"},
    // Serving steps (docs/serving.md): a decode step of sequences whose paged KV cache holds 100
    // tokens (the pages round them up).
    {"run", "configs/studies/decoder_1b_16.json", "--set", "workload.layers=2", "--set",
     "workload.seq_len=256", "--set", "workload.program=decode", "--set", "workload.kv_length=100",
     "--set", "workload.kv_cache=paged"},
    // tpusim serve: lengths drawn from distributions with a spread, Poisson arrivals, limits
    // that some requests miss; and the disaggregated scheduler (kv_transfer).
    {"serve", "configs/studies/decoder_1b_16.json",
     "--set", "topology=1x1",
     "--set", "parallelism.model=1",
     "--set", "parallelism.fsdp=1",
     "--set", "workload.layers=2",
     "--set", "workload.seq_len=512",
     "--set", "serving.requests.count=24",
     "--set", "serving.requests.rate_per_s=40",
     "--set", "serving.requests.input_distribution=uniform",
     "--set", "serving.requests.input_tokens=100",
     "--set", "serving.requests.input_spread=60",
     "--set", "serving.requests.output_distribution=normal",
     "--set", "serving.requests.output_tokens=20",
     "--set", "serving.requests.output_spread=8",
     "--set", "serving.max_num_seqs=8",
     "--set", "serving.max_num_batched_tokens=256",
     "--set", "serving.limits.ttft_ms=1",
     "--set", "serving.limits.tpot_ms=0.5"},
    {"serve", "configs/studies/decoder_1b_16.json",
     "--set", "topology=1x1",
     "--set", "parallelism.model=1",
     "--set", "parallelism.fsdp=1",
     "--set", "workload.layers=2",
     "--set", "workload.seq_len=512",
     "--set", "serving.requests.count=8",
     "--set", "serving.scheduler=disaggregated",
     "--set", "serving.max_num_seqs=4",
     "--set", "serving.requests.input_tokens=100",
     "--set", "serving.requests.output_tokens=20"},
    // Chunks pipeline over multi-hop routes, which an all-to-all over a 4x4 torus has.
    {"collective", "--op", "all-to-all", "--bytes", "64MiB", "--topology", "4x4"},
    // auto's resolution acts off the message level where one collective's routes alone would
    // set the symmetric domain: BERT 4096's 1.19 KiB all-reduce (docs/network.md).
    {"run", "configs/studies/bert_large_4096.json", "--set", "network.fidelity=flow"},
};

/// Parameters whose effect another issue's branch gives them. Each entry must still be without
/// effect here (the test fails once it has one, so the list cannot go stale).
const std::set<std::string> kAwaitingEffect = {};

/// Values of free-form string parameters (no choices) to try: a link name valid on the 2x2
/// slices of kStudies (names as the reports give them).
const std::map<std::string, std::vector<json>> kFreeFormValues = {
    {"network.degraded_links", {"multipod.chip(0,0).ici.x+=0.25"}},
    {"network.failed_links", {"multipod.chip(0,0).ici.x+"}},
    {"serving.requests.trace", {"tests/data/serve_trace.jsonl"}},
};

/// The report without what may differ between identical runs or only echoes the input.
json outputs(const std::string& report_text) {
  json r = json::parse(report_text);
  for (const char* k : {"wall_s", "elaboration_s", "simulate_wall_s", "config", "study"})
    r.erase(k);
  return r;
}

json run_report(const std::vector<std::string>& study, const std::vector<std::string>& extra,
                TpusimResult* result = nullptr) {
  std::vector<std::string> args = study;
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back("--json");
  TpusimResult r = run_tpusim(args);
  if (result) *result = r;
  return r.exit_code == 0 ? outputs(r.out) : json();
}

/// Values to try instead of `current`, in order, within the declared range.
std::vector<json> other_values(const json& spec, const json& current) {
  const std::string type = spec["type"];
  const double lo = spec.value("min", -1e300), hi = spec.value("max", 1e300);
  std::vector<json> out;
  auto number = [&](double v, bool integer) {
    std::vector<double> c;
    if (v == 0)
      c = {1, hi};
    else
      c = {v * 2, v / 2, (lo + hi) / 2, hi, lo};
    for (double x : c) {
      if (integer) x = std::floor(x);
      if (x >= lo && x <= hi && x != v)
        out.push_back(integer ? json(static_cast<long long>(x)) : json(x));
    }
  };
  if (type == "integer") number(current.get<double>(), true);
  if (type == "number") number(current.get<double>(), false);
  if (type == "boolean") out.push_back(!current.get<bool>());
  if (type == "string" && spec.contains("choices"))
    for (const auto& c : spec["choices"])
      if (c != current) out.push_back(c);
  if (type == "string" && !spec.contains("choices"))
    if (const auto it = kFreeFormValues.find(spec["path"]); it != kFreeFormValues.end())
      for (const auto& v : it->second)
        if (v != current) out.push_back(v);
  if (type == "list of integers" || type == "list of numbers") {
    json l = current;
    if (l.empty()) {
      out.push_back(json::array({static_cast<long long>(std::max(0.0, lo))}));
    } else {
      out.push_back(json::array());
      l[0] = l[0].get<double>() * 2 <= hi ? json(l[0].get<long long>() * 2 + 1) : json(lo);
      out.push_back(l);
    }
  }
  if (type == "list of booleans" && !current.empty()) {
    json l = current;
    l[0] = !l[0].get<bool>();
    out.push_back(l);
    json all = current;
    for (auto& b : all) b = !b.get<bool>();
    out.push_back(all);
  }
  return out;
}

const json* at_path(const json& doc, const std::string& path) {
  const json* cur = &doc;
  std::size_t start = 0;
  for (;;) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (!cur->is_object() || !cur->contains(key)) return nullptr;
    cur = &(*cur)[key];
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}
}  // namespace

TEST_CASE("every declared parameter changes some output of some study, or is a label") {
  const auto listed = run_tpusim({"params", "--json"});
  REQUIRE(listed.exit_code == 0);
  const json params = json::parse(listed.out);
  REQUIRE(params.size() > 40);

  // Baselines: the resolved config of each study and its outputs.
  std::vector<json> configs, baselines;
  for (const auto& study : kStudies) {
    TpusimResult r;
    baselines.push_back(run_report(study, {}, &r));
    INFO(study[1] << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    configs.push_back(json::parse(r.out)["config"]);
  }

  struct Finding {
    std::string path;
    std::string what;  ///< "" if the parameter has an effect
  };
  auto check = [&](const json& spec) -> Finding {
    const std::string path = spec["path"];
    std::string tried;
    for (std::size_t s = 0; s < kStudies.size(); ++s) {
      if (spec.contains("when")) {
        const std::string when = spec["when"];
        const auto eq = when.find('=');
        const json* v = at_path(configs[s], when.substr(0, eq));
        if (!v || *v != when.substr(eq + 1)) continue;
      }
      const json* current = at_path(configs[s], path);
      if (!current) continue;
      tried += "; " + kStudies[s][1] + " (was " + current->dump() + "):";
      for (const json& value : other_values(spec, *current)) {
        TpusimResult r;
        const json out = run_report(kStudies[s], {"--set", path + "=" + value.dump()}, &r);
        if (r.exit_code == 0 && out != baselines[s]) return {path, ""};
        // Refused with a message naming it: the value is read and judged.
        if (r.exit_code == 2 && r.err.find(path) != std::string::npos) return {path, ""};
        tried += " " + value.dump() +
                 (r.exit_code == 0 ? "" : " (exit " + std::to_string(r.exit_code) + ")");
      }
    }
    if (tried.empty()) return {path, "applies in none of the studies of kStudies; add one"};
    return {path, "no output changed" + tried};
  };

  // Two runs at a time.
  std::vector<json> todo;
  for (const auto& spec : params)
    if (!spec.value("label", false)) todo.push_back(spec);
  std::vector<Finding> findings(todo.size());
  for (std::size_t i = 0; i < todo.size(); i += 2) {
    auto other = std::async(std::launch::async, [&, i] {
      if (i + 1 < todo.size()) findings[i + 1] = check(todo[i + 1]);
    });
    findings[i] = check(todo[i]);
    other.get();
  }
  for (const auto& f : findings) {
    INFO(f.path << ": " << f.what);
    if (kAwaitingEffect.count(f.path))
      CHECK_FALSE(f.what.empty());  // once it has an effect, take it off kAwaitingEffect
    else
      CHECK(f.what.empty());
  }
}
