#pragma once
// Workload builders: one small class per model, registered by name, picked by
// `workload.model`. A builder declares its dimensions as typed parameters (Param handles whose
// when_path is "workload.model" and when_value its name), turns them into an OpGraph and names
// its host operations (input pipeline, evaluation metric).
//
// Adding a model is one new file, models/builders/my_net.cpp, with one registration line:
//
//   const char* kMyNetModel = "my_net";
//   const Param<std::int64_t> kMyNetLayers{{"workload.layers", ParamType::Integer, "", 24,
//       "encoder layers", 1, 1000, {}, "workload.model", kMyNetModel}};
//   class MyNet final : public ModelBuilder {
//     OpGraph build(const Config& cfg, std::int64_t replica_batch) const override {
//       ... kMyNetLayers(cfg) ...
//     }
//   };
//   const ModelRegistrar kMyNetRegister{{kMyNetModel, 256, "sequences per training step over all
//   replicas"},
//                                       [] { return std::make_unique<MyNet>(); }};
//
// The registration declares the model's workload.global_batch and adds its name to the choices
// of workload.model. Registrars and handles are named after their file (kMyNet... in my_net.cpp):
// unity builds (TPUSIM_UNITY) compile several files as one, where two kParams would collide.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/param_handle.hpp"
#include "models/input_pipeline.hpp"
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

  /// A serving step of one model replica over `replica_batch` sequences: prefill (the prompts'
  /// forward, writing their KV cache) or, `decode`, one new token per sequence reading its
  /// cache; the weights only as the forward reads them, the KV cache among the resident buffers
  /// (OpGraph::resident_per_core). nullopt where the builder has no serving steps.
  virtual std::optional<OpGraph> build_serving(const Config& cfg, std::int64_t replica_batch,
                                               bool decode) const {
    return std::nullopt;
  }

  /// True if the builder annotates model-parallel splits (parallelism.model > 1 allowed).
  virtual bool supports_model_parallel() const { return false; }
  /// True if the builder annotates spatial splits (parallelism.spatial > 1 allowed).
  virtual bool supports_spatial() const { return false; }

  /// The host input pipeline's operations on one example of `pass`, added to `p`
  /// (models/input_pipeline.hpp). By default the example's pre-tokenised record is parsed.
  virtual void input_pipeline(PipelineBuilder& p, const Config& cfg, PipelinePass pass) const {
    p.parse_record();
  }
  /// The host-side evaluation metric over one evaluation of `examples` examples, added to `m`
  /// (its name, whether it blocks the next device loop, its operations). By default the device
  /// computes the metric ("device_accuracy": the host reads a count).
  virtual void eval_metric(MetricBuilder& m, const Config& cfg, double examples) const {}
};

using ModelFactory = std::function<std::unique_ptr<ModelBuilder>()>;

/// What a model registers besides its builder: its name and its workload.global_batch (the
/// default, and what the examples of a batch are).
struct ModelInfo {
  const char* name;
  std::int64_t global_batch;  ///< the default of workload.global_batch
  const char* batch_meaning;  ///< e.g. "images per training step over all replicas"
  /// The parallelism features the model takes, each a ModelFeatureRegistrar's name
  /// ("spatial_w": a spatial split along W too; "batch_norm_groups": cross-replica batch norm):
  /// the feature's file declares its parameters for the model, so no parallelism file names
  /// a model.
  std::vector<std::string> features = {};
};

/// Registers a builder under `info.name` during static initialisation, declares its
/// workload.global_batch. A name registered twice is refused (std::logic_error).
struct ModelRegistrar {
  ModelRegistrar(ModelInfo info, ModelFactory factory);
};

/// A parallelism feature that models take by naming it in their ModelInfo::features:
/// `declare_for` declares its parameters for one such model (once per model, whichever of the
/// model's and the feature's registrars runs first).
struct ModelFeatureRegistrar {
  ModelFeatureRegistrar(const char* feature, void (*declare_for)(const std::string& model));
};
/// The features `model`'s registration names (empty for an unknown model).
std::vector<std::string> model_features(const std::string& model);
/// The names of the registered features, sorted.
std::vector<std::string> registered_model_features();

/// workload.model: the registered models' names are its choices.
extern const Param<std::string> kWorkloadModel;
/// workload.global_batch, declared once per registered model.
const ParamFamily<std::int64_t>& global_batch_param();

/// The builder registered as `name`, or nullptr.
std::unique_ptr<ModelBuilder> make_model_builder(const std::string& name);
/// Names of the registered builders, sorted.
std::vector<std::string> registered_models();

/// The builder `cfg` names in workload.model (validation allows only registered names).
std::unique_ptr<ModelBuilder> model_builder_for(const Config& cfg);

}  // namespace tpusim
