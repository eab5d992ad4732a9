// The registries: each lists what it holds, refuses a second entry of a name, and is where the
// choice lists of validation and `tpusim params` come from (models, collective algorithms,
// network levels); parameters are declared once per model. Here rather than in tests/unit
// because the collective algorithms and network levels register in the sim layer.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "core/config.hpp"
#include "core/hardware.hpp"
#include "core/param_handle.hpp"
#include "core/params.hpp"
#include "core/presets.hpp"
#include "core/registry.hpp"
#include "models/model_builder.hpp"
#include "sim/collectives/collective_algorithm.hpp"
#include "sim/network/network.hpp"

using namespace tpusim;

namespace {
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
  CHECK(registered_models() == std::vector<std::string>{"bert_large", "decoder_lm", "maskrcnn",
                                                        "resnet50", "ssd", "transformer_big"});
  CHECK(algorithm_names() ==
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
                                                                   "tpu_v5p", "tpu_v7"});
  const auto topologies = preset_names(PresetKind::Topology);
  CHECK(std::count(topologies.begin(), topologies.end(), "tpu_v3_multipod") == 1);
  CHECK(preset_names(PresetKind::Model) ==
        std::vector<std::string>{"decoder_1b", "deepseek_v3", "gpt3_175b", "mixtral_8x22b",
                                 "mixtral_8x7b", "palm_540b", "palm_62b"});
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
