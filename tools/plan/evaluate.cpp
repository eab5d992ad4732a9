#include "tools/plan/evaluate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "compiler/cmem_placement.hpp"
#include "compiler/compiler.hpp"
#include "core/errors.hpp"
#include "core/units.hpp"
#include "models/memory/memory_model.hpp"
#include "models/workload.hpp"
#include "sim/network/network.hpp"
#include "tools/study/study.hpp"
#include "tools/sweep/expand.hpp"

namespace tpusim::cli {

namespace {

/// The memory screen (docs/plan.md, "Memory") builds a decoder at these depths: it extrapolates
/// from the first two and checks that the third is in line.
constexpr std::int64_t kScreenDepths[3] = {2, 3, 4};

/// True if `bytes` live at once cannot fit in a core's HBM even with its share of CMEM
/// (compiler/cmem_placement.hpp places at most that much per core) holding some of them.
bool over_hbm(double bytes, const HardwareSpec& hw) {
  return bytes - hw.cmem_bytes_per_core() > hw.hbm_bytes_per_core * (1 + 1e-9);
}

/// Whether every route is a shortest one and the links queue what crosses them
/// (plan::step_lower_bound): not with failed links, which routes go round the other way, nor
/// with network.contention off, where a link carries several transfers at once at full rate.
bool queued_shortest_routes(const Config& cfg) {
  const NetworkOptions o = NetworkOptions::from_config(cfg);
  return o.failed_links.empty() && o.contention;
}

std::int64_t json_int(const nlohmann::json& doc, const char* section, const char* key,
                      std::int64_t otherwise) {
  if (!doc.contains(section) || !doc[section].contains(key)) return otherwise;
  const auto& v = doc[section][key];
  return v.is_number_integer() ? v.get<std::int64_t>() : otherwise;
}

/// A shallow Program's figures: the screen's memory, and the step bound and model FLOPs with
/// every buffer that fits alone counted in CMEM (place_in_cmem_optimistic).
struct AtDepth {
  ScreenedMemory memory;
  plan::StepBound bound;
  double model_flops = 0;
};

/// The study's Program at `layers` layers, partitioned, with the config and hardware it was built
/// for: no CMEM, whose greedy placement is not linear in the depth.
struct Shallow {
  Config cfg;
  HardwareSpec hw;
  Program program;
};

Shallow shallow(const Study& s, const Topology& topology, std::int64_t layers,
                OpGraphCache* graphs) {
  nlohmann::json doc = s.config.json();
  doc["workload"]["layers"] = layers;
  Shallow sh{Config(std::move(doc)), s.hardware, Program{}};
  sh.hw.cmem_bytes_per_chip = 0;
  sh.program = build_program_of(sh.cfg, topology, sh.hw, ProgramKind::Train, graphs, true);
  return sh;
}

/// The resident bytes of a Program (partitioned or compiled: the compiler's passes leave the
/// resident buffers as they are); 0 if it has no memory figures.
double resident_of(const Program& p) { return p.has_memory ? resident_bytes(p) : 0; }

/// `sh` compiled and its figures; `reach` and `routes` (queued_shortest_routes) shared by the
/// depths of one layout.
AtDepth at_depth(const Study& s, Shallow sh, const Topology& topology, plan::GroupReachCache& reach,
                 bool routes) {
  Program p = compile(std::move(sh.program), sh.hw, compiler_options(sh.cfg));
  AtDepth d;
  if (!p.has_memory) return d;
  const std::vector<double> live = live_bytes_per_op(p);  // the resident bytes included
  ScreenedMemory& m = d.memory;
  m.resident_bytes = resident_bytes(p);
  m.forward_peak_bytes = m.resident_bytes;
  for (std::size_t i = 0; i < p.ops.size(); ++i)
    if (p.ops[i].phase == Phase::Forward)
      m.forward_peak_bytes = std::max(m.forward_peak_bytes, live[i]);
  m.examples_per_step = static_cast<double>(p.examples_per_step);
  m.tokens_per_example = static_cast<double>(p.tokens_per_example);
  if (s.hardware.cmem_bytes_per_core() > 0)
    place_in_cmem_optimistic(p, s.hardware.cmem_bytes_per_core());
  d.bound = plan::step_lower_bound(p, topology, s.hardware, &reach, routes);
  d.model_flops = p.model_flops;
  return d;
}

/// f at `layers` on the line through depths 3 and 4 (at[1], at[2]).
template <class T>
double on_line(const AtDepth (&at)[3], std::int64_t layers, T get) {
  const double f3 = get(at[1]), f4 = get(at[2]);
  return f4 + static_cast<double>(layers - kScreenDepths[2]) * (f4 - f3);
}

/// True if f grows by the same from depth 2 to 3 as from 3 to 4.
template <class T>
bool in_line(const AtDepth (&at)[3], T get) {
  const double f2 = get(at[0]), f3 = get(at[1]), f4 = get(at[2]);
  return std::abs((f4 - f3) - (f3 - f2)) <= 1e-9 * std::abs(f4);
}

/// The bound at the whole depth (ScreenedMemory::bound), each term on the line through depths 3
/// and 4: the compute term is a sum over the ops, which the layers repeat (checked: in line
/// with depth 2); the bisection and ingress terms are each the largest of such sums, so convex
/// in the depth and no lower than that line. The critical path is taken only where it grows by
/// no less from 3 to 4 than from 2 to 3 (else nullopt), and from depth 4 on at the smaller
/// growth, 2 to 3's: its growth per layer can bump at shallow depths before it settles (the 1 B
/// decoder at model 8 on 4x4x1 v4 chips: 14.5, then 15.4, then 15.0 to 15.1 ms a layer), and
/// the line through 3 and 4 then overshot the whole Program's bound by 0.6 %.
std::optional<plan::StepBound> extrapolated_bound(const AtDepth (&at)[3], std::int64_t layers) {
  using B = plan::StepBound;
  if (!in_line(at, [](const AtDepth& d) { return d.bound.compute_ms; })) return std::nullopt;
  auto critical = [](const AtDepth& d) { return d.bound.critical_ms; };
  const double grew = critical(at[1]) - critical(at[0]), grows = critical(at[2]) - critical(at[1]);
  if (grows < grew - 1e-9 * std::abs(critical(at[2]))) return std::nullopt;
  B b;
  for (double B::*f : {&B::compute_ms, &B::bisection_ms, &B::ingress_ms})
    b.*f = on_line(at, layers, [&](const AtDepth& d) { return d.bound.*f; });
  b.critical_ms = critical(at[2]) + static_cast<double>(layers - kScreenDepths[2]) * grew;
  return b;
}

}  // namespace

std::optional<ScreenedMemory> screened_memory(const Study& s, const Topology& topology,
                                              OpGraphCache* graphs, bool resident_first) {
  const nlohmann::json& doc = s.config.json();
  const std::int64_t layers = json_int(doc, "workload", "layers", 0);
  const bool decoder =
      doc.contains("workload") && doc["workload"].value("model", "") == "decoder_lm";
  if (!decoder || program_kind(s.config) != ProgramKind::Train || layers <= kScreenDepths[2] ||
      json_int(doc, "parallelism", "pipeline", 1) != 1 ||
      json_int(doc, "parallelism", "dcn_pipeline", 1) != 1 ||
      json_int(doc, "workload", "first_dense_layers", 0) != 0)
    return std::nullopt;
  // f at the whole depth on the line through depths 2 and 3.
  auto extrapolate = [&](double f2, double f3) {
    return f3 + static_cast<double>(layers - kScreenDepths[1]) * (f3 - f2);
  };
  try {
    Shallow sh[2] = {shallow(s, topology, kScreenDepths[0], graphs),
                     shallow(s, topology, kScreenDepths[1], graphs)};
    if (resident_first) {  // the resident bytes from the partitioned Programs alone
      ScreenedMemory m;
      m.resident_bytes = extrapolate(resident_of(sh[0].program), resident_of(sh[1].program));
      m.forward_peak_bytes = m.resident_bytes;
      if (resident_of(sh[0].program) > 0 && over_hbm(m.resident_bytes, s.hardware)) return m;
    }
    AtDepth at[3];
    plan::GroupReachCache reach;  // the depths share the layout's mesh and network
    const bool routes = queued_shortest_routes(s.config);
    for (int k = 0; k < 2; ++k) at[k] = at_depth(s, std::move(sh[k]), topology, reach, routes);
    if (at[0].memory.resident_bytes <= 0) return std::nullopt;
    ScreenedMemory whole = at[1].memory;
    for (double ScreenedMemory::*f :
         {&ScreenedMemory::resident_bytes, &ScreenedMemory::forward_peak_bytes})
      whole.*f = extrapolate(at[0].memory.*f, at[1].memory.*f);
    // Resident buffers are per layer by construction (tests/plan/test_plan_memory_screen.cpp);
    // the forward pass is checked at a third depth.
    if (over_hbm(whole.resident_bytes, s.hardware)) return whole;
    at[2] = at_depth(s, shallow(s, topology, kScreenDepths[2], graphs), topology, reach, routes);
    if (!in_line(at, [](const AtDepth& d) { return d.memory.resident_bytes; }) ||
        !in_line(at, [](const AtDepth& d) { return d.memory.forward_peak_bytes; }))
      return std::nullopt;
    if (in_line(at, [](const AtDepth& d) { return d.model_flops; })) {
      whole.bound = extrapolated_bound(at, layers);
      whole.model_flops = on_line(at, layers, [](const AtDepth& d) { return d.model_flops; });
    }
    return whole;
  } catch (const ConfigError&) {
    return std::nullopt;  // the whole build says why
  }
}

namespace {

/// True (and `c` says why) if the memory screen's figures `m` show the layout cannot fit: what
/// they count is live at or before the peak, and a core's share of CMEM holds at most its size of
/// it.
bool screen_out(const ScreenedMemory& m, const HardwareSpec& hw, CandidateCheck& c) {
  const double hbm = hw.hbm_bytes_per_core;
  const bool resident = over_hbm(m.resident_bytes, hw);
  if (!resident && !over_hbm(m.forward_peak_bytes, hw)) return false;
  c.peak_bytes = resident ? m.resident_bytes : m.forward_peak_bytes;
  c.capacity_bytes = hbm;
  c.rejected_class = "does not fit in HBM";
  c.reason = (resident ? "the resident buffers alone (weights, optimizer state, infeed) take "
                       : "the forward pass (resident buffers and saved activations) takes ") +
             format_bytes(c.peak_bytes) + " per core, more than the " + format_bytes(hbm) +
             " of HBM";
  c.screened = true;
  return true;
}

}  // namespace

CandidateCheck check_candidate(const nlohmann::json& study, OpGraphCache* graphs, Build build) {
  const bool screen = build == Build::Screened || build == Build::Deferred;
  CandidateCheck c;
  try {
    Study s = load_study(study, {}, "(plan candidate)");
    c.resolved = s.config.json();
    const Topology topology(s.topology);
    c.chips = topology.num_chips() * topology.slices();  // every slice's, as a run's
    c.peak_flops_per_chip = s.hardware.peak_flops_per_core() * s.hardware.devices_per_chip;
    c.capacity_bytes = s.hardware.hbm_bytes_per_core;
    const auto m = screen ? screened_memory(s, topology, graphs, true) : std::nullopt;
    if (m && screen_out(*m, s.hardware, c)) return c;
    if (m && m->bound && build == Build::Deferred) {
      // Lower bounds: the peak is at least either figure less what CMEM may hold of it.
      c.peak_bytes = std::max(0.0, std::max(m->resident_bytes, m->forward_peak_bytes) -
                                       s.hardware.cmem_bytes_per_core());
      c.bound = *m->bound;
      c.examples_per_step = m->examples_per_step;
      c.tokens_per_step = m->examples_per_step * m->tokens_per_example;
      c.model_flops = m->model_flops;
      c.deferred = true;
      return c;
    }
    Program program = compile(
        build_program_of(s.config, topology, s.hardware, program_kind(s.config), graphs, true),
        s.hardware, compiler_options(s.config));
    const MemoryProfile memory = analyze_memory(program, s.hardware.hbm_bytes_per_core, 3);
    c.peak_bytes = memory.peak_bytes;
    c.capacity_bytes = memory.capacity_bytes;
    c.examples_per_step = static_cast<double>(program.examples_per_step);
    c.tokens_per_step = static_cast<double>(program.examples_per_step) *
                        static_cast<double>(program.tokens_per_example);
    c.model_flops = program.model_flops;
    if (!memory.fits()) {
      c.rejected_class = "does not fit in HBM";
      c.reason = describe_oom(memory);
      return c;
    }
    c.bound = plan::step_lower_bound(program, topology, s.hardware, nullptr,
                                     queued_shortest_routes(s.config));
    c.program_fingerprint = program_fingerprint(program);
    if (build == Build::Kept) c.program = std::make_shared<const Program>(std::move(program));
  } catch (const ConfigError& e) {
    const Problem& p = e.problems().front();
    c.rejected_class = "invalid " + (p.where.empty() ? std::string("layout") : p.where);
    c.reason = p.line();
  }
  return c;
}

namespace {

/// The Program fingerprint's hash (sweep::Fnv1a): strings by their bytes (and a separator),
/// numbers by the bytes of their double (equal doubles, equal bytes; no text formatting, which
/// cost more than building the Program).
class FingerprintHash : public sweep::Fnv1a {
 public:
  void text(const std::string& s) { bytes(s.c_str(), s.size() + 1); }  // with its NUL
  void text(const char* s) { bytes(s, std::strlen(s) + 1); }
  void num(double v) { bytes(&v, sizeof v); }
};

}  // namespace

std::string program_fingerprint(const Program& program) {
  FingerprintHash h;
  for (const auto& a : program.mesh) {
    h.text(a.name);
    h.num(a.size);
  }
  h.num(static_cast<double>(program.examples_per_step));
  for (const Op& op : program.ops) {
    h.text(op.kind);
    h.text(op.is_collective ? "C" : "c");
    h.text(to_string(op.dtype));
    h.text(to_string(op.phase));
    h.num(static_cast<double>(op.deps.size()));
    for (int d : op.deps) h.num(d);
    if (op.is_collective) {
      const CollectiveSpec& c = op.collective;
      h.text(to_string(c.kind));
      h.text(to_string(c.dtype));
      h.text(c.wrap ? "w" : "o");
      h.num(c.bytes);
      h.num(c.shift);
      h.num(static_cast<double>(c.axes.size()));
      for (const auto& axis : c.axes) h.text(axis);
      h.num(static_cast<double>(c.replica_groups.size()));
      for (const auto& g : c.replica_groups) {
        h.num(static_cast<double>(g.size()));
        for (int m : g) h.num(m);
      }
      continue;
    }
    const ComputeCost& k = op.compute;
    h.num(k.matmul ? 1 : 0);
    if (k.matmul)
      for (double v :
           {double(k.matmul->batch), double(k.matmul->m), double(k.matmul->k), double(k.matmul->n)})
        h.num(v);
    for (double v : {k.vpu_elements, k.vpu_ops_per_element, k.bytes_read, k.bytes_written, k.flops})
      h.num(v);
    h.num(k.measured_ns ? 1 : 0);
    if (k.measured_ns) h.num(*k.measured_ns);
  }
  return h.hex();
}

void add_rejection(Rejections& r, const std::string& cls, const std::string& label,
                   const std::string& reason, std::size_t count) {
  RejectedClass& rc = r[cls];
  if (rc.count == 0) {
    rc.example = label;
    rc.reason = reason;
  }
  rc.count += count;
}

}  // namespace tpusim::cli
