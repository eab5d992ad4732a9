// The search space of `tpusim plan`: which axes a model gets, how many candidates, overrides.
#include <catch2/catch.hpp>

#include "core/errors.hpp"
#include "core/params.hpp"
#include "tests/unit/model_study.hpp"
#include "tools/plan/evaluate.hpp"
#include "tools/plan/space.hpp"
#include "tools/study/study.hpp"
#include "topologies/topology.hpp"

using namespace tpusim;
using namespace tpusim::plan;

namespace {
const SpaceAxis* axis(const SearchSpace& s, const std::string& path) {
  for (const auto& a : s.axes)
    if (a.path == path) return &a;
  return nullptr;
}
std::size_t product(const SearchSpace& s) {
  std::size_t n = 1;
  for (const auto& a : s.axes) n *= a.values.size();
  return n;
}
}  // namespace

TEST_CASE("plan space: a model-parallel model gets model degrees, no spatial axes at all") {
  const Config cfg = test::model_study("bert_large", "4x4", 32);
  const SearchSpace s = default_space(cfg, 32);
  REQUIRE(axis(s, "parallelism.model"));
  // Powers of two up to min(cores, 64) = 32.
  CHECK(axis(s, "parallelism.model")->values.size() == 6);
  // An axis the model does not split along is not shown (not even as spatial=1).
  CHECK_FALSE(axis(s, "parallelism.spatial"));
  CHECK_FALSE(axis(s, "parallelism.spatial_w"));
  CHECK_FALSE(axis(s, "parallelism.bn_group_cores"));
  CHECK(enumerate(s, cfg.json()).size() == product(s));
}

TEST_CASE("plan space: a convolutional model gets spatial, W-split and batch-norm group axes") {
  const Config cfg = test::model_study("ssd", "4x4", 64);
  const SearchSpace s = default_space(cfg, 32);
  CHECK_FALSE(axis(s, "parallelism.model"));
  CHECK(axis(s, "parallelism.spatial")->values.size() == 5);  // 1..16
  REQUIRE(axis(s, "parallelism.spatial_w"));
  REQUIRE(axis(s, "parallelism.bn_group_cores"));
  CHECK(axis(s, "parallelism.bn_group_cores")->values.front() == 0);
}

TEST_CASE("plan space: every combination once, the values set in the study") {
  const Config cfg = test::model_study("bert_large", "4x4", 32);
  SearchSpace s = default_space(cfg, 32);
  override_axis(s, "parallelism.model=1,2", cfg);
  override_axis(s, "parallelism.grad_bucket_MiB=32", cfg);
  const auto all = enumerate(s, cfg.json());
  REQUIRE(all.size() == 2 * 2 * 1 * 2);  // model x wus x bucket x dtype
  std::set<std::string> seen;
  for (const auto& c : all) {
    CHECK(c.study["parallelism"]["grad_bucket_MiB"] == 32);
    seen.insert(c.study["parallelism"].dump());
  }
  CHECK(seen.size() == all.size());
  CHECK(candidate_label(s, all.back().values) == "model=2 wus=on bucket_MiB=32 grad=f32");
}

TEST_CASE("plan space: bad overrides name --space and what is allowed") {
  const Config cfg = test::model_study("bert_large", "4x4", 32);
  SearchSpace s = default_space(cfg, 32);
  // BERT declares no spatial_w.
  CHECK_THROWS_WITH(override_axis(s, "parallelism.spatial_w=2", cfg),
                    Catch::Contains("--space") && Catch::Contains("neither an axis") &&
                        Catch::Contains("parallelism.model"));
  CHECK_THROWS_AS(override_axis(s, "topology=8x8", cfg), ConfigError);
  CHECK_THROWS_AS(override_axis(s, "parallelism.model", cfg), ConfigError);
  CHECK_THROWS_AS(override_axis(s, "parallelism.model=1,,2", cfg), ConfigError);
}

TEST_CASE("plan space: an axis given twice, or a value listed twice, is an error naming it") {
  const Config cfg = test::model_study("bert_large", "4x4", 32);
  SearchSpace s = default_space(cfg, 32);
  CHECK_THROWS_WITH(
      override_axes(s, {"parallelism.model=1", "parallelism.model=2"}, cfg),
      Catch::StartsWith("--space parallelism.model=2: 'parallelism.model' is given twice"));
  CHECK_THROWS_WITH(override_axis(s, "parallelism.model=1,2,1", cfg),
                    Catch::StartsWith("--space parallelism.model=1,2,1: '1' is listed twice"));
  override_axes(s, {"parallelism.model=1,2", "parallelism.grad_bucket_MiB=32"}, cfg);
  CHECK(axis(s, "parallelism.model")->values.size() == 2);
}

