#include "models/model_builder.hpp"

#include <algorithm>
#include <limits>
#include <map>

#include "core/errors.hpp"
#include "core/params.hpp"

namespace tpusim {
namespace {
using T = ParamType;

// The models tpusim knows. A name without a registered builder in this build is reported by
// model_builder_for() with the list of those that are registered.
// One parameter per line reads as a table.
// clang-format off
const ParamRegistrar kModelBuilderParams{{
    {"workload.model", T::String, "", "bert_large", "the model whose training step is simulated", -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity(), {"bert_large", "transformer_big", "resnet50", "ssd", "maskrcnn", "decoder_lm"}},
    // Defaults: the global batches of the largest MLPerf v0.7 runs (reference table), declared
    // here for every model so that a study of a model whose builder is missing still validates
    // and gets the clear "no builder" error from model_builder_for().
    {"workload.global_batch", T::Integer, "examples", 8192, "sequences per training step over all replicas", 1, 1e9, {}, "workload.model", "bert_large"},
    {"workload.global_batch", T::Integer, "examples", 2048, "packed 256-token sentence pairs per training step over all replicas", 1, 1e9, {}, "workload.model", "transformer_big"},
    {"workload.global_batch", T::Integer, "examples", 65536, "images per training step over all replicas", 1, 1e9, {}, "workload.model", "resnet50"},
    {"workload.global_batch", T::Integer, "examples", 4096, "images per training step over all replicas", 1, 1e9, {}, "workload.model", "ssd"},
    {"workload.global_batch", T::Integer, "examples", 256, "images per training step over all replicas", 1, 1e9, {}, "workload.model", "maskrcnn"},
    {"workload.global_batch", T::Integer, "examples", 256, "sequences per training step over all replicas", 1, 1e9, {}, "workload.model", "decoder_lm"},
}};
// clang-format on

std::map<std::string, ModelFactory>& registry() {
  static std::map<std::string, ModelFactory> r;
  return r;
}
}  // namespace

ModelRegistrar::ModelRegistrar(const char* name, ModelFactory factory) {
  registry()[name] = std::move(factory);
}

std::unique_ptr<ModelBuilder> make_model_builder(const std::string& name) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : it->second();
}

std::vector<std::string> registered_models() {
  std::vector<std::string> out;
  for (const auto& [name, f] : registry()) out.push_back(name);
  return out;
}

std::unique_ptr<ModelBuilder> model_builder_for(const Config& cfg) {
  const std::string name = cfg.string("workload.model");
  if (auto b = make_model_builder(name)) return b;
  std::string list;
  for (const auto& n : registered_models()) list += (list.empty() ? "" : ", ") + n;
  throw ConfigError("workload.model", "'" + name +
                                          "' has no builder in this build of tpusim; models "
                                          "available: " +
                                          list);
}

}  // namespace tpusim
