// tpusim plan as a user runs it: a small BERT slice searched end to end; the rules it must keep
// (bounds below simulated times, pruning that never drops a top-K layout, the winner reproduces,
// reruns simulate nothing new); bad input.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "tests/cli/sweep_fixture.hpp"

using nlohmann::json;

namespace {
/// The small BERT study with 4 of its 24 encoder layers: the search builds every candidate's
/// program (48 here), which for 24 layers took most of a plan's time under the sanitizers.
json plan_study() {
  json doc = small_bert_study();
  doc["workload"]["layers"] = 4;
  return doc;
}

json plan_json(const std::string& out_dir) { return json::parse(slurp(out_dir + "/plan.json")); }

// 2x2 slice (8 cores), batch 16: model 1 and 2 are valid (4 and 8 do not divide the vocabulary);
// 12 valid layouts with both gradient dtypes, both sharding choices and three bucket sizes.
const char* kSmallSpace = "parallelism.grad_bucket_MiB=8,32,128";

/// `tpusim plan` of the small BERT study with `jobs` at a time and the top `top` into `out`.
TpusimResult plan_small(const SweepScratch& s, int jobs, int top, const std::string& out) {
  return run_tpusim({"plan", s.write("bert.json", plan_study()), "-j", std::to_string(jobs),
                     "--top", std::to_string(top), "--json", "--space", kSmallSpace, "--out",
                     s.path(out)});
}

/// A plan of the small space that several cases read: run once per process (the searches are
/// this file's cost), its folder in a scratch that lives as long as the process. A case that
/// writes into a plan's folder copies it first.
struct SharedPlan {
  TpusimResult result;
  std::string out;  // the --out folder
};
const SharedPlan& shared_plan(int jobs, int top) {
  static const SweepScratch scratch;
  static std::map<std::pair<int, int>, SharedPlan> plans;
  auto it = plans.find({jobs, top});
  if (it == plans.end()) {
    const std::string out = "j" + std::to_string(jobs) + "_top" + std::to_string(top);
    it = plans
             .emplace(std::pair{jobs, top},
                      SharedPlan{plan_small(scratch, jobs, top, out), scratch.path(out)})
             .first;
  }
  return it->second;
}

/// The folder a run killed after the first `n` layouts of the plan in `whole` (in its store's
/// order) leaves: their results and studies copied into s.path("killed").
void keep_first_layouts(const SweepScratch& s, const std::string& whole, const json& store, int n) {
  std::filesystem::create_directories(s.path("killed/points"));
  for (int k = 0; k < n; ++k) {
    const std::string id = store["points"][k]["id"];
    for (const char* suffix : {".json", ".study.json"}) {
      const std::string from = whole + "/points/" + id + suffix;
      if (std::filesystem::exists(from))
        std::filesystem::copy_file(from, s.path("killed/points/" + id + suffix));
    }
  }
}

/// The rerun reused `cached` layouts and decided as the whole run did.
void check_same_decisions(const TpusimResult& rerun, const json& w, int cached) {
  INFO(rerun.err);
  REQUIRE(rerun.exit_code == 0);
  const json r = json::parse(rerun.out);
  CHECK(r["counts"]["cached"] == cached);
  CHECK(r["counts"]["simulated"] == w["counts"]["simulated"]);
  CHECK(r["counts"]["pruned"] == w["counts"]["pruned"]);
  CHECK(r["top"] == w["top"]);
}
}  // namespace