TEST_CASE("plan space: --space adds an axis for another key the study declares") {
  const Config cfg = test::model_study("bert_large", "4x4", 32);
  SearchSpace s = default_space(cfg, 32);
  const std::size_t before = enumerate(s, cfg.json()).size();
  override_axis(s, "workload.rematerialize=false,true", cfg);
  CHECK(s.axes.back().path == "workload.rematerialize");
  CHECK(enumerate(s, cfg.json()).size() == 2 * before);
}

TEST_CASE("plan space: a per-chip batch range gives chips x powers of two") {
  const Config cfg = test::model_study("bert_large", "4x4", 32);
  SearchSpace s = default_space(cfg, 32);
  set_batch_per_chip(s, "2:16", 16);
  const auto* b = axis(s, "workload.global_batch");
  REQUIRE(b);
  CHECK(b->values == std::vector<nlohmann::json>{32, 64, 128, 256});
  CHECK_THROWS_WITH(set_batch_per_chip(s, "4:2", 16), Catch::Contains("--batch-per-chip 4:2"));
  CHECK_THROWS_AS(set_batch_per_chip(s, "x", 16), ConfigError);
}

TEST_CASE("plan space: a space too large to search is an error, not an allocation") {
  const Config cfg = test::model_study("bert_large", "4x4", 32);
  SearchSpace s = default_space(cfg, 32);
  CHECK_THROWS_WITH(enumerate(s, cfg.json(), 10), Catch::Contains("more than 10"));
}

TEST_CASE(
    "plan space: a language model searches fsdp, the registry's remat choices, microbatches") {
  const Config cfg = test::model_study("decoder_lm", "2x2", 8);
  const SearchSpace s = default_space(cfg, 8);
  REQUIRE(axis(s, "parallelism.fsdp"));
  CHECK(axis(s, "parallelism.fsdp")->values == std::vector<nlohmann::json>{1, 2, 4, 8});
  // The rungs of MaxText's memory ladder, in the registry's order (the other policies by
  // --space); on TPU v3, no 8-bit rate: quantization stays none; both attention kernels.
  std::vector<nlohmann::json> remat;
  for (const ParamSpec* p : ParamRegistry::instance().find("workload.remat"))
    if (p->when_value == "decoder_lm")
      for (const auto& c : p->allowed_choices())
        for (const char* rung : {"full", "save_qkv_proj", "save_dot_except_mlp", "minimal"})
          if (c == rung) remat.push_back(c);
  REQUIRE(remat.size() == 4);
  REQUIRE(axis(s, "workload.remat"));
  CHECK(axis(s, "workload.remat")->values == remat);
  REQUIRE(axis(s, "workload.quantization"));
  CHECK(axis(s, "workload.quantization")->values == std::vector<nlohmann::json>{"none"});
  REQUIRE(axis(s, "workload.attention"));
  CHECK(axis(s, "workload.attention")->values.size() == 2);
  // A chip whose int8 runs twice bf16's (TPU v5p) also searches int8.
  nlohmann::json doc = cfg.json();
  doc["hardware"]["mxu"]["int8_rate"] = 2.0;
  const SearchSpace q = default_space(Config(doc), 8);
  CHECK(axis(q, "workload.quantization")->values == std::vector<nlohmann::json>{"none", "int8"});
  // The study's own layout (the default 20-layer decoder, data parallel over 8 v3 cores) does
  // not fit in HBM: plan adds the pipeline axes and widens the microbatches from 1, 2, 4 to 32.
  REQUIRE(axis(s, "parallelism.pipeline"));
  CHECK(axis(s, "workload.microbatches")->values ==
        std::vector<nlohmann::json>{1, 2, 4, 8, 16, 32});
  // The axes FSDP makes moot stay at the study's values; spatial does not apply.
  CHECK_FALSE(axis(s, "parallelism.grad_bucket_MiB"));
  CHECK_FALSE(axis(s, "parallelism.weight_update_sharding"));
  CHECK_FALSE(axis(s, "parallelism.spatial"));
  // A model that declares no remat policy keeps the data-parallel axes.
  const SearchSpace b = default_space(test::model_study("bert_large", "4x4", 32), 32);
  CHECK_FALSE(axis(b, "parallelism.fsdp"));
  CHECK(axis(b, "parallelism.grad_bucket_MiB"));
}

