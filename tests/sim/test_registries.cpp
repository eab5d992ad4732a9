// The registries: each lists what it holds, refuses a second entry of a name, and is where the
// choice lists of validation and `tpusim params` come from (models, collective algorithms,
// network levels); parameters are declared once per model. Here rather than in tests/unit
// because the collective algorithms and network levels register in the sim layer.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <tuple>

#include "core/config.hpp"
#include "core/hardware.hpp"
#include "core/param_handle.hpp"
#include "core/params.hpp"
#include "core/presets.hpp"
#include "core/registry.hpp"
#include "models/model_builder.hpp"
#include "models/ops.hpp"
#include "models/training.hpp"
#include "sim/collectives/collective_algorithm.hpp"
#include "sim/network/network.hpp"

using namespace tpusim;

// docs/design.md, "Where to add": a model is one file with one registration line, and so is a
// collective algorithm; these throwaway ones stand in for such files (what the file holds, and
// nothing else in the tree changes). Their names start with "throwaway_".
namespace {
// clang-format off
const Param<std::int64_t> kThrowawayWidth{{"workload.width", ParamType::Integer, "", 64, "the throwaway net's width", 1, 1e6, {}, "workload.model", "throwaway_net"}};
// clang-format on
class ThrowawayNet final : public ModelBuilder {
 public:
  OpGraph build(const Config& cfg, std::int64_t replica_batch) const override {
    OpGraph g;
    const std::int64_t w = kThrowawayWidth(cfg);
    g.add(weight_matmul("dense", replica_batch, w, w, false));
    derive_training_graph(g, OptimizerKind::Adam);
    return g;
  }
};
const ModelRegistrar kThrowawayNetRegister{{"throwaway_net", 32, "rows per training step"},
                                           [] { return std::make_unique<ThrowawayNet>(); }};

// An all-reduce algorithm that plans as the ring does, and an all-to-all one that plans as
// direct does.
class ThrowawayRing final : public DescribedAlgorithm {
 public:
  ThrowawayRing() : DescribedAlgorithm("a ring under another name") {}
  GroupPlan plan(const Machine& m, CollectiveKind kind,
                 const std::vector<int>& group) const override {
    return make_algorithm("ring", "test")->plan(m, kind, group);
  }
};
const AlgorithmRegistrar kThrowawayRing{
    "throwaway_ring", [] { return std::unique_ptr<CollectiveAlgorithm>(new ThrowawayRing); }};
class ThrowawayExchange final : public AllToAllAlgorithm {
 public:
  GroupPlan plan(const Machine& m, const std::vector<int>& group) const override {
    return make_all_to_all("direct")->plan(m, group);
  }
  double transfers(const Machine& m, const std::vector<int>& group) const override {
    return make_all_to_all("direct")->transfers(m, group);
  }
};
const AllToAllRegistrar kThrowawayExchange{
    "throwaway_exchange", [] { return std::unique_ptr<AllToAllAlgorithm>(new ThrowawayExchange); }};

// The names a registry holds but the throwaway ones above.
std::vector<std::string> shipped(std::vector<std::string> names) {
  names.erase(std::remove_if(names.begin(), names.end(),
                             [](const std::string& n) { return n.rfind("throwaway_", 0) == 0; }),
              names.end());
  return names;
}
ParamSpec batch_spec(const char* model) {
  return {"workload.global_batch",
          ParamType::Integer,
          "examples",
          8,
          "examples per step",
          1,
          1e9,
          {},
          "workload.model",
          model};
}

std::vector<std::string> allowed(const std::string& path) {
  const auto specs = ParamRegistry::instance().find(path);
  REQUIRE(specs.size() == 1);
  return specs[0]->allowed_choices();
}

std::string problem_of(const nlohmann::json& study) {
  try {
    load_config(study);
  } catch (const ConfigError& e) {
    REQUIRE(e.problems().size() == 1);
    return e.problems()[0].what;
  }
  FAIL("the study was accepted");
  return "";
}
}  // namespace

TEST_CASE("a registry lists what it holds, sorted, and refuses a name twice") {
  Registry<int> r{"thing"};
  r.add("beta", 2);
  r.add("alpha", 1);
  CHECK(r.names() == std::vector<std::string>{"alpha", "beta"});
  CHECK(r.names_text() == "alpha, beta");
  REQUIRE(r.find("beta") != nullptr);
  CHECK(*r.find("beta") == 2);
  CHECK(r.find("gamma") == nullptr);
  CHECK_THROWS_AS(r.add("alpha", 3), std::logic_error);
  CHECK(*r.find("alpha") == 1);  // the first entry stands
  CHECK(r.size() == 2);
}

