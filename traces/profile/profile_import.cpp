// A TPU profile -> one SPMD Program. The ops of one representative device, in start-time order,
// become the Program; the other devices are checked to run the same op sequence.
#include "traces/profile/profile_import.hpp"

#include <algorithm>
#include <deque>

#include "core/errors.hpp"
#include "traces/format/file_bytes.hpp"
#include "traces/format/mesh_groups.hpp"
#include "traces/format/trace_format.hpp"
#include "traces/profile/device_tracks.hpp"
#include "traces/profile/profile_collectives.hpp"
#include "traces/profile/profile_events.hpp"

namespace tpusim::trace {
namespace {

// The events of one device that make up the Program: every op, or those starting inside step k.
std::vector<const SpanEvent*> select_events(const DeviceTrack& t, int step,
                                            const std::string& file) {
  std::vector<const SpanEvent*> out;
  double begin = -1e300, end = 1e300;
  if (step >= 0) {
    if (static_cast<std::size_t>(step) >= t.steps.size())
      throw ConfigError("--step", std::to_string(step) + " is not a step of " + t.process_name +
                                      " in " + file + ", which has " +
                                      std::to_string(t.steps.size()) + " on its \"Steps\" thread");
    begin = t.steps[step].ts_us;
    end = begin + t.steps[step].dur_us;
  }
  for (const auto& e : t.ops)
    if (e.ts_us >= begin && e.ts_us < end) out.push_back(&e);
  return out;
}

ComputeCost compute_cost(const SpanEvent& e, const std::string& file, Op& op) {
  ComputeCost c;
  c.measured_ns = e.dur_us * 1e3;
  c.flops = arg_non_negative(file, e, "flops").value_or(0);
  double written = 0;
  if (auto shape = event_result_shape(file, e)) {
    for (const auto& a : *shape) {
      written += a.bytes();
      op.shapes.push_back(a.dims);
    }
    if (!shape->empty())
      if (auto d = dtype_for_xla((*shape)[0].element_type)) op.dtype = *d;
  }
  if (auto accessed = arg_non_negative(file, e, "bytes_accessed")) {
    c.bytes_written = std::min(written, *accessed);
    c.bytes_read = *accessed - c.bytes_written;
  } else {
    c.bytes_written = written;
  }
  return c;
}

void sort_unique(std::vector<int>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

struct Pending {
  int op_index;
  const SpanEvent* start;
};

// Builds the op list. Synchronous ops form a chain (each waits for the previous one); an async
// collective waits for the op before its -start, and the first op after its -done waits for it,
// so the ops in between overlap with it.
void build_ops(const std::vector<const SpanEvent*>& events, CollectiveContext& ctx, Program& p,
               std::vector<std::string>& warnings) {
  int last = -1;
  std::vector<int> finished;
  std::vector<std::deque<Pending>> pending(5);  // by CollectiveKind
  auto finish = [&](int op_index, const SpanEvent* start, const SpanEvent* done) {
    CollectiveEvents ev{p.ops[op_index].collective.kind, start, done};
    p.ops[op_index].collective = resolve_collective(ev, ctx);
    p.ops[op_index].dtype = p.ops[op_index].collective.dtype;
  };
  for (const SpanEvent* e : events) {
    const XlaOpName xn = parse_xla_op_name(e->name);
    if (xn.collective && xn.is_done) {
      auto& queue = pending[static_cast<int>(*xn.collective)];
      // Pair with the -start this -done names as its operand, else with the same suffix, else
      // the oldest open -start of the kind.
      const std::string long_name = arg_string(ctx.file, *e, "long_name").value_or("");
      auto match = std::find_if(queue.begin(), queue.end(), [&](const Pending& q) {
        return !long_name.empty() && long_name.find("%" + q.start->name + ")") != std::string::npos;
      });
      if (match == queue.end())
        match = std::find_if(queue.begin(), queue.end(), [&](const Pending& q) {
          return parse_xla_op_name(q.start->name).suffix == xn.suffix;
        });
      if (match == queue.end()) match = queue.begin();
      if (match == queue.end()) {
        warnings.push_back(event_where(ctx.file, *e) + ": a -done without an open -start; ignored");
        continue;
      }
      finish(match->op_index, match->start, e);
      finished.push_back(match->op_index);
      queue.erase(match);
      continue;
    }
    Op op;
    op.name = e->name;
    op.kind = xn.base;
    if (last >= 0) op.deps.push_back(last);
    const int index = static_cast<int>(p.ops.size());
    if (xn.collective) {
      op.is_collective = true;
      op.collective.kind = *xn.collective;
    } else {
      op.compute = compute_cost(*e, ctx.file, op);
    }
    if (!xn.is_start) {
      op.deps.insert(op.deps.end(), finished.begin(), finished.end());
      finished.clear();
      last = index;
    }
    sort_unique(op.deps);
    p.ops.push_back(std::move(op));
    if (xn.is_start)
      pending[static_cast<int>(*xn.collective)].push_back({index, e});
    else if (xn.collective)
      finish(index, e, nullptr);
  }
  for (auto& queue : pending)
    for (const auto& q : queue) {
      warnings.push_back(event_where(ctx.file, *q.start) +
                         ": no matching -done in the selected events; "
                         "treated as finishing with the step");
      finish(q.op_index, q.start, nullptr);
    }
}

// How many devices run the representative's op sequence; a warning per device that does not.
std::size_t check_devices(const std::vector<DeviceTrack>& tracks, const DeviceTrack& rep,
                          const std::vector<const SpanEvent*>& rep_events, int step,
                          const std::string& file, std::vector<std::string>& warnings) {
  std::size_t same = 0;
  for (const auto& t : tracks) {
    if (&t == &rep) {
      ++same;
      continue;
    }
    if (step >= 0 && static_cast<std::size_t>(step) >= t.steps.size()) {
      warnings.push_back(t.process_name + " has no step " + std::to_string(step) +
                         "; not compared");
      continue;
    }
    const auto events = select_events(t, step, file);
    std::size_t i = 0;
    while (i < events.size() && i < rep_events.size() && events[i]->name == rep_events[i]->name)
      ++i;
    if (i == events.size() && i == rep_events.size()) {
      ++same;
      continue;
    }
    const auto at = [&](const std::vector<const SpanEvent*>& v) {
      return i < v.size() ? "'" + v[i]->name + "'" : std::string("the end");
    };
    warnings.push_back(t.process_name + " runs a different op sequence than " + rep.process_name +
                       " (first difference at op " + std::to_string(i) + ": " + at(events) +
                       " vs " + at(rep_events) + "); the Program follows " + rep.process_name);
  }
  return same;
}

}  // namespace

ImportResult import_profile(const nlohmann::json& doc, const std::string& name,
                            const ImportOptions& options) {
  const auto tracks = read_device_tracks(doc, name, options.ops_thread);
  if (tracks.empty())
    throw ConfigError(
        name,
        "no TPU device in the profile: expected \"process_name\" metadata events naming "
        "processes \"/device:TPU:N\"");
  const DeviceTrack* rep = nullptr;
  for (const auto& t : tracks) {
    if (options.device >= 0 ? t.tpu_id == options.device : !t.ops.empty()) {
      rep = &t;
      break;
    }
  }
  if (!rep && options.device >= 0)
    throw ConfigError("--device", "TPU " + std::to_string(options.device) + " is not in " + name);
  if (!rep || rep->ops.empty())
    throw ConfigError(name, "no complete (\"ph\": \"X\") events on a TPU thread named \"" +
                                options.ops_thread + "\"");

  ImportResult out;
  out.representative_tpu = rep->tpu_id;
  out.tpu_devices = tracks.size();
  Program& p = out.program;
  p.model = options.model;
  p.examples_per_step = options.examples_per_step;
  p.mesh = options.mesh.empty() ? std::vector<MeshAxis>{{"data", static_cast<int>(tracks.size())}}
                                : options.mesh;

  const auto events = select_events(*rep, options.step, name);
  if (events.empty())
    throw ConfigError(name, "step " + std::to_string(options.step) + " of " + rep->process_name +
                                " holds no ops");
  if (options.step < 0 && rep->steps.size() > 1)
    out.warnings.push_back(
        "the profile holds " + std::to_string(rep->steps.size()) +
        " steps and all their ops were imported as one Program; pick one with --step K");

  CollectiveContext ctx;
  ctx.file = name;
  ctx.mesh = p.mesh;
  for (const auto& a : p.mesh) ctx.devices *= a.size;
  ctx.overrides = &options.overrides;
  build_ops(events, ctx, p, out.warnings);
  out.matching_devices = check_devices(tracks, *rep, events, options.step, name, out.warnings);

  if (ctx.assumed_all_devices > 0)
    out.warnings.push_back(
        std::to_string(ctx.assumed_all_devices) +
        " collectives carry no replica_groups; taken as spanning every device of the mesh");
  if (ctx.assumed_dtype > 0)
    out.warnings.push_back(
        std::to_string(ctx.assumed_dtype) +
        " collectives have no element type in the profile or --sizes; taken as bf16");
  for (const auto& [key, unused] : options.overrides)
    if (!ctx.used_overrides.count(key))
      out.warnings.push_back("--sizes entry '" + key +
                             "' names no collective among the imported ops");
  p.validate();
  return out;
}

ImportResult import_profile_bytes(const std::string& bytes, const std::string& name,
                                  const ImportOptions& options) {
  const std::string text = is_gzip(bytes) ? gunzip(bytes, name) : bytes;
  return import_profile(parse_json_text(text, name), name, options);
}

ImportResult import_profile_file(const std::string& path, const ImportOptions& options) {
  return import_profile(parse_json_text(read_file_maybe_gzip(path), path), path, options);
}

}  // namespace tpusim::trace