TEST_CASE("plan space: the language model's mesh axes model2 and sequence through --space") {
  const Config cfg = test::model_study("decoder_lm", "2x2", 8);
  SearchSpace s = default_space(cfg, 8);
  // The remat, quantization and attention choices fixed: with all of them and the two axes the
  // space would pass the layout limit.
  override_axes(
      s, {"workload.remat=full", "workload.quantization=none", "workload.attention=dot_product"},
      cfg);
  // The two axes multiply any space by 2 x 3: two values of each other axis are enough (each
  // layout enumerated is a whole study, and the full space costs seconds under the sanitizers).
  for (auto& a : s.axes)
    if (a.values.size() > 2) a.values.resize(2);
  const std::size_t before = enumerate(s, cfg.json()).size();
  override_axes(s, {"parallelism.model2=1,2", "parallelism.sequence=1,2,4"}, cfg);
  const auto all = enumerate(s, cfg.json());
  CHECK(all.size() == 2 * 3 * before);
  CHECK(all.back().study["parallelism"]["model2"] == 2);
  CHECK(all.back().study["parallelism"]["sequence"] == 4);
  CHECK(candidate_label(s, all.back().values).find("model2=2 sequence=4") != std::string::npos);
  // Another model does not declare them.
  const Config bert = test::model_study("bert_large", "4x4", 32);
  SearchSpace b = default_space(bert, 32);
  CHECK_THROWS_AS(override_axis(b, "parallelism.model2=1,2", bert), ConfigError);
}

TEST_CASE("plan space: a megacore chip searches one device per chip against one per core") {
  // tpu_v4 runs its two cores as one device: the space holds both layouts, megacore first.
  const Config v4 = load_config({{"preset", "tpu_v4"},
                                 {"topology", "2x2x2"},
                                 {"workload", {{"model", "bert_large"}, {"global_batch", 16}}}});
  const SearchSpace s = default_space(v4, 8);
  REQUIRE(axis(s, "hardware.megacore"));
  CHECK(axis(s, "hardware.megacore")->values == std::vector<nlohmann::json>{true, false});
  std::set<bool> seen;
  for (const auto& c : enumerate(s, v4.json()))
    seen.insert(c.study["hardware"]["megacore"].get<bool>());
  CHECK(seen == std::set<bool>{true, false});
  // TPU v3 has no megacore; a chip of one core has nothing to join.
  CHECK_FALSE(
      axis(default_space(test::model_study("bert_large", "4x4", 32), 32), "hardware.megacore"));
  const Config one_core =
      load_config({{"preset", "tpu_v5e"},
                   {"topology", "4x4"},
                   {"workload", {{"model", "bert_large"}, {"global_batch", 16}}}});
  CHECK_FALSE(axis(default_space(one_core, 16), "hardware.megacore"));
}

namespace {
// A decoder of 8 layers on a TPU v3 2x2 slice (8 cores) with `batch` sequences, 2 heads (the
// model axis at most 2) and `experts` routed experts (0: dense).
Config small_decoder(long long batch, int experts) {
  nlohmann::json w{
      {"model", "decoder_lm"}, {"layers", 8},   {"d_model", 512}, {"heads", 2},
      {"d_ff", 2048},          {"vocab", 4096}, {"seq_len", 256}, {"global_batch", batch}};
  if (experts > 0) w.update({{"experts", experts}, {"experts_per_token", 2}});
  return load_config({{"topology", "2x2"}, {"workload", w}});
}
}  // namespace

TEST_CASE("plan space: the pipeline when the batch cannot spread, the expert axis with experts") {
  // 8 sequences over 8 cores: the study's layout (8 data replicas) is valid and fits: no
  // pipeline axes.
  const SearchSpace dense = default_space(small_decoder(8, 0), 8);
  CHECK_FALSE(axis(dense, "parallelism.pipeline"));
  CHECK_FALSE(axis(dense, "parallelism.expert"));
  // 2 sequences do not divide over the study's 8 replicas: the pipeline's degree (powers of two
  // dividing the 8 layers), the schedules, microbatches to fill it and 2 chunks per stage.
  const SearchSpace piped = default_space(small_decoder(2, 0), 8);
  REQUIRE(axis(piped, "parallelism.pipeline"));
  CHECK(axis(piped, "parallelism.pipeline")->values == std::vector<nlohmann::json>{1, 2, 4, 8});
  REQUIRE(axis(piped, "parallelism.pipeline_schedule"));
  CHECK(axis(piped, "parallelism.pipeline_schedule")->values.size() == 3);
  CHECK(axis(piped, "workload.microbatches")->values.back() == 32);
  REQUIRE(axis(piped, "parallelism.pipeline_repeats"));
  CHECK(product(piped) <= kMaxPlanLayouts);
  // Experts: the expert axis, powers of two dividing the 8 experts.
  const SearchSpace moe = default_space(small_decoder(8, 8), 8);
  REQUIRE(axis(moe, "parallelism.expert"));
  CHECK(axis(moe, "parallelism.expert")->values == std::vector<nlohmann::json>{1, 2, 4, 8});
  CHECK(product(moe) <= kMaxPlanLayouts);
}

