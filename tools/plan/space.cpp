#include "tools/plan/space.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <numeric>
#include <set>

#include "core/errors.hpp"
#include "core/hardware.hpp"
#include "core/mxu_rates.hpp"
#include "core/params.hpp"
#include "models/builders/decoder_params.hpp"
#include "models/model_builder.hpp"
#include "models/parallelism/batch_norm_groups.hpp"
#include "models/parallelism/layout.hpp"
#include "models/parallelism/rules/axis_registry.hpp"
#include "models/parallelism/spatial.hpp"
#include "models/workload.hpp"
#include "tools/plan/evaluate.hpp"
#include "topologies/topology_params.hpp"

namespace tpusim::plan {
namespace {

// Bounds of the default space. Wider spaces are one --space option away; these keep a default
// search of the largest slice to a few hundred simulations (docs/plan.md).
constexpr int kMaxModelDefault = 64;    // BERT and Transformer have 16 heads
constexpr int kMaxSpatialDefault = 16;  // MLPerf v0.7 used 8 (SSD, Mask R-CNN)
constexpr int kMaxSpatialWDefault = 16;
constexpr int kMaxBnGroupCoresDefault = 256;
// Language models: gradient accumulation passes searched by default (MaxText's
// gradient_accumulation_steps); more is one --space option away.
constexpr int kMaxMicrobatchesDefault = 4;

std::vector<nlohmann::json> powers_of_two(long long from, long long up_to) {
  std::vector<nlohmann::json> v;
  for (long long p = from; p <= up_to; p *= 2) v.push_back(p);
  return v;
}

// Short names for labels; the full key for anything else.
const std::map<std::string, std::string>& short_names() {
  static const std::map<std::string, std::string> m{{"parallelism.model", "model"},
                                                    {"parallelism.model2", "model2"},
                                                    {"parallelism.sequence", "sequence"},
                                                    {"parallelism.spatial", "spatial"},
                                                    {"parallelism.spatial_w", "w"},
                                                    {"parallelism.bn_group_cores", "bn"},
                                                    {"parallelism.weight_update_sharding", "wus"},
                                                    {"parallelism.grad_bucket_MiB", "bucket_MiB"},
                                                    {"parallelism.grad_dtype", "grad"},
                                                    {"parallelism.pipeline", "pipeline"},
                                                    {"parallelism.pipeline_schedule", "schedule"},
                                                    {"parallelism.pipeline_repeats", "repeats"},
                                                    {"parallelism.expert", "expert"},
                                                    {"parallelism.dcn_pipeline", "dcn_pipeline"},
                                                    {"parallelism.dcn_fsdp", "dcn_fsdp"},
                                                    {"workload.capacity_factor", "capacity"},
                                                    {"workload.microbatches", "microbatches"},
                                                    {"hardware.megacore", "megacore"},
                                                    {"parallelism.fsdp", "fsdp"},
                                                    {"workload.remat", "remat"},
                                                    {"workload.quantization", "quant"},
                                                    {"workload.attention", "attention"},
                                                    {"workload.microbatches", "microbatches"},
                                                    {"workload.global_batch", "batch"}};
  return m;
}

nlohmann::json parse_value(const std::string& text) {
  auto v = nlohmann::json::parse(text, nullptr, false);
  if (!v.is_discarded()) return v;
  // A number JSON does not write ("01", "+2", "1."): the number, so that "01,1" is one value
  // listed twice, not two layouts that are the same.
  char* end = nullptr;
  const double d = std::strtod(text.c_str(), &end);
  if (!text.empty() && end == text.c_str() + text.size() && std::isfinite(d))
    return d == std::floor(d) && std::fabs(d) < 9e15 ? nlohmann::json(static_cast<long long>(d))
                                                     : nlohmann::json(d);
  return nlohmann::json(text);
}

/// The choices the parameter registry declares for `path` where it applies to `base` (e.g.
/// workload.remat for decoder_lm), as JSON strings; empty if the study does not declare it.
std::vector<nlohmann::json> registry_choices(const Config& base, const std::string& path) {
  std::vector<nlohmann::json> out;
  if (!base.has(path)) return out;
  for (const ParamSpec* spec : ParamRegistry::instance().find(path)) {
    if (!spec->when_path.empty()) {
      const auto* when = json_at(base.json(), spec->when_path);
      if (!when || !when->is_string() || when->get<std::string>() != spec->when_value) continue;
    }
    for (const auto& c : spec->allowed_choices()) out.push_back(c);
    break;
  }
  return out;
}

/// The remat policies the default space tries: the rungs of MaxText's memory ladder, from the
/// least kept to the most (the other policies, the offloaded ones among them, by --space: all
/// twelve times the other axes would pass kMaxPlanLayouts).
const std::vector<std::string> kDefaultRematLadder = {"full", "save_qkv_proj",
                                                      "save_dot_except_mlp", "minimal"};

/// The registry's choices for `path` that the default space searches: for workload.remat the
/// ladder's rungs the registry declares; for workload.quantization none and the 8-bit types
/// the chip runs faster than bf16 (TPU v4's int8 rate equals bf16's: nothing to gain); for the
/// others every choice.
std::vector<nlohmann::json> default_choices(const Config& base, const std::string& path) {
  std::vector<nlohmann::json> out;
  for (const auto& c : registry_choices(base, path)) {
    const std::string v = c.get<std::string>();
    if (path == "workload.remat" &&
        std::find(kDefaultRematLadder.begin(), kDefaultRematLadder.end(), v) ==
            kDefaultRematLadder.end())
      continue;
    if (path == "workload.quantization" && v != "none" &&
        (v == "int8" ? kHwMxuInt8Rate(base) : kHwMxuFp8Rate(base)) <= 1)
      continue;
    out.push_back(c);
  }
  return out;
}

bool is_language_model(const Config& base) { return kDecoderLmRemat.if_applies(base).has_value(); }

int slices_of(const Config& base) {
  return std::max<int>(1, static_cast<int>(kTopologySlices.if_applies(base).value_or(1)));
}

/// The model axis: powers of two up to kMaxModelDefault and, for a language model, the degrees
/// that divide its model split's sizes (heads, ...: the op graph's constraints) and a slice's
/// cores, so that a slice of 3 x 2^k cores (PaLM's 3072 chips) gets 3, 6, 12, ... as well.
std::vector<nlohmann::json> model_degrees(const Config& base, int cores) {
  const int up_to = std::min(cores, kMaxModelDefault);
  std::vector<long long> v;
  for (const auto& p : powers_of_two(1, up_to)) v.push_back(p.get<long long>());
  if (is_language_model(base)) {
    long long g = cores / slices_of(base);
    const OpGraph graph = model_builder_for(base)->build(base, 1);
    for (const auto& c : graph.constraints())
      if (c.axis == "model") g = std::gcd(g, static_cast<long long>(c.size));
    for (long long d = 1; d <= std::min<long long>(g, up_to); ++d)
      if (g % d == 0 && (d & (d - 1)) != 0) v.push_back(d);
  }
  std::sort(v.begin(), v.end());
  return {v.begin(), v.end()};
}

/// A language model's axes (the study declares workload.remat): MaxText's mesh (fsdp inside
/// data; tensor is parallelism.model, already an axis; data, across slices too, is what the
/// others leave) and its memory and speed switches, each with the choices its parameter
/// declares, so that a policy, quantization or attention kernel added to the registry is
/// searched with no line here. The gradient buckets, their dtype and weight-update sharding
/// stay at the study's values (FSDP shards the optimizer already; --space adds them).
void add_language_model_axes(SearchSpace& s, const Config& base, int cores) {
  if (!kParallelismFsdp.if_applies(base)) return;
  // FSDP stays inside each slice (hybrid multislice, models/workload.cpp): up to a slice's cores.
  s.axes.push_back({"parallelism.fsdp", powers_of_two(1, cores / slices_of(base))});
  for (const char* path : {"workload.remat", "workload.quantization", "workload.attention"}) {
    auto choices = default_choices(base, path);
    if (!choices.empty()) s.axes.push_back({path, choices});
  }
  if (kWorkloadMicrobatches.if_applies(base))
    s.axes.push_back({"workload.microbatches", powers_of_two(1, kMaxMicrobatchesDefault)});
}

long long space_size(const SearchSpace& s) {
  long long n = 1;
  for (const auto& a : s.axes) n *= static_cast<long long>(a.values.size());
  return n;
}

// Adds `axis` if the space stays within kMaxPlanLayouts (the limit that keeps a default search
// near a minute, docs/limits.md); in the order called, so the first axes win the room.
void add_within_limit(SearchSpace& s, SpaceAxis axis) {
  const auto limit = static_cast<long long>(kMaxPlanLayouts);
  if (axis.values.size() < 2) return;
  for (auto& a : s.axes)
    if (a.path == axis.path) {  // an axis already there: wider, if the space stays within
      const auto grown = space_size(s) / static_cast<long long>(a.values.size()) *
                         static_cast<long long>(axis.values.size());
      if (grown <= limit) a.values = axis.values;
      return;
    }
  if (space_size(s) * static_cast<long long>(axis.values.size()) <= limit)
    s.axes.push_back(std::move(axis));
}

// Powers of two up to `up_to` that divide `n`.
std::vector<nlohmann::json> dividing_powers(long long n, long long up_to) {
  std::vector<nlohmann::json> v;
  for (long long p = 1; p <= up_to && p <= n; p *= 2)
    if (n % p == 0) v.push_back(p);
  return v;
}

// Makes room for an axis of `values` values: removes the kernel switches (quantization, then
// the attention kernel), one at a time, until it fits within kMaxPlanLayouts. The mesh axes of
// issue 49 (the experts', the pipeline's, the slices') come before them; --space adds them back.
void make_room(SearchSpace& s, std::size_t values) {
  for (const char* path : {"workload.quantization", "workload.attention"}) {
    if (space_size(s) * static_cast<long long>(values) <= static_cast<long long>(kMaxPlanLayouts))
      return;
    s.axes.erase(std::remove_if(s.axes.begin(), s.axes.end(),
                                [&](const SpaceAxis& a) { return a.path == path; }),
                 s.axes.end());
  }
}

// The study's own pipeline degree (the registered "pipeline" axis; 1 when it has none).
long long study_pipeline(const Config& base) {
  for (const AxisSpec& a : registered_axes())
    if (a.name == "pipeline" && a.degree) return a.degree->if_applies(base).value_or(1);
  return 1;
}

// Issue 49's axes for a decoder (docs/pipeline.md, docs/experts.md), each only while the space
// stays within kMaxPlanLayouts (the expert, slice and pipeline axes first making room, see
// make_room): with experts, the expert axis (powers of two dividing them) and, with capacity
// dispatch, the capacity factor; when the study's own layout does not fit in HBM or its batch
// does not divide over its replicas (too few sequences for the devices without a pipeline), or
// a multislice study is pipelined already: the pipeline's degree (powers of two dividing the
// layers, up to 16), on multislice what the slices carry (parallelism.dcn_pipeline: 1 or the
// slices, then parallelism.dcn_fsdp: the powers of two dividing the slices, and the slices),
// the schedule, more microbatches to fill it (up to 32) and two chunks per stage. The model's
// layers and experts are read from its op graph.
void add_pipeline_and_expert_axes(SearchSpace& s, const Config& base, int cores) {
  const OpGraph g = model_builder_for(base)->build(base, 1);
  std::int64_t experts = 0;
  bool capacity = false;
  for (int v = 0; v < g.size(); ++v) {
    const OpNode& n = g.node(v);
    if (n.expert_weights && n.matmul) experts = n.matmul->batch;
    capacity = capacity || n.name.find("moe.dispatch_einsum") != std::string::npos;
  }
  if (experts > 0) {
    auto degrees = dividing_powers(experts, cores);
    make_room(s, degrees.size());
    add_within_limit(s, {"parallelism.expert", std::move(degrees)});
    if (capacity) add_within_limit(s, {"workload.capacity_factor", {1.0, 1.25, 2.0}});
  }
  if (g.layers() < 2) return;
  const int slices = slices_of(base);
  const std::string own = cli::check_candidate(base.json()).rejected_class;
  if (own != "does not fit in HBM" && own != "invalid workload.global_batch" &&
      !(slices > 1 && study_pipeline(base) > 1))
    return;
  auto stages = dividing_powers(g.layers(), std::min(cores, 16));
  make_room(s, stages.size());
  add_within_limit(s, {"parallelism.pipeline", std::move(stages)});
  // Multislice: what the slices carry, data (1) or, instead, the pipeline's stages, or fsdp
  // over some or all of them, data over the rest (MaxText's dcn_pipeline_parallelism,
  // dcn_fsdp_parallelism x dcn_data_parallelism), in that order.
  if (slices > 1) {
    std::vector<nlohmann::json> fsdp_slices = dividing_powers(slices, slices / 2);
    fsdp_slices.push_back(slices);
    for (SpaceAxis carried : {SpaceAxis{"parallelism.dcn_pipeline", {1, slices}},
                              SpaceAxis{"parallelism.dcn_fsdp", fsdp_slices}})
      if (base.has(carried.path)) {
        make_room(s, carried.values.size());
        add_within_limit(s, std::move(carried));
      }
  }
  add_within_limit(s, {"parallelism.pipeline_schedule", {"gpipe", "1f1b", "interleaved"}});
  for (const auto& a : s.axes)
    if (a.path == "workload.microbatches") {
      add_within_limit(s, {a.path, powers_of_two(1, 32)});
      break;
    }
  add_within_limit(s, {"parallelism.pipeline_repeats", {1, 2}});
}

}  // namespace

std::vector<std::string> SearchSpace::paths() const {
  std::vector<std::string> p;
  for (const auto& a : axes) p.push_back(a.path);
  return p;
}

SearchSpace default_space(const Config& base, int cores) {
  auto builder = model_builder_for(base);
  SearchSpace s;
  // An axis the model does not read is not shown: a language model has no spatial split, a CNN
  // no model split (--space can still add either, as any declared key).
  if (builder->supports_model_parallel())
    s.axes.push_back({"parallelism.model", model_degrees(base, cores)});
  if (builder->supports_spatial())
    s.axes.push_back(
        {"parallelism.spatial", powers_of_two(1, std::min(cores, kMaxSpatialDefault))});
  if (spatial_w_param().if_applies(base))
    s.axes.push_back(
        {"parallelism.spatial_w", powers_of_two(1, std::min(cores, kMaxSpatialWDefault))});
  if (bn_group_param().if_applies(base)) {
    auto groups = powers_of_two(2, std::min(cores, kMaxBnGroupCoresDefault));
    groups.insert(groups.begin(), 0);
    s.axes.push_back({"parallelism.bn_group_cores", groups});
  }
  if (is_language_model(base)) {
    add_language_model_axes(s, base, cores);
  } else {
    s.axes.push_back({"parallelism.weight_update_sharding", {false, true}});
    s.axes.push_back({"parallelism.grad_bucket_MiB", {8, 32, 128}});
    s.axes.push_back({"parallelism.grad_dtype", {"bf16", "f32"}});
  }
  // A chip that runs its cores as one device (megacore: the study's hardware turns it on, as the
  // tpu_v4 and tpu_v5p presets do) can also run one replica per core: search both. TPU v3 has
  // no megacore, so a study that leaves it off keeps one device per core (--space adds it).
  if (kHwCoresPerChip(base) > 1 && kHwMegacore(base))
    s.axes.push_back({kHwMegacore.path(), {true, false}});
  if (is_language_model(base)) add_pipeline_and_expert_axes(s, base, cores);
  return s;
}

void override_axis(SearchSpace& space, const std::string& assignment, const Config& base) {
  const auto eq = assignment.find('=');
  const std::string where = "--space " + assignment;
  if (eq == std::string::npos || eq == 0)
    throw ConfigError(where, "expected PATH=V1,V2,... e.g. --space parallelism.model=1,2,4");
  const std::string path = assignment.substr(0, eq);
  std::vector<nlohmann::json> values;
  std::string rest = assignment.substr(eq + 1);
  for (std::size_t start = 0; start <= rest.size();) {
    const auto comma = rest.find(',', start);
    const std::string item =
        rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) throw ConfigError(where, "an empty value in the list");
    values.push_back(parse_value(item));
    if (std::count(values.begin(), values.end(), values.back()) > 1)
      throw ConfigError(where, "'" + item + "' is listed twice; list each value once");
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (auto& axis : space.axes)
    if (axis.path == path) {
      axis.values = values;
      return;
    }
  if (base.has(path) && path.rfind("topology", 0) != 0) {
    space.axes.push_back({path, values});
    return;
  }
  std::string allowed;
  for (const auto& a : space.axes) allowed += (allowed.empty() ? "" : ", ") + a.path;
  throw ConfigError(where, "'" + path +
                               "' is neither an axis of this study's search space nor a key the "
                               "study declares (topology excluded); axes: " +
                               allowed);
}

void override_axes(SearchSpace& space, const std::vector<std::string>& assignments,
                   const Config& base) {
  std::set<std::string> given;
  for (const auto& s : assignments) {
    const std::string path = s.substr(0, s.find('='));
    if (!path.empty() && !given.insert(path).second)
      throw ConfigError("--space " + s, "'" + path +
                                            "' is given twice; give an axis once, with all its "
                                            "values (--space " +
                                            path + "=V1,V2,...)");
    override_axis(space, s, base);
  }
}

void set_batch_per_chip(SearchSpace& space, const std::string& range, long long chips) {
  long long lo = 0, hi = 0;
  char colon = 0, extra = 0;
  const std::string where = "--batch-per-chip " + range;
  if (std::sscanf(range.c_str(), "%lld%c%lld%c", &lo, &colon, &hi, &extra) != 3 || colon != ':' ||
      lo < 1 || hi < lo || hi > (1LL << 20))
    throw ConfigError(where, "expected LO:HI with 1 <= LO <= HI <= 1048576, e.g. 1:16");
  std::vector<nlohmann::json> batches;
  for (long long b = lo; b <= hi; b *= 2) batches.push_back(b * chips);
  for (auto& axis : space.axes)
    if (axis.path == "workload.global_batch") {
      axis.values = batches;
      return;
    }
  space.axes.insert(space.axes.begin(), {"workload.global_batch", batches});
}

std::vector<Candidate> enumerate(const SearchSpace& space, const nlohmann::json& base,
                                 std::size_t max_candidates) {
  std::size_t total = 1;
  for (const auto& a : space.axes) {
    if (a.values.empty()) throw ConfigError("--space " + a.path, "the axis has no values");
    if (total > max_candidates / a.values.size())
      throw ConfigError(
          "--space",
          "the search space has more than " + std::to_string(max_candidates) + " layouts, " +
              past_limit(static_cast<double>(kMaxPlanLayouts), "layouts", "kMaxPlanLayouts") +
              "; fix some axes with --space PATH=VALUE");
    total *= a.values.size();
  }
  std::vector<Candidate> out;
  out.reserve(total);
  std::vector<std::size_t> pick(space.axes.size(), 0);
  for (std::size_t n = 0; n < total; ++n) {
    Candidate c;
    c.study = base;
    for (std::size_t i = 0; i < space.axes.size(); ++i) {
      c.values.push_back(space.axes[i].values[pick[i]]);
      json_set(c.study, space.axes[i].path, c.values.back());
    }
    out.push_back(std::move(c));
    for (std::size_t i = space.axes.size(); i-- > 0;) {  // last axis fastest
      if (++pick[i] < space.axes[i].values.size()) break;
      pick[i] = 0;
    }
  }
  return out;
}

Candidate candidate_of(const SearchSpace& space, const nlohmann::json& study) {
  Candidate c;
  c.study = study;
  for (const auto& a : space.axes) {
    const auto* v = json_at(study, a.path);
    nlohmann::json value = v ? *v : nlohmann::json();
    // A resolved default reads 32.0 where the space lists 32: the same layout.
    if (value.is_number_float() && value.get<double>() == std::floor(value.get<double>()) &&
        std::fabs(value.get<double>()) < 9.0e15)
      value = static_cast<std::int64_t>(value.get<double>());
    c.values.push_back(value);
  }
  return c;
}

std::string candidate_label(const SearchSpace& space, const std::vector<nlohmann::json>& values) {
  std::string out;
  for (std::size_t i = 0; i < space.axes.size() && i < values.size(); ++i) {
    const auto it = short_names().find(space.axes[i].path);
    const std::string name = it == short_names().end() ? space.axes[i].path : it->second;
    const auto& v = values[i];
    std::string text = v.is_string()    ? v.get<std::string>()
                       : v.is_boolean() ? (v.get<bool>() ? "on" : "off")
                                        : v.dump();
    out += (out.empty() ? "" : " ") + name + "=" + text;
  }
  return out;
}

}  // namespace tpusim::plan