TEST_CASE("plan: simulated steps are never below their bound, top K, front and winner agree") {
  const SharedPlan& plan = shared_plan(2, 3);
  INFO(plan.result.err);
  REQUIRE(plan.result.exit_code == 0);
  const json out = json::parse(plan.result.out);
  CHECK(out == plan_json(plan.out));
  const auto& n = out["counts"];
  CHECK(n["candidates"] == 4 * 2 * 3 * 2);  // model 1..8 (8 cores) x wus x bucket x dtype
  CHECK(n["candidates"].get<int>() == n["invalid"].get<int>() + n["oom"].get<int>() +
                                          n["equivalent"].get<int>() + n["pruned"].get<int>() +
                                          n["simulated"].get<int>() + n["failed"].get<int>());
  REQUIRE(out["top"].size() == 3);
  double previous = 0;
  for (const auto& id : out["top"]) {
    const auto& c = out["candidates"][id.get<std::string>()];
    CHECK(c["step_time_ms"].get<double>() >= previous);
    previous = c["step_time_ms"].get<double>();
  }
  for (const auto& [id, c] : out["candidates"].items()) {
    CHECK(c["step_time_ms"].get<double>() >= c["bound_ms"].get<double>());
    CHECK(c["bound_ms"].get<double>() ==
          Approx(std::max(
              {c["bound_compute_ms"].get<double>(), c["bound_bisection_ms"].get<double>(),
               c["bound_critical_ms"].get<double>(), c["bound_ingress_ms"].get<double>()})));
    // The memory verdict, made from the Program without simulating, is the simulated run's.
    const json point = point_report(plan.out, id);
    CHECK(c["peak_memory_bytes"].get<double>() ==
          Approx(point["memory"]["peak_bytes"].get<double>()));
    // examples/s/chip = batch / step / chips
    CHECK(c["examples_per_s_per_chip"].get<double>() ==
          Approx(16 / (c["step_time_ms"].get<double>() * 1e-3) / 4));
  }
  // The front: each member needs less memory than every faster member.
  double min_peak = 1e300;
  for (const auto& id : out["pareto"]) {
    const double peak = out["candidates"][id.get<std::string>()]["peak_memory_bytes"];
    CHECK(peak < min_peak);
    min_peak = peak;
  }
  // The winner study runs as written and gives the winner's step time.
  const auto& winner = out["candidates"][out["winner"]["id"].get<std::string>()];
  CHECK(out["winner"]["id"] == out["top"][0]);
  auto w = run_tpusim({"run", out["winner"]["study_file"].get<std::string>(), "--json"});
  REQUIRE(w.exit_code == 0);
  CHECK(json::parse(w.out)["step_time_ms"].get<double>() ==
        Approx(winner["step_time_ms"].get<double>()));
}

/// A plan that pruned (`pruned`) and one with --top above the space (`all`): both succeed, only
/// the first pruned, and their first `k` layouts are the same.
void check_same_top(const TpusimResult& pruned, const TpusimResult& all, int k) {
  REQUIRE(pruned.exit_code == 0);
  REQUIRE(all.exit_code == 0);
  const json p = json::parse(pruned.out), a = json::parse(all.out);
  CHECK(a["counts"]["pruned"] == 0);
  CHECK(p["counts"]["pruned"].get<int>() > 0);
  for (int i = 0; i < k; ++i) CHECK(p["top"][i] == a["top"][i]);
}

TEST_CASE("plan: pruning by bound keeps the same top K as simulating everything") {
  SweepScratch s;
  const auto study = s.write("bert.json", plan_study());
  // The top 3 of the plan the other cases read (its top 2 prunes the same 11 of 24 layouts).
  const TpusimResult& pruned = shared_plan(2, 3).result;
  // --top larger than the space: nothing can be skipped.
  auto all = run_tpusim({"plan", study, "-j", "2", "--top", "1000", "--out", s.path("b"), "--json",
                         "--space", kSmallSpace});
  check_same_top(pruned, all, 3);
}

TEST_CASE("plan: a rerun simulates nothing new, a wider space only the new layouts") {
  SweepScratch s;
  const auto study = s.write("bert.json", plan_study());
  auto first =
      run_tpusim({"plan", study, "--out", s.path("out"), "--json", "--space",
                  "parallelism.grad_bucket_MiB=32", "--space", "parallelism.grad_dtype=bf16"});
  REQUIRE(first.exit_code == 0);
  auto again =
      run_tpusim({"plan", study, "--out", s.path("out"), "--json", "--space",
                  "parallelism.grad_bucket_MiB=32", "--space", "parallelism.grad_dtype=bf16"});
  REQUIRE(again.exit_code == 0);
  const json f = json::parse(first.out), g = json::parse(again.out);
  CHECK(f["counts"]["cached"] == 0);
  CHECK(g["counts"]["cached"] == f["counts"]["simulated"]);
  CHECK(g["top"] == f["top"]);
  auto wider =
      run_tpusim({"plan", study, "--out", s.path("out"), "--json", "--top", "100", "--space",
                  "parallelism.grad_bucket_MiB=32,128", "--space", "parallelism.grad_dtype=bf16"});
  REQUIRE(wider.exit_code == 0);
  const json w = json::parse(wider.out);
  CHECK(w["counts"]["cached"] == f["counts"]["simulated"]);
  CHECK(w["counts"]["simulated"].get<int>() > w["counts"]["cached"].get<int>());
}

