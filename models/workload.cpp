#include "models/workload.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "core/param_handle.hpp"
#include "core/params.hpp"
#include "models/model_builder.hpp"
#include "models/parallelism/layout.hpp"
#include "models/parallelism/mesh_on_torus.hpp"
#include "models/parallelism/partitioner.hpp"
#include "models/parallelism/rules/axis_registry.hpp"

namespace tpusim {
namespace {
using T = ParamType;

// One parameter per line reads as a table.
// clang-format off
const Param<std::string> kWorkloadProgram{{"workload.program", T::String, "", "train", "the program tpusim run simulates: train (one training step), eval (one evaluation step: forward and the model's on-device post-processing at workload.eval_batch), prefill (decoder_lm: the forward of workload.global_batch prompts of workload.seq_len tokens, writing their KV cache) or decode (decoder_lm: one new token for each of workload.global_batch sequences after workload.kv_length cached tokens)", -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity(), {"train", "eval", "prefill", "decode"}}};
}  // namespace
// Read elsewhere through its handle (workload.hpp).
const Param<std::int64_t> kWorkloadMicrobatches{{"workload.microbatches", T::Integer, "", 1, "gradient accumulation: each replica runs its share of the global batch as this many forward and backward passes, summing the weight gradients in place (f32 accumulators), then syncs gradients and updates once", 1, 1 << 16}};
namespace {
const Param<std::int64_t> kWorkloadEvalBatch{{"workload.eval_batch", T::Integer, "examples", 0, "examples per evaluation step over all replicas; 0: workload.global_batch", 0, 1e9}};
// clang-format on

int num_cores(const Topology& topology, const HardwareSpec& hw) {
  return topology.num_chips() * hw.devices_per_chip;
}

// The layout errors that depend on the model: supported axes, batch and dimension divisibility.
// Added to `problems`, so that all of them are reported at once.
void check_layout(const Config& cfg, const ModelBuilder& builder, const Layout& l,
                  ProblemList& problems) {
  const std::string model = kWorkloadModel(cfg);
  if (l.model > 1 && !builder.supports_model_parallel())
    problems.add("parallelism.model", std::to_string(l.model) + ": " + model +
                                          " has no model-parallel split; allowed: 1");
  if (l.spatial > 1 && !builder.supports_spatial())
    problems.add("parallelism.spatial", std::to_string(l.spatial) + ": " + model +
                                            " has no spatial partitioning; allowed: 1");
}

void check_batch(const std::string& path, std::int64_t batch, const Layout& l,
                 ProblemList& problems) {
  const std::int64_t replicas = static_cast<std::int64_t>(l.batch_shards()) * l.batch_slices();
  if (batch % replicas != 0)
    problems.add(path,
                 std::to_string(batch) + " examples do not divide over the " + l.describe() +
                     (l.batch_slices() > 1 ? " in each of " + std::to_string(l.slices) + " slices"
                                           : std::string()) +
                     "; allowed: a multiple of " + std::to_string(replicas));
}

// Multislice: the data axis spans every slice of the topology (MaxText's dcn_data_parallelism);
// fsdp, sequence and model axes stay inside each slice (ici_*). A sharded optimizer over the data
// replicas across slices is not modelled.
void check_slices(const Layout& l, const Topology& topology, ProblemList& problems) {
  if (l.slices != topology.slices())
    problems.add("parallelism.slices",
                 std::to_string(l.slices) +
                     " is not allowed with topology.slices = " + std::to_string(topology.slices()) +
                     "; allowed: " + std::to_string(topology.slices()) +
                     " (the data axis spans every slice)");
  if (l.slices > 1 && l.weight_update_sharding)
    problems.add("parallelism.weight_update_sharding",
                 "true with parallelism.slices = " + std::to_string(l.slices) +
                     ": a sharded optimizer across slices is not modelled; allowed: false");
}

void check_constraints(const OpGraph& g, const Layout& l, ProblemList& problems) {
  for (const auto& c : g.constraints()) {
    const int degree = l.degree(c.axis);
    if (degree > 1 && c.size % degree != 0)
      problems.add("parallelism." + c.axis,
                   std::to_string(degree) + " does not divide " + c.path + " = " +
                       std::to_string(c.size) + " (" + c.what + "); allowed: a divisor of " +
                       std::to_string(c.size) + " that also divides the cores, or set " + c.path +
                       " to a multiple of " + std::to_string(degree) + " (padding)");
  }
}

// A Program built from a study passes Program::validate's limits unless the study's sizes push
// an op past them. Its ops grow with the batch, so the message names the batch's path and the
// largest batch that keeps the biggest op within the limits (Program::validate would name only
// the op, which the user never wrote).
void check_op_sizes(const Program& program, const std::string& batch_path, std::int64_t batch) {
  double worst = 0;  // the largest share of a limit an op takes
  std::size_t at = 0;
  const char* what = "bytes";
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    const double bytes = op.is_collective
                             ? op.collective.bytes
                             : std::max(op.compute.bytes_read, op.compute.bytes_written);
    const double flops = op.is_collective ? 0 : op.compute.flops;
    for (auto [share, unit] :
         {std::pair{bytes / kMaxBytes, "bytes"}, std::pair{flops / kMaxOpFlops, "FLOPs"}})
      if (share > worst) worst = share, at = i, what = unit;
  }
  if (!(worst > 1)) return;
  const bool bytes = std::string(what) == "bytes";
  const std::string past = bytes ? past_limit(kMaxBytes, "bytes", "kMaxBytes")
                                 : past_limit(kMaxOpFlops, "FLOPs", "kMaxOpFlops");
  const auto fit = static_cast<std::int64_t>(std::floor(static_cast<double>(batch) / worst));
  const std::string op = "op " + program.ops[at].name + "'s " + what + " per core " + past;
  if (fit < 1)
    throw ConfigError("workload", "the model's sizes make " + op +
                                      "; allowed: smaller workload sizes (widths, sequence, "
                                      "vocabulary) or more cores");
  throw ConfigError(batch_path, std::to_string(batch) + " examples make " + op +
                                    " (its sizes grow with the batch); allowed: at most about " +
                                    std::to_string(fit) + " examples, or more cores");
}

// The op graph of one replica's microbatch of `kind`, or the problems that stop it.
BuiltGraph build_graph(const Config& cfg, const ModelBuilder& builder, ProgramKind kind,
                       std::int64_t micro_batch, int micro) {
  const bool eval = kind == ProgramKind::Eval;
  const bool serving = kind == ProgramKind::Prefill || kind == ProgramKind::Decode;
  BuiltGraph b;
  try {
    if (serving) {
      b.graph = builder.build_serving(cfg, micro_batch, kind == ProgramKind::Decode);
      if (!b.graph)
        b.problems.add(kWorkloadProgram.path(), kWorkloadProgram(cfg) + ": " + kWorkloadModel(cfg) +
                                                    " has no serving steps; allowed: train, eval "
                                                    "(prefill and decode: decoder_lm)");
    } else if (eval) {
      b.graph = builder.build_eval(cfg, micro_batch);
      // The study asked for the eval step (workload.program), or tpusim train needs the model's
      // evaluation (the study did not say eval): name what the user wrote.
      if (!b.graph && kWorkloadProgram(cfg) == "eval")
        b.problems.add(kWorkloadProgram.path(), "eval: " + kWorkloadModel(cfg) +
                                                    " has no evaluation program in this build; "
                                                    "allowed: train");
      else if (!b.graph)
        b.problems.add(kWorkloadModel.path(),
                       kWorkloadModel(cfg) +
                           " has no evaluation program in this build, which tpusim train "
                           "simulates at every evaluation; allowed with train: a model that has "
                           "one (bert_large, resnet50, ssd, maskrcnn, transformer_big), or tpusim "
                           "run for its step");
    } else {
      b.graph.emplace(builder.build(cfg, micro_batch));
      b.graph->microbatches = micro;
    }
  } catch (const ConfigError& e) {
    for (const auto& p : e.problems()) b.problems.add(p.where, p.what);
  }
  return b;
}

}  // namespace

