#pragma once
// The entry point of models/ for the rest of tpusim: a validated study in, the SPMD Program out.
//
//   Topology topo(topology_from_json(cfg.json().at("topology")));
//   HardwareSpec hw = HardwareSpec::from_config(cfg);
//   Program program = build_program(cfg, topo, hw);
//   DeviceMesh mesh(topo, hw.devices_per_chip, program.mesh);   // == workload_mesh_axes(...)
//
// Parameters read here (declared in models/parallelism/layout.cpp, by the builders and in
// workload.cpp): workload.model, workload.program, workload.global_batch, workload.eval_batch,
// the model's dimensions, parallelism.model,
// parallelism.spatial, parallelism.weight_update_sharding, parallelism.grad_bucket_MiB,
// parallelism.grad_dtype.
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/hardware.hpp"
#include "core/param_handle.hpp"
#include "models/op_graph.hpp"
#include "models/program.hpp"
#include "topologies/device_mesh.hpp"
#include "topologies/topology.hpp"

namespace tpusim {

/// workload.microbatches (declared in workload.cpp), for readers that decide from the study
/// alone (plan searches gradient accumulation where the model declares it).
extern const Param<std::int64_t> kWorkloadMicrobatches;

/// The mesh axes of a study on `topology`: {"data", "model"} with sizes data x model = cores,
/// and {"data", "spatial", "model"} when parallelism.spatial > 1. The innermost (last) axis lands
/// on the closest cores (DeviceMesh). Throws ConfigError naming the JSON path when the layout
/// does not fit the cores (a degree that does not divide them, a mesh larger than the topology).
std::vector<MeshAxis> workload_mesh_axes(const Config& cfg, const Topology& topology,
                                         const HardwareSpec& hw);

/// Builds the model named by workload.model for one replica's share of the global batch,
/// derives backward and optimizer, and partitions it into the Program every core runs
/// (per-core costs, collectives over the mesh axes of workload_mesh_axes). The Program is
/// validated. Throws ConfigError naming the JSON path for every inconsistent layout (batch not
/// divisible by the data replicas, a model degree not dividing the heads, an unknown model...).
Program build_program(const Config& cfg, const Topology& topology, const HardwareSpec& hw);

/// Which program of a study: the training step, the evaluation step, or a serving step (prefill
/// of prompts, decode of one token per sequence: ModelBuilder::build_serving).
enum class ProgramKind { Train, Eval, Prefill, Decode };
/// workload.program of the study.
ProgramKind program_kind(const Config& cfg);

/// A model replica's op graph, or the problems that stopped its builder.
struct BuiltGraph {
  std::optional<OpGraph> graph;
  ProblemList problems;
};

/// Op graphs kept for reuse across studies that differ only in what the graph does not read
/// (tpusim plan checks thousands of layouts of one model; docs/plan.md). An entry holds a graph
/// (or its builder's problems), the extra key of the call (the program kind and the batch the
/// graph is built for) and every study value its builder read (recorded by Config's accessors
/// while it built): it serves a study with the same values at those paths. At most `capacity`
/// entries, the least recently used dropped first. Thread-safe.
class OpGraphCache {
 public:
  explicit OpGraphCache(std::size_t capacity = 16) : capacity_(capacity) {}
  std::shared_ptr<const BuiltGraph> get(const Config& cfg, const std::string& key,
                                        const std::function<BuiltGraph()>& build);
  std::size_t hits() const { return hits_; }
  std::size_t misses() const { return misses_; }

 private:
  struct Entry {
    std::vector<std::string> paths;  ///< what the builder read
    std::string values;              ///< the key and the values there
    std::shared_ptr<const BuiltGraph> built;
    std::uint64_t used = 0;
  };
  std::mutex mutex_;
  std::size_t capacity_;
  std::vector<Entry> entries_;
  std::uint64_t clock_ = 0;
  std::size_t hits_ = 0, misses_ = 0;
};

/// The study paths `cfg`'s model builder reads to build its training graph (of one example):
/// what OpGraphCache keys on. Throws ConfigError as the builder does.
std::vector<std::string> graph_read_paths(const Config& cfg);

/// build_program() for an explicit kind, whatever workload.program says. Eval: the builder's
/// build_eval() at workload.eval_batch examples over all replicas (forward and on-device
/// post-processing), partitioned on the same layout: only the collectives its model and
/// spatial splits need (no gradient sync, no optimizer). Throws ConfigError("workload.program")
/// when the model has no evaluation program, ConfigError("workload.eval_batch") when the eval
/// batch does not divide over the data replicas.
/// With `cache`, the op graph is taken from it when an earlier call built the same one. With
/// `first_problem`, a problem of the layout or the batch found before the op graph is built is
/// thrown at once (tpusim plan reports a layout's first problem only); without, the graph is
/// built to report its constraints' problems together with it.
Program build_program_of(const Config& cfg, const Topology& topology, const HardwareSpec& hw,
                         ProgramKind kind, OpGraphCache* cache = nullptr,
                         bool first_problem = false);

/// Global examples of one step of `kind`: workload.global_batch or the eval batch.
std::int64_t step_examples(const Config& cfg, ProgramKind kind);

}  // namespace tpusim