TEST_CASE("plan: killed and rerun, it prunes and simulates what one uninterrupted run does") {
  SweepScratch s;
  const SharedPlan& whole = shared_plan(2, 3);
  REQUIRE(whole.result.exit_code == 0);
  const json w = json::parse(whole.result.out);
  REQUIRE(w["counts"]["pruned"].get<int>() > 0);
  // A run killed in its second wave of two: the first three layouts it simulated are on disk.
  const json store = json::parse(slurp(whole.out + "/sweep.json"));
  REQUIRE(store["points"].size() > 3);
  keep_first_layouts(s, whole.out, store, 3);
  check_same_decisions(plan_small(s, 2, 3, "killed"), w, 3);
}

TEST_CASE("plan: killed in its first wave, the rerun does not prune that wave by its results") {
  // -j 13 puts the 12 layouts with weight-update sharding (bounds near 12.6 ms, steps near
  // 14 to 16 ms, with 4 layers) and the first without it (bound near 16 ms) in one wave: one
  // uninterrupted run simulates all 13, nothing being simulated when the wave is formed. Killed
  // after the wave's first layout finished, the rerun must form the same wave: were that cached
  // result counted before the wave (as before the fix), its 14 ms would rule out the 16 ms bound
  // (top 1, less memory).
  SweepScratch s;
  auto whole = plan_small(s, 13, 1, "whole");
  REQUIRE(whole.exit_code == 0);
  const json w = json::parse(whole.out);
  const json store = json::parse(slurp(s.path("whole/sweep.json")));
  // The premise: the first wave holds a layout whose bound is above the first layout's step.
  REQUIRE(store["points"].size() > 13);
  const auto& cand = w["candidates"];
  const std::string first = store["points"][0]["id"];
  bool wave_holds_a_worse_bound = false;
  for (int k = 1; k < 13; ++k) {
    const auto& c = cand[store["points"][k]["id"].get<std::string>()];
    wave_holds_a_worse_bound |= c["bound_ms"].get<double>() > cand[first]["step_time_ms"] &&
                                c["peak_memory_bytes"] >= cand[first]["peak_memory_bytes"];
  }
  REQUIRE(wave_holds_a_worse_bound);
  keep_first_layouts(s, s.path("whole"), store, 1);
  check_same_decisions(plan_small(s, 13, 1, "killed"), w, 1);
}

TEST_CASE("plan: the study's own layout is always simulated and ranked") {
  SweepScratch s;
  json doc = plan_study();
  doc["parallelism"] = {{"weight_update_sharding", false}, {"grad_bucket_MiB", 64}};
  const auto study = s.write("bert.json", doc);
  auto r = run_tpusim({"plan", study, "--top", "1", "--out", s.path("out"), "--json", "--space",
                       "parallelism.grad_dtype=bf16"});
  REQUIRE(r.exit_code == 0);
  const json out = json::parse(r.out);
  // bucket 64 is not in the default space: the study's layout is added to it.
  CHECK(out["study_layout"]["layout"] == "model=1 wus=off bucket_MiB=64 grad=bf16");
  REQUIRE(out["study_layout"].contains("rank"));
  const auto& own = out["candidates"][out["study_layout"]["id"].get<std::string>()];
  CHECK(own["study_layout"] == true);
}

TEST_CASE(
    "plan: a study whose own layout is invalid is searched and says why its layout is not ranked") {
  SweepScratch s;
  json doc = plan_study();
  doc["parallelism"] = {{"model", 4}};  // 4 does not divide the 30522-word vocabulary
  const auto study = s.write("bert.json", doc);
  auto r = run_tpusim({"plan", study, "--out", s.path("out"), "--json", "--space",
                       "parallelism.grad_dtype=bf16", "--space", "parallelism.grad_bucket_MiB=32"});
  REQUIRE(r.exit_code == 0);
  const json out = json::parse(r.out);
  CHECK_FALSE(out["study_layout"].contains("rank"));
  CHECK_THAT(out["study_layout"]["status"].get<std::string>(),
             Catch::StartsWith("invalid parallelism.model: ") && Catch::Contains("30522"));
  CHECK(out["top"].size() > 0);
}