std::vector<MeshAxis> workload_mesh_axes(const Config& cfg, const Topology& topology,
                                         const HardwareSpec& hw) {
  return read_layout(cfg, num_cores(topology, hw)).mesh_axes();
}

ProgramKind program_kind(const Config& cfg) {
  const std::string p = kWorkloadProgram(cfg);
  if (p == "eval") return ProgramKind::Eval;
  if (p == "prefill") return ProgramKind::Prefill;
  if (p == "decode") return ProgramKind::Decode;
  return ProgramKind::Train;
}

std::int64_t step_examples(const Config& cfg, ProgramKind kind) {
  const std::int64_t eval = kWorkloadEvalBatch(cfg);
  return kind == ProgramKind::Eval && eval > 0 ? eval : global_batch_param()(cfg);
}

// core/config.cpp: where this thread records the paths it reads from any Config.
std::vector<std::string>*& config_read_record();

namespace {
/// Records the paths this thread reads from any Config while it lives (nested: the outer
/// record resumes after). The builders read the study through Config's accessors (their Param
/// handles), never the whole document, so the record is all a graph depends on.
class ReadRecord {
 public:
  ReadRecord() : outer_(config_read_record()) { config_read_record() = &paths; }
  ~ReadRecord() { config_read_record() = outer_; }
  ReadRecord(const ReadRecord&) = delete;
  ReadRecord& operator=(const ReadRecord&) = delete;
  std::vector<std::string> paths;

 private:
  std::vector<std::string>* outer_;
};

// The values of `paths` in `cfg` after `key`, one string ("~" where a path is absent).
std::string read_values(const Config& cfg, const std::vector<std::string>& paths,
                        const std::string& key) {
  std::string out = key;
  for (const auto& p : paths) {
    const nlohmann::json* v = json_at(cfg.json(), p);
    out += '|';
    out += v ? v->dump() : "~";
  }
  return out;
}
}  // namespace

