#pragma once
// Workload builders: one small class per model, registered by name, picked by
// `workload.model`. A builder declares its dimensions as parameters (ParamRegistrar entries with
// when_path "workload.model" and when_value its name) and turns them into an OpGraph.
//
// Adding a model is one new file:
//
//   class MyNet final : public ModelBuilder {
//     OpGraph build(const Config& cfg, std::int64_t replica_batch) const override { ... }
//   };
//   const ParamRegistrar kMyNetParams{{
//     {"workload.layers", ParamType::Integer, "", 24, "encoder layers", 1, 1000, {},
//      "workload.model", "my_net"}}};
//   const ModelRegistrar kMyNetRegister{"my_net", [] { return std::make_unique<MyNet>(); }};
//
// Registrars are named after their file (kMyNetParams in my_net.cpp): unity builds
// (TPUSIM_UNITY) compile several files as one, where two kParams would collide.
// The name must also be among the choices of "workload.model" (models/model_builder.cpp).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "models/op_graph.hpp"

namespace tpusim {

class ModelBuilder {
 public:
  virtual ~ModelBuilder() = default;

  /// The training graph of one model replica that processes `replica_batch` examples per step:
  /// the forward ops (annotated with their model/spatial splits and the SplitConstraints those
  /// splits impose), then derive_training_graph() for backward and optimizer.
  /// Reads the builder's own declared parameters from `cfg`.
  virtual OpGraph build(const Config& cfg, std::int64_t replica_batch) const = 0;

  /// The evaluation graph of one model replica that processes `replica_batch` examples per eval
  /// step: the forward ops only (no backward, no optimizer), followed by the model's on-device
  /// post-processing (metrics, decoding, NMS) as the TPU code runs it. nullopt where the builder
  /// has no evaluation program.
  virtual std::optional<OpGraph> build_eval(const Config& cfg, std::int64_t replica_batch) const {
    return std::nullopt;
  }

  /// True if the builder annotates model-parallel splits (parallelism.model > 1 allowed).
  virtual bool supports_model_parallel() const { return false; }
  /// True if the builder annotates spatial splits (parallelism.spatial > 1 allowed).
  virtual bool supports_spatial() const { return false; }
};

using ModelFactory = std::function<std::unique_ptr<ModelBuilder>()>;

/// Registers a builder under `name` during static initialisation.
struct ModelRegistrar {
  ModelRegistrar(const char* name, ModelFactory factory);
};

/// The builder registered as `name`, or nullptr.
std::unique_ptr<ModelBuilder> make_model_builder(const std::string& name);
/// Names of the registered builders, sorted.
std::vector<std::string> registered_models();

/// The builder `cfg` names in workload.model. Throws ConfigError("workload.model", ...) naming
/// the registered models if the name is declared but has no builder in this build.
std::unique_ptr<ModelBuilder> model_builder_for(const Config& cfg);

}  // namespace tpusim