TEST_CASE("plan: bad input is one line naming it with exit 2 and nothing simulated") {
  SweepScratch s;
  const auto study = s.write("bert.json", plan_study());
  auto bad_objective = run_tpusim({"plan", study, "--objective", "speed", "--out", s.path("o")});
  CHECK(bad_objective.exit_code == 2);
  CHECK(bad_objective.err_lines() == 1);
  CHECK_THAT(bad_objective.err,
             Catch::Contains("--objective speed") && Catch::Contains("examples_per_s_per_chip"));
  auto no_valid =
      run_tpusim({"plan", study, "--space", "parallelism.model=3,5", "--out", s.path("o")});
  CHECK(no_valid.exit_code == 2);
  CHECK(no_valid.err_lines() == 1);
  CHECK_THAT(no_valid.err,
             Catch::Contains("no valid layout") && Catch::Contains("parallelism.model"));
  auto bad_axis =
      run_tpusim({"plan", study, "--space", "parallelism.spatial_w=2", "--out", s.path("o")});
  CHECK(bad_axis.exit_code == 2);
  CHECK_THAT(bad_axis.err, Catch::Contains("neither an axis"));
  auto batch_range = run_tpusim({"plan", study, "--batch-per-chip", "1:4", "--out", s.path("o")});
  CHECK(batch_range.exit_code == 2);
  CHECK_THAT(batch_range.err, Catch::Contains("--objective examples_per_s_per_chip"));
  // BERT counts no model FLOPs: MFU is a language model's objective.
  auto mfu = run_tpusim({"plan", study, "--objective", "mfu", "--out", s.path("o")});
  CHECK(mfu.exit_code == 2);
  CHECK(mfu.err_lines() == 1);
  CHECK_THAT(mfu.err, Catch::Contains("--objective mfu") && Catch::Contains("language model"));
  CHECK(!std::filesystem::exists(s.path("o")));
}

TEST_CASE("plan: when nothing fits in HBM it says so with the smallest peak and exit 2") {
  SweepScratch s;
  json doc = plan_study();
  doc["hardware"] = {{"hbm", {{"GiB_per_core", 0.01}}}};
  const auto study = s.write("bert.json", doc);
  auto r = run_tpusim({"plan", study, "--out", s.path("o")});
  CHECK(r.exit_code == 2);
  CHECK(r.err_lines() == 1);
  CHECK_THAT(r.err, Catch::Contains("fits in HBM") && Catch::Contains("smallest peak"));
  CHECK(!std::filesystem::exists(s.path("o")));
  // Which axes would help: the memory-saving keys the space leaves out, each with a --space to
  // try (model 4 and 8 are invalid here, so no searched axis ends on its smallest peak).
  CHECK_THAT(r.err, Catch::Contains("axes not searched that save memory:") &&
                        Catch::Contains("--space workload.rematerialize=false,true") &&
                        Catch::Contains("--space parallelism.fsdp=1,2,4,8"));
}

/// A decoder of 8 small layers on a 2x2 TPU v4 slice: its layouts pass the memory screen and are
/// built whole only when the search reaches them (docs/plan.md, "Memory and bounds before the
/// whole build").
json small_decoder_study() {
  return {{"preset", "tpu_v4"},
          {"topology", "2x2"},
          {"workload",
           {{"preset", "decoder_1b"},
            {"layers", 8},
            {"d_model", 512},
            {"heads", 8},
            {"d_ff", 2048},
            {"vocab", 4096},
            {"seq_len", 128},
            {"global_batch", 16}}}};
}