std::shared_ptr<const BuiltGraph> OpGraphCache::get(const Config& cfg, const std::string& key,
                                                    const std::function<BuiltGraph()>& build) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Entries of one model read the same paths: their values are read from `cfg` once.
    const std::vector<std::string>* read = nullptr;
    std::string values;
    for (auto& e : entries_) {
      if (!read || e.paths != *read) {
        values = read_values(cfg, e.paths, key);
        read = &e.paths;
      }
      if (e.values == values) {
        e.used = ++clock_;
        ++hits_;
        return e.built;
      }
    }
    ++misses_;
  }
  std::shared_ptr<const BuiltGraph> built;
  std::vector<std::string> paths;
  {
    ReadRecord reads;
    built = std::make_shared<const BuiltGraph>(build());
    paths = std::move(reads.paths);
  }
  Entry e{paths, read_values(cfg, paths, key), built, 0};
  std::lock_guard<std::mutex> lock(mutex_);
  e.used = ++clock_;
  entries_.push_back(std::move(e));
  if (entries_.size() > capacity_)
    entries_.erase(
        std::min_element(entries_.begin(), entries_.end(),
                         [](const Entry& a, const Entry& b) { return a.used < b.used; }));
  return built;
}

std::vector<std::string> graph_read_paths(const Config& cfg) {
  ReadRecord reads;
  model_builder_for(cfg)->build(cfg, 1);
  return std::move(reads.paths);
}

Program build_program(const Config& cfg, const Topology& topology, const HardwareSpec& hw) {
  return build_program_of(cfg, topology, hw, program_kind(cfg));
}

Program build_program_of(const Config& cfg, const Topology& topology, const HardwareSpec& hw,
                         ProgramKind kind, OpGraphCache* cache, bool first_problem) {
  const Layout layout = read_layout(cfg, num_cores(topology, hw));
  const auto builder = model_builder_for(cfg);
  ProblemList problems;
  check_mesh_on_torus(layout, topology, hw.devices_per_chip, problems);
  check_layout(cfg, *builder, layout, problems);
  check_slices(layout, topology, problems);
  const bool eval = kind == ProgramKind::Eval;
  const bool serving = kind == ProgramKind::Prefill || kind == ProgramKind::Decode;
  const std::int64_t batch = step_examples(cfg, kind);
  const std::string& batch_path =
      eval && kWorkloadEvalBatch(cfg) > 0 ? kWorkloadEvalBatch.path() : global_batch_param().path();
  check_batch(batch_path, batch, layout, problems);
  // The graph of one replica is built even if the batch does not divide (its share rounded up),
  // so that the layout's dimension constraints are reported together with the batch.
  const std::int64_t replicas =
      static_cast<std::int64_t>(layout.batch_shards()) * layout.batch_slices();
  const std::int64_t replica_batch = std::max<std::int64_t>(1, (batch + replicas - 1) / replicas);
  const int micro = eval || serving ? 1 : static_cast<int>(kWorkloadMicrobatches(cfg));
  if (replica_batch % micro != 0)
    problems.add(
        kWorkloadMicrobatches.path(),
        std::to_string(micro) + " microbatches do not divide the " + std::to_string(replica_batch) +
            " examples of a replica; allowed: a divisor of " + std::to_string(replica_batch));
  const std::int64_t micro_batch = std::max<std::int64_t>(1, replica_batch / micro);
  if (first_problem) problems.throw_if_any();
  if (layout.model > 1 && !builder->supports_model_parallel()) problems.throw_if_any();
  if (layout.spatial > 1 && !builder->supports_spatial()) problems.throw_if_any();
  const std::shared_ptr<const BuiltGraph> built =
      cache ? cache->get(cfg,
                         std::to_string(static_cast<int>(kind)) + "/" +
                             std::to_string(micro_batch) + "/" + std::to_string(micro),
                         [&] { return build_graph(cfg, *builder, kind, micro_batch, micro); })
            : std::make_shared<const BuiltGraph>(
                  build_graph(cfg, *builder, kind, micro_batch, micro));
  for (const auto& p : built->problems.items()) problems.add(p.where, p.what);
  const std::optional<OpGraph>& graph = built->graph;
  if (graph) check_constraints(*graph, layout, problems);
  if (graph)
    for (const auto& a : registered_axes())
      if (a.check && (layout.registered_degree(a.name) > 1 ||
                      (a.name == "pipeline" && layout.pipeline_stages() > 1)))
        a.check(*graph, layout, problems);
  problems.throw_if_any();
  Program program = partition(*graph, layout);
  // One slice's Program; the other slices run the same on their share of the batch (with
  // parallelism.dcn_pipeline, on the same batch: their stages make one pipeline).
  program.examples_per_step *= layout.batch_slices();
  program.model_flops *= layout.batch_slices();
  program.model = kWorkloadModel(cfg);
  check_op_sizes(program, batch_path, batch);
  program.validate();
  return program;
}

}  // namespace tpusim
