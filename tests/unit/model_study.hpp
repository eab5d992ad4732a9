#pragma once
// Helpers for the models/ tests: a study from inline JSON, its graph and its Program.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "core/config.hpp"
#include "core/hardware.hpp"
#include "models/model_builder.hpp"
#include "models/parallelism/layout.hpp"
#include "models/program.hpp"
#include "models/workload.hpp"
#include "topologies/topology.hpp"

namespace tpusim::test {

/// {"topology": topology, "workload": {"model": model, "global_batch": batch}, "parallelism": p}
inline Config model_study(const std::string& model, const std::string& topology, long long batch,
                          nlohmann::json parallelism = nlohmann::json::object(),
                          nlohmann::json workload_extra = nlohmann::json::object()) {
  nlohmann::json w{{"model", model}, {"global_batch", batch}};
  if (workload_extra.is_object()) w.update(workload_extra);
  if (!parallelism.is_object()) parallelism = nlohmann::json::object();
  return load_config({{"topology", topology}, {"workload", w}, {"parallelism", parallelism}});
}

inline Program program_of(const Config& cfg) {
  Topology topo(topology_from_json(cfg.json().at("topology")));
  return build_program(cfg, topo, HardwareSpec::from_config(cfg));
}

/// The op graph of one replica processing `batch` examples with the study's dimensions.
inline OpGraph graph_of(const Config& cfg, long long batch) {
  return make_model_builder(cfg.string("workload.model"))->build(cfg, batch);
}

inline double sum_flops(const Program& p) {
  double s = 0;
  for (const auto& op : p.ops)
    if (!op.is_collective) s += op.compute.flops;
  return s;
}

/// The graph node named `name`, or nullptr if there is none.
inline const OpNode* node_named(const OpGraph& g, const std::string& name) {
  for (int v = 0; v < g.size(); ++v)
    if (g.node(v).name == name) return &g.node(v);
  return nullptr;
}

/// The layout of one core running the whole model (Layout's defaults), 32 MiB gradient buckets.
inline Layout single_core() {
  Layout l;
  l.grad_bucket_bytes = 32.0 * 1024 * 1024;
  return l;
}

/// The op named `name` (the test fails if there is none).
inline const Op& op_named(const Program& p, const std::string& name) {
  for (const auto& op : p.ops)
    if (op.name == name) return op;
  FAIL("no op " << name);
  return p.ops.front();
}

/// The index of the first op named `name` (the test fails if there is none).
inline int index_of(const Program& p, const std::string& name) {
  for (int i = 0; i < static_cast<int>(p.ops.size()); ++i)
    if (p.ops[i].name == name) return i;
  FAIL("no op " << name);
  return -1;
}

/// Bytes of activations live while op i runs.
inline double activations_at(const Program& p, int i) {
  double sum = 0;
  for (int j = 0; j <= i; ++j) {
    const OpOutput& o = p.ops[j].output;
    if (o.cls == MemoryClass::Activations && (j == i || o.last_use >= i)) sum += o.bytes;
  }
  return sum;
}

}  // namespace tpusim::test