/// `tpusim plan` of the small decoder over 24 layouts, the top `top`.
TpusimResult plan_decoder(const SweepScratch& s, const std::string& study, int top,
                          const std::string& out) {
  return run_tpusim({"plan",
                     study,
                     "-j",
                     "2",
                     "--top",
                     std::to_string(top),
                     "--json",
                     "--out",
                     s.path(out),
                     "--space",
                     "parallelism.model=1,2",
                     "--space",
                     "parallelism.fsdp=1,2,4",
                     "--space",
                     "workload.remat=full,minimal",
                     "--space",
                     "workload.attention=dot_product",
                     "--space",
                     "workload.microbatches=1,2",
                     "--space",
                     "hardware.megacore=true"});
}

TEST_CASE("plan: a decoder's layouts built whole only when reached keep the top K of all") {
  SweepScratch s;
  const auto study = s.write("decoder.json", small_decoder_study());
  const auto pruned = plan_decoder(s, study, 2, "p"), all = plan_decoder(s, study, 1000, "a");
  INFO(pruned.err + all.err);
  check_same_top(pruned, all, 2);
  const json p = json::parse(pruned.out), a = json::parse(all.out);
  for (const json* out : {&p, &a}) {
    const auto& n = (*out)["counts"];
    CHECK(n["candidates"] == 24);
    CHECK(n["candidates"].get<int>() == n["invalid"].get<int>() + n["oom"].get<int>() +
                                            n["equivalent"].get<int>() + n["pruned"].get<int>() +
                                            n["simulated"].get<int>() + n["failed"].get<int>());
  }
  // The Programs the search built were played by the runs (tpusim run --program) and removed.
  for (const auto& e : std::filesystem::directory_iterator(s.path("a") + "/points"))
    CHECK(e.path().extension() != ".program");
  // A simulated layout's bound and peak are its whole Program's: the bound below its step, the
  // peak the simulated run's.
  for (const auto& [id, c] : a["candidates"].items()) {
    CHECK(c["step_time_ms"].get<double>() >= c["bound_ms"].get<double>());
    CHECK(c["peak_memory_bytes"].get<double>() ==
          Approx(point_report(s.path("a"), id)["memory"]["peak_bytes"].get<double>()));
  }
}