TEST_CASE("plan space: a multislice decoder on 3 x 2^k chips a slice gets valid layouts") {
  // 2 slices of 3 x 2 TPU v3 chips (12 cores each, 24 in all), 6 heads, 8 sequences: the
  // replicas, 24 / model, must divide the 8 sequences, which no power-of-two model degree does
  // (24, 12, 6, 3). The model axis holds the divisors of gcd(6 heads, 12 cores) as well (3, 6)
  // and fsdp runs inside each slice up to its 12 cores (powers of two: 1, 2, 4, 8).
  nlohmann::json w{{"model", "decoder_lm"}, {"layers", 2},   {"d_model", 384}, {"heads", 6},
                   {"d_ff", 1536},          {"vocab", 4608}, {"seq_len", 128}, {"global_batch", 8}};
  const Config cfg = load_config(
      {{"topology",
        {{"name", "two_3x2"}, {"dims", {3, 2}}, {"wrap", {false, false}}, {"slices", 2}}},
       {"workload", w},
       {"parallelism", {{"model", 3}, {"slices", 2}}}});
  const SearchSpace s = default_space(cfg, 24);
  REQUIRE(axis(s, "parallelism.model"));
  CHECK(axis(s, "parallelism.model")->values == std::vector<nlohmann::json>{1, 2, 3, 4, 6, 8, 16});
  REQUIRE(axis(s, "parallelism.fsdp"));
  CHECK(axis(s, "parallelism.fsdp")->values == std::vector<nlohmann::json>{1, 2, 4, 8});
  CHECK(product(s) <= kMaxPlanLayouts);
  std::set<std::string> valid_model_fsdp;
  for (const Candidate& c : enumerate(s, cfg.json()))
    if (cli::check_candidate(c.study).rejected_class.empty())
      valid_model_fsdp.insert(c.study["parallelism"]["model"].dump() + "x" +
                              c.study["parallelism"]["fsdp"].dump());
  // model 3: 4 replicas a slice (fsdp 1, 2, 4); model 6: 2 (fsdp 1, 2).
  CHECK(valid_model_fsdp == std::set<std::string>{"3x1", "3x2", "3x4", "6x1", "6x2"});
}

namespace {
// A decoder of 8 layers on `slices` slices of 2x2 TPU v3 chips (8 cores each), with `batch`
// sequences.
Config sliced_decoder(long long batch, int slices = 2) {
  nlohmann::json w{
      {"model", "decoder_lm"}, {"layers", 8},   {"d_model", 512}, {"heads", 2},
      {"d_ff", 2048},          {"vocab", 4096}, {"seq_len", 256}, {"global_batch", batch}};
  return load_config(
      {{"topology",
        {{"name", "two_2x2"}, {"dims", {2, 2}}, {"wrap", {false, false}}, {"slices", slices}}},
       {"workload", w},
       {"parallelism", {{"slices", slices}}}});
}
}  // namespace