TEST_CASE("a second declaration of a key for the same model is refused") {
  ParamRegistry r;  // a throwaway registry: the global one is filled at start-up
  r.add(batch_spec("net_a"));
  r.add(batch_spec("net_b"));  // another model: its own declaration
  CHECK_THROWS_AS(r.add(batch_spec("net_a")), std::logic_error);
  // A declaration without a condition overlaps every conditional one, and the other way round.
  ParamSpec unconditional = batch_spec("");
  unconditional.when_path.clear();
  CHECK_THROWS_AS(r.add(unconditional), std::logic_error);
  ParamRegistry plain;
  plain.add(unconditional);
  CHECK_THROWS_AS(plain.add(batch_spec("net_a")), std::logic_error);
  CHECK(r.find("workload.global_batch").size() == 2);
}

TEST_CASE("workload.global_batch is declared once per registered model, in examples") {
  const auto specs = ParamRegistry::instance().find("workload.global_batch");
  const auto models = registered_models();
  REQUIRE(specs.size() == models.size());
  std::set<std::string> declared_for;
  for (const auto* s : specs) {
    CHECK(s->unit == "examples");
    CHECK(s->when_path == "workload.model");
    declared_for.insert(s->when_value);
  }
  CHECK(declared_for == std::set<std::string>(models.begin(), models.end()));
}

TEST_CASE("no key of the global registry is declared twice under one condition") {
  std::set<std::string> seen;
  for (const auto& s : ParamRegistry::instance().all())
    CHECK(seen.insert(s.path + " when " + s.when_path + "=" + s.when_value).second);
}

TEST_CASE("the choice lists come from the registries") {
  CHECK(allowed("workload.model") == registered_models());
  std::vector<std::string> algorithms{"auto"};
  for (const auto& a : algorithm_names()) algorithms.push_back(a);
  CHECK(allowed("collectives.algorithm") == algorithms);
  CHECK(allowed("network.fidelity") == network_names());
  // What the registries hold today (docs/design.md, "Where to add").
  std::vector<std::string> all_to_all{"auto"};
  for (const auto& a : all_to_all_names()) all_to_all.push_back(a);
  CHECK(allowed("collectives.all_to_all_algorithm") == all_to_all);
  CHECK(shipped(registered_models()) == std::vector<std::string>{"bert_large", "decoder_lm",
                                                                 "maskrcnn", "resnet50", "ssd",
                                                                 "transformer_big"});
  CHECK(shipped(all_to_all_names()) == std::vector<std::string>{"direct", "per_dimension"});
  CHECK(shipped(algorithm_names()) ==
        std::vector<std::string>{"bidirectional_ring", "halving_doubling", "onchip", "one_shot",
                                 "per_dimension", "recursive_doubling", "ring", "shift_doubling"});
  CHECK(network_names() == std::vector<std::string>{"flow", "message", "packet"});
}

TEST_CASE("an unknown name is one problem that lists the registry's names") {
  std::string models;
  for (const auto& m : registered_models()) models += (models.empty() ? " " : ", ") + m;
  CHECK(problem_of({{"workload", {{"model", "alexnet"}}}}) ==
        "\"alexnet\" is not allowed; expected one of" + models);
  const std::string algo = problem_of({{"collectives", {{"algorithm", "tree"}}}});
  for (const auto& a : algorithm_names()) CHECK(algo.find(a) != std::string::npos);
}

TEST_CASE("a handle reads the value its declaration names, given or defaulted") {
  const Config dflt = load_config(nlohmann::json::object());
  CHECK(kHwMxuDim(dflt) ==
        ParamRegistry::instance().find("hardware.mxu.dim")[0]->default_value.get<std::int64_t>());
  const Config set = load_config({{"hardware", {{"mxu", {{"dim", 256}}}}}});
  CHECK(kHwMxuDim(set) == 256);
  CHECK(kHwMxuDim.path() == "hardware.mxu.dim");
  // One handle for the key every model declares: each model's own default.
  for (const auto& m : registered_models()) {
    const Config c = load_config({{"workload", {{"model", m}}}});
    std::int64_t expected = -1;
    for (const auto* s : ParamRegistry::instance().find("workload.global_batch"))
      if (s->when_value == m) expected = s->default_value.get<std::int64_t>();
    CHECK(global_batch_param()(c) == expected);
  }
}

TEST_CASE("the preset registry lists the chip, topology and model files of configs") {
  CHECK(preset_names(PresetKind::Chip) == std::vector<std::string>{"tpu_v3", "tpu_v4",
                                                                   "tpu_v4_megacore", "tpu_v5e",
                                                                   "tpu_v5p", "tpu_v6e", "tpu_v7"});
  const auto topologies = preset_names(PresetKind::Topology);
  CHECK(std::count(topologies.begin(), topologies.end(), "tpu_v3_multipod") == 1);
  CHECK(preset_names(PresetKind::Model) ==
        std::vector<std::string>{"decoder_1b", "deepseek_v3", "gemma_7b", "gpt3_175b", "gptj_6b",
                                 "llama2_13b", "llama2_70b", "llama2_7b", "llama3_70b", "llama3_8b",
                                 "mixtral_8x22b", "mixtral_8x7b", "palm_540b", "palm_62b"});
  // Each chip preset is a study of its own that validates, and each name resolves to its file.
  for (const auto& chip : preset_names(PresetKind::Chip)) {
    INFO(chip);
    CHECK(load_config({{"preset", chip}}).json().contains("hardware"));
    CHECK(std::filesystem::equivalent(preset_file(chip), config_dir() + "/" + chip + ".json"));
  }
  for (const auto& t : topologies)
    CHECK(std::filesystem::equivalent(preset_file(t), config_dir() + "/topologies/" + t + ".json"));
  // Studies and sweep files are no presets.
  CHECK(preset_file("bert_large_16").empty());
  CHECK(preset_file("../configs/tpu_v3").empty());
  // An unknown name: one problem listing each kind's presets, and the closest name.
  const std::string error = problem_of({{"preset", "tpu_v33"}});
  CHECK_THAT(error, Catch::Contains("chip: tpu_v3, tpu_v4, tpu_v4_megacore") &&
                        Catch::Contains("topology: tpu_v3_2048") &&
                        Catch::Contains("model: decoder_1b") &&
                        Catch::EndsWith("did you mean 'tpu_v3'?"));
}