TEST_CASE("plan: with links that do not queue, no simulated step is below its bound") {
  // network.contention=false lets a link carry several transfers at once at full rate, so the
  // bound does not count a group's chip as taking in over only the links its routes arrive on
  // (plan::step_lower_bound). The 1 B decoder at 4 layers, model 4 without megacore on a
  // 4x4x1 v4 slice: counted so, its bound came out 5 % above its step.
  SweepScratch s;
  const auto r = run_tpusim(
      {"plan",     std::string(TPUSIM_SOURCE_DIR) + "/configs/studies/decoder_1b_16.json",
       "--set",    "network.contention=false",
       "--set",    "workload.layers=4",
       "--space",  "parallelism.model=4",
       "--space",  "parallelism.fsdp=1",
       "--space",  "hardware.megacore=false",
       "--space",  "workload.remat=full",
       "--space",  "workload.attention=flash",
       "--space",  "workload.microbatches=1",
       "--space",  "workload.quantization=none",
       "-j",       "2",
       "--top",    "100",
       "--json",   "--out",
       s.path("a")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json a = json::parse(r.out);
  CHECK(a["counts"]["simulated"].get<int>() > 0);
  for (const auto& [id, c] : a["candidates"].items()) {
    INFO(c["layout"]);
    CHECK(c["step_time_ms"].get<double>() >= c["bound_ms"].get<double>());
  }
}

TEST_CASE("run --program: a file that is not a Program for the study is one error, exit 2") {
  SweepScratch s;
  const auto study = s.write("decoder.json", small_decoder_study());
  const auto junk = s.write("junk.program", json("not a Program"));
  auto r = run_tpusim({"run", study, "--program", junk});
  CHECK(r.exit_code == 2);
  CHECK(r.err_lines() == 1);
  CHECK_THAT(r.err, Catch::Contains("--program") && Catch::Contains("not a Program file"));
  auto missing = run_tpusim({"run", study, "--program", s.path("none.program")});
  CHECK(missing.exit_code == 2);
  CHECK(missing.err_lines() == 1);
  CHECK_THAT(missing.err, Catch::Contains("--program") && Catch::Contains("cannot be read"));
}

TEST_CASE("plan: a decoder that passes the memory screen but does not fit whole is exit 2") {
  // HBM at 90 % of the layout's peak: the screen's figures less a core's CMEM (128 MiB) fit,
  // the whole Program does not; the search finds so when it builds it, and with no other layout
  // the plan ends as one that nothing fits.
  // The layout searched is not the study's own (microbatches 2 there), whose check builds it
  // whole.
  SweepScratch s;
  json doc = small_decoder_study();
  doc["hardware"] = {{"megacore", false}};  // a TensorCore's HBM is the device's
  const auto run = run_tpusim({"run", s.write("one.json", doc), "--json"});
  REQUIRE(run.exit_code == 0);
  const double peak = json::parse(run.out)["memory"]["peak_bytes"].get<double>();
  doc["hardware"]["hbm"] = {{"GiB_per_core", 0.9 * peak / (1024.0 * 1024 * 1024)}};
  doc["workload"]["microbatches"] = 2;
  const auto study = s.write("decoder.json", doc);
  auto r = run_tpusim({"plan", study, "--out", s.path("o"), "--space", "parallelism.model=1",
                       "--space", "parallelism.fsdp=1", "--space", "workload.remat=full", "--space",
                       "workload.attention=dot_product", "--space", "workload.microbatches=1",
                       "--space", "hardware.megacore=false", "--space", "parallelism.pipeline=1"});
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err_lines() == 1);
  CHECK_THAT(r.err, Catch::Contains("fits in HBM") && Catch::Contains("smallest peak"));
}

TEST_CASE("plan: the winner is explained: its margin, the axes it differs in, what bounds it") {
  SweepScratch s;
  const auto study = s.write("bert.json", plan_study());
  const SharedPlan& plan = shared_plan(2, 3);
  REQUIRE(plan.result.exit_code == 0);
  const json out = json::parse(plan.result.out);
  // The text run below reuses the plan's results from a copy of its folder.
  std::filesystem::copy(plan.out, s.path("out"), std::filesystem::copy_options::recursive);
  const auto& c = out["candidates"];
  const auto& w = c[out["winner"]["id"].get<std::string>()];
  const auto& e = out["winner"]["explanation"];
  REQUIRE(e.contains("margin"));
  const auto& next = c[e["margin"]["runner_up"].get<std::string>()];
  CHECK(w["rank"] == 1);
  CHECK(next["rank"] == 2);
  // The margin is the runner-up's step time less the winner's, and that over the winner's.
  const double ws = w["step_time_ms"], ns = next["step_time_ms"];
  CHECK(e["margin"]["step_time_ms"].get<double>() == Approx(ns - ws).epsilon(1e-12));
  CHECK(e["margin"]["percent"].get<double>() == Approx(100 * (ns - ws) / ws).epsilon(1e-12));
  // The axes listed are exactly those whose values differ.
  std::size_t differing = 0;
  for (const auto& [axis, v] : w["values"].items()) differing += next["values"][axis] != v;
  CHECK(e["differs"].size() == differing);
  for (const auto& d : e["differs"]) {
    CHECK(w["values"][d["axis"].get<std::string>()] == d["winner"]);
    CHECK(next["values"][d["axis"].get<std::string>()] == d["runner_up"]);
  }
  // What bounds it: its compute share against its exposed communication share.
  const auto& b = e["bound"];
  CHECK(b["compute_share"].get<double>() ==
        Approx(w["compute_ms"].get<double>() / ws).epsilon(1e-12));
  CHECK(b["by"] == (b["compute_share"].get<double>() >= w["exposed_comm_share"].get<double>()
                        ? "compute"
                        : "communication"));
  // Near ties: every other layout within 2 % (the default --tie) of the winner, and no other.
  std::set<std::string> ties;
  for (const auto& [id, cand] : c.items())
    if (id != out["winner"]["id"] && cand["step_time_ms"].get<double>() <= ws * 1.02)
      ties.insert(id);
  CHECK(std::set<std::string>(e["near_ties"].begin(), e["near_ties"].end()) == ties);
  // The text says the same.
  auto text = run_tpusim({"plan", study, "--top", "3", "--out", s.path("out"), "--space",
                          kSmallSpace, "--tie", "100"});
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::Contains("faster than #2 (" +
                                       e["margin"]["runner_up_layout"].get<std::string>() + ")") &&
                           Catch::Contains("bound by " + b["by"].get<std::string>()) &&
                           Catch::Contains("near tie: #2") &&
                           Catch::Contains("within 100.0 % of the winner"));
  auto bad_tie = run_tpusim({"plan", study, "--tie", "nan", "--out", s.path("o2")});
  CHECK(bad_tie.exit_code == 2);
  CHECK_THAT(bad_tie.err, Catch::Contains("--tie"));
}

