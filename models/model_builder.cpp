#include "models/model_builder.hpp"

#include <algorithm>
#include <limits>
#include <map>

#include "core/errors.hpp"
#include "core/param_handle.hpp"
#include "core/registry.hpp"

namespace tpusim {
namespace {
using T = ParamType;

Registry<ModelFactory>& registry() {
  static Registry<ModelFactory> r{"model"};
  return r;
}
// The features each registered model names, and each feature's declaring function.
std::map<std::string, std::vector<std::string>>& features_of_models() {
  static std::map<std::string, std::vector<std::string>> m;
  return m;
}
using FeatureDeclarer = void (*)(const std::string& model);
Registry<FeatureDeclarer>& feature_registry() {
  static Registry<FeatureDeclarer> r{"model feature"};
  return r;
}
}  // namespace

// clang-format off
const Param<std::string> kWorkloadModel{{"workload.model", T::String, "", "bert_large", "the model whose training step is simulated", -kInf, kInf, {}, "", "", false, &registered_models}};
// clang-format on

const ParamFamily<std::int64_t>& global_batch_param() {
  static const ParamFamily<std::int64_t> family{
      {"workload.global_batch", T::Integer, "examples", nullptr, "", 1, 1e9, {}, "workload.model"}};
  return family;
}

ModelRegistrar::ModelRegistrar(ModelInfo info, ModelFactory factory) {
  registry().add(info.name, std::move(factory));
  global_batch_param().declare(info.name, info.global_batch, info.batch_meaning);
  for (const auto& feature : info.features)
    if (const FeatureDeclarer* declare = feature_registry().find(feature)) (*declare)(info.name);
  features_of_models()[info.name] = std::move(info.features);
}

ModelFeatureRegistrar::ModelFeatureRegistrar(const char* feature,
                                             void (*declare_for)(const std::string& model)) {
  feature_registry().add(feature, declare_for);
  for (const auto& [model, features] : features_of_models())
    if (std::find(features.begin(), features.end(), feature) != features.end()) declare_for(model);
}

std::vector<std::string> model_features(const std::string& model) {
  auto it = features_of_models().find(model);
  return it == features_of_models().end() ? std::vector<std::string>{} : it->second;
}

std::vector<std::string> registered_model_features() { return feature_registry().names(); }

std::unique_ptr<ModelBuilder> make_model_builder(const std::string& name) {
  const ModelFactory* f = registry().find(name);
  return f ? (*f)() : nullptr;
}

std::vector<std::string> registered_models() { return registry().names(); }

std::unique_ptr<ModelBuilder> model_builder_for(const Config& cfg) {
  const std::string name = kWorkloadModel(cfg);
  if (auto b = make_model_builder(name)) return b;
  throw ConfigError(kWorkloadModel.path(), "'" + name + "' is not a registered model; allowed: " +
                                               registry().names_text());
}

}  // namespace tpusim