TEST_CASE("where to add: a model in one file with one registration line is a choice and builds") {
  const auto models = registered_models();
  CHECK(std::count(models.begin(), models.end(), "throwaway_net") == 1);
  const auto choices = allowed("workload.model");
  CHECK(std::count(choices.begin(), choices.end(), "throwaway_net") == 1);
  // Its registration declared its workload.global_batch, with its default.
  const Config c = load_config({{"workload", {{"model", "throwaway_net"}, {"width", 128}}}});
  CHECK(global_batch_param()(c) == 32);
  // It builds: the forward matmul of 32 rows of width 128, 2 m k n FLOPs.
  const OpGraph g = model_builder_for(c)->build(c, global_batch_param()(c));
  REQUIRE(g.size() >= 1);
  CHECK(g.node(0).flops == Approx(2.0 * 32 * 128 * 128));
  // Its parameters are its own: another model does not take them.
  CHECK_THAT(problem_of({{"workload", {{"model", "bert_large"}, {"width", 128}}}}),
             Catch::Contains("is not a parameter here"));
}

TEST_CASE("every parallelism feature a model's registration names is registered") {
  const auto features = registered_model_features();
  CHECK(features == std::vector<std::string>{"batch_norm_groups", "spatial_w"});
  for (const auto& m : registered_models())
    for (const auto& f : model_features(m)) {
      INFO(m << ": " << f);
      CHECK(std::count(features.begin(), features.end(), f) == 1);
    }
  // Their parameters are declared for exactly the models that name them.
  for (const auto& [feature, path] :
       {std::pair{"spatial_w", "parallelism.spatial_w"},
        std::pair{"batch_norm_groups", "parallelism.bn_group_cores"}}) {
    std::set<std::string> named, declared;
    for (const auto& m : registered_models()) {
      const auto f = model_features(m);
      if (std::count(f.begin(), f.end(), feature)) named.insert(m);
    }
    for (const auto* s : ParamRegistry::instance().find(path)) declared.insert(s->when_value);
    CHECK(declared == named);
  }
  CHECK(model_features("resnet50") == std::vector<std::string>{"spatial_w", "batch_norm_groups"});
  CHECK(model_features("maskrcnn") == std::vector<std::string>{"spatial_w"});
}

TEST_CASE("where to add: a collective algorithm in one file with one registration line") {
  for (const auto& [names, path, name] :
       {std::tuple{algorithm_names(), "collectives.algorithm", "throwaway_ring"},
        std::tuple{all_to_all_names(), "collectives.all_to_all_algorithm", "throwaway_exchange"}}) {
    INFO(path);
    CHECK(std::count(names.begin(), names.end(), name) == 1);
    const auto choices = allowed(path);
    CHECK(std::count(choices.begin(), choices.end(), name) == 1);
    const std::string section = std::string(path).substr(std::string("collectives.").size());
    CHECK(load_config({{"collectives", {{section, name}}}}).string(path) == name);
  }
}

TEST_CASE("where to add: a chip preset is one new file in configs") {
  // A copy of configs/ with one file more, as a user adds it; nothing else changes.
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("tpusim_presets_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(config_dir(), dir, fs::copy_options::recursive);
  {
    std::ofstream f(dir / "tpu_v99.json");
    f << R"({"preset": "tpu_v7", "hardware": {"clock_MHz": 2000}})";
  }
  const std::string before = config_dir();
  ::setenv("TPUSIM_CONFIG_DIR", dir.c_str(), 1);
  const auto chips = preset_names(PresetKind::Chip);
  const Config c = load_config({{"preset", "tpu_v99"}});
  const std::string unknown = problem_of({{"preset", "tpu_v98"}});
  ::setenv("TPUSIM_CONFIG_DIR", before.c_str(), 1);
  fs::remove_all(dir);
  CHECK(std::count(chips.begin(), chips.end(), "tpu_v99") == 1);
  CHECK(c.number("hardware.clock_MHz") == 2000);
  CHECK_THAT(unknown, Catch::Contains("tpu_v99"));
}