TEST_CASE("plan: rates print with four significant digits, axes a model lacks are not shown") {
  SweepScratch s;
  // BERT at a batch of 16 on 8 cores: about a hundred examples per second per chip; a plan of
  // a language model shows no spatial axis.
  const auto study = s.write("bert.json", plan_study());
  auto r = run_tpusim({"plan", study, "--top", "2", "--out", s.path("out"), "--space",
                       "parallelism.grad_bucket_MiB=32", "--space", "parallelism.grad_dtype=bf16"});
  REQUIRE(r.exit_code == 0);
  const json out = plan_json(s.path("out"));
  CHECK(out["space"].contains("parallelism.model"));
  CHECK_FALSE(out["space"].contains("parallelism.spatial"));
  CHECK_THAT(r.out, !Catch::Contains("spatial="));
  for (const auto& id : out["top"]) {
    const double rate = out["candidates"][id.get<std::string>()]["examples_per_s_per_chip"];
    const int digits = std::max(1, 3 - static_cast<int>(std::floor(std::log10(rate))));
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, rate);
    CHECK_THAT(r.out, Catch::Contains(buf));
  }
}

TEST_CASE("plan: a per-chip batch range ranks by throughput per chip") {
  SweepScratch s;
  const auto study = s.write("bert.json", plan_study());
  auto r =
      run_tpusim({"plan", study, "--batch-per-chip", "2:8", "--objective",
                  "examples_per_s_per_chip", "--space", "parallelism.grad_dtype=bf16", "--space",
                  "parallelism.grad_bucket_MiB=32", "--out", s.path("o"), "--json"});
  REQUIRE(r.exit_code == 0);
  const json out = json::parse(r.out);
  CHECK(out["space"]["workload.global_batch"] == json::array({8, 16, 32}));
  double previous = 1e300;
  for (const auto& id : out["top"]) {
    const double v = out["candidates"][id.get<std::string>()]["examples_per_s_per_chip"];
    CHECK(v <= previous);
    previous = v;
  }
}

TEST_CASE("plan: layouts that build the same Program are simulated once") {
  SweepScratch s;
  // SSD on 8 cores with 4 images: 2-way spatial partitioning at least. A batch-norm group of 2
  // cores is exactly one replica of spatial 2, the same Program as no group.
  const auto study = s.write("ssd.json", {{"preset", "tpu_v3"},
                                          {"topology", "2x2"},
                                          {"workload", {{"model", "ssd"}, {"global_batch", 4}}},
                                          {"parallelism", {{"spatial", 2}}}});
  auto r = run_tpusim({"plan", study, "--out", s.path("o"), "--json", "--space",
                       "parallelism.spatial=2", "--space", "parallelism.spatial_w=1", "--space",
                       "parallelism.bn_group_cores=0,2,4", "--space",
                       "parallelism.weight_update_sharding=false", "--space",
                       "parallelism.grad_bucket_MiB=32", "--space", "parallelism.grad_dtype=bf16"});
  REQUIRE(r.exit_code == 0);
  const json out = json::parse(r.out);
  CHECK(out["counts"]["candidates"] == 3);
  CHECK(out["counts"]["equivalent"] == 1);
  CHECK(out["counts"]["simulated"] == 2);
  const auto& own = out["candidates"][out["study_layout"]["id"].get<std::string>()];
  CHECK(own["layout"] == "spatial=2 w=1 bn=0 wus=off bucket_MiB=32 grad=bf16");
  CHECK(own["equivalent_layouts"] ==
        json::array({"spatial=2 w=1 bn=2 wus=off bucket_MiB=32 grad=bf16"}));
}