TEST_CASE("plan space: a multislice decoder searches what the slices carry, with the pipeline") {
  // 16 sequences: the study's layout (8 data replicas a slice, data across the slices) is valid
  // and fits: the slices stay data parallel, no pipeline axes.
  const SearchSpace fits = default_space(sliced_decoder(16), 16);
  CHECK_FALSE(axis(fits, "parallelism.dcn_pipeline"));
  CHECK_FALSE(axis(fits, "parallelism.dcn_fsdp"));
  CHECK_FALSE(axis(fits, "parallelism.pipeline"));
  // 2 sequences do not divide over the 16 replicas: the slices may carry fsdp or the pipeline's
  // stages instead of data (1 or the 2 slices), and the pipeline's degrees include the slices.
  const Config cfg = sliced_decoder(2);
  const SearchSpace s = default_space(cfg, 16);
  REQUIRE(axis(s, "parallelism.dcn_pipeline"));
  CHECK(axis(s, "parallelism.dcn_pipeline")->values == std::vector<nlohmann::json>{1, 2});
  REQUIRE(axis(s, "parallelism.dcn_fsdp"));
  CHECK(axis(s, "parallelism.dcn_fsdp")->values == std::vector<nlohmann::json>{1, 2});
  REQUIRE(axis(s, "parallelism.pipeline"));
  CHECK(axis(s, "parallelism.pipeline")->values == std::vector<nlohmann::json>{1, 2, 4, 8});
  CHECK(product(s) <= kMaxPlanLayouts);
  // The memory verdicts and the layout checks apply to each: some layouts with the stages
  // across the slices are valid and fit (the slices then run one pipeline on the 2 sequences),
  // and none with both dcn_pipeline and dcn_fsdp (the slices carry one or the other).
  // Every layout with the stages across the slices is checked that must be refused (the
  // pipeline's degree odd, or both across the slices: cheap to refuse); of those that may be
  // valid (the costly checks), one valid layout is enough.
  int across = 0;
  SearchSpace stages_across = s;  // the same layouts, those with dcn_pipeline 2 only enumerated
  stages_across.axes[static_cast<std::size_t>(axis(s, "parallelism.dcn_pipeline") - &s.axes[0])]
      .values = {2};
  for (const Candidate& c : enumerate(stages_across, cfg.json())) {
    const auto& par = c.study["parallelism"];
    REQUIRE(par["dcn_pipeline"] == 2);
    const bool refused = par["dcn_fsdp"] == 2 || par["pipeline"].get<int>() % 2 != 0;
    if (!refused && across > 0) continue;
    const bool valid = cli::check_candidate(c.study).rejected_class.empty();
    CHECK_FALSE((refused && valid));
    across += valid;
  }
  CHECK(across > 0);
  // Four slices: fsdp over 1, 2 (a pair of slices, data over the pairs) or all 4 of them.
  const SearchSpace four = default_space(sliced_decoder(2, 4), 32);
  REQUIRE(axis(four, "parallelism.dcn_fsdp"));
  CHECK(axis(four, "parallelism.dcn_fsdp")->values == std::vector<nlohmann::json>{1, 2, 4});
  // One slice: nothing to carry.
  CHECK_FALSE(axis(default_space(small_decoder(2, 0), 8), "parallelism.dcn_pipeline"));
}

TEST_CASE("plan counts every slice's chips in a multislice layout's rates") {
  // 2 slices of 2 x 2 chips: a layout's per-chip rates divide by the 8 chips of both slices,
  // as `run` counts them (it counted one slice's 4).
  const Topology one(topology_from_json(sliced_decoder(16).json().at("topology")));
  CHECK(cli::check_candidate(sliced_decoder(16).json()).chips == one.num_chips() * one.slices());
  CHECK(one.num_chips() * one.slices() == 8);
}

TEST_CASE("plan space: the shipped MoE studies search the expert axis") {
  // The expert axis comes before the kernel switches: quantization, then the attention kernel,
  // leave the default space (--space adds them back) when it would not fit otherwise.
  for (const char* name : {"mixtral_8x7b_v5p_256", "deepseek_v3_v5p_256"}) {
    CAPTURE(name);
    const cli::Study study = cli::load_study_file(config_dir() + "/studies/" + name + ".json", {});
    const int cores =
        static_cast<int>(Topology(study.topology).num_chips() * study.hardware.devices_per_chip);
    const SearchSpace s = default_space(study.config, cores);
    REQUIRE(axis(s, "parallelism.expert"));
    CHECK(axis(s, "parallelism.expert")->values.front() == 1);
    CHECK(product(s) <= kMaxPlanLayouts);
  }
}

TEST_CASE("plan space: the shipped pipelined multislice study searches the stages across slices") {
  // GPT-3 175B with 16 stages across 2 v5p slices: the pipeline's degree and what the slices
  // carry join the default space, the kernel switches making room for them.
  const cli::Study study =
      cli::load_study_file(config_dir() + "/studies/gpt3_175b_dcn_pipeline_v5p.json", {});
  const int cores =
      static_cast<int>(Topology(study.topology).num_chips() * study.hardware.devices_per_chip);
  const SearchSpace s = default_space(study.config, cores);
  std::string paths;
  for (const auto& a : s.axes) paths += a.path + "(" + std::to_string(a.values.size()) + ") ";
  INFO(paths);
  REQUIRE(axis(s, "parallelism.pipeline"));
  CHECK(axis(s, "parallelism.pipeline")->values == std::vector<nlohmann::json>{1, 2, 4, 8, 16});
  REQUIRE(axis(s, "parallelism.dcn_pipeline"));
  CHECK(axis(s, "parallelism.dcn_pipeline")->values == std::vector<nlohmann::json>{1, 2});
  CHECK(product(s) <= kMaxPlanLayouts);
}
