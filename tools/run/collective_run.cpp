#include "tools/run/collective_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/errors.hpp"
#include "core/output_file.hpp"
#include "sim/collectives/collective_algorithm.hpp"
#include "sim/run/simulation.hpp"
#include "tools/report/link_csv.hpp"
#include "tools/report/run_report.hpp"
#include "tools/study/study.hpp"
#include "tools/sweep/readable.hpp"
#include "traces/format/mesh_groups.hpp"

namespace tpusim::cli {
namespace {

/// The mesh of --mesh (the same syntax as replay's), or one axis over every core.
/// --mesh, or one axis over a slice's cores: "data" across slices (the axis a multislice
/// all-reduce spans, over the DCN), else "all".
std::vector<MeshAxis> mesh_of(const std::string& text, int cores, int slices) {
  if (text.empty()) return {{slices > 1 ? "data" : "all", cores}};
  return trace::parse_mesh_axes(text, "--mesh");
}

double bus_factor(CollectiveKind k, double n) {
  switch (k) {
    case CollectiveKind::AllReduce:
      return 2 * (n - 1) / n;
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::AllGather:
    case CollectiveKind::AllToAll:
      return (n - 1) / n;
    case CollectiveKind::CollectivePermute:
      return 1;
  }
  return 1;
}

/// The op of the command line: --op, --bytes, --dtype, --shift over the --axes of `mesh`.
Op collective_op(const CollectiveArgs& a, CollectiveKind kind, double bytes, DType dtype,
                 const DeviceMesh& mesh) {
  Op op;
  op.name = a.op;
  op.kind = a.op;
  op.is_collective = true;
  op.collective.kind = kind;
  op.collective.bytes = bytes;
  op.collective.dtype = dtype;
  op.collective.shift = a.shift;
  if (!a.axes.empty()) {
    std::stringstream in(a.axes);
    std::string axis;
    while (std::getline(in, axis, ','))
      if (mesh.axis_index(axis) < 0)
        throw ConfigError("--axes", "'" + axis + "' is not an axis of --mesh");
      else
        op.collective.axes.push_back(axis);
  }
  return op;
}

void print_collective(const CollectiveArgs& a, double bytes, const CollectiveOpStats& st, int group,
                      const std::string& topology, const SimReport& r, const SimOptions& options,
                      double algbw, double busbw) {
  std::cout << fmt::format("{} of {} per core, {} of {}\n", a.op, format_bytes(bytes),
                           count_of(st.groups, "group"), count_of(group, "core"))
            << fmt::format("  topology          {} ({} cores)\n", topology, r.cores)
            << fmt::format("  algorithm         {} ({} steps, {} network)\n", st.algorithm,
                           st.steps, options.network.fidelity)
            << fmt::format("  time              {}\n", readable_duration_ms(r.step_time.ms()))
            << fmt::format("  algbw / busbw     {:.1f} / {:.1f} GB/s\n", algbw, busbw)
            << fmt::format("  links             busiest {:.1f}% ({}), mean {:.1f}%\n",
                           100 * r.links.busiest_utilization, r.links.busiest_link,
                           100 * r.links.mean_utilization)
            << fmt::format("  kernel events     {} ({} network work items)\n", r.kernel_events,
                           r.network_work)
            << fmt::format("  wall              {:.3f} s\n", r.wall_s)
            << fmt::format("  simulation        {}\n", r.symmetry);
}

/// --algorithm names the algorithm of the op given: all-reduce, reduce-scatter and all-gather
/// take collectives.algorithm, all-to-all its own collectives.all_to_all_algorithm (whose choices
/// the parameter checks); collective-permute has one way only. Never ignored.
void set_algorithm(const CollectiveArgs& a, CollectiveKind kind, nlohmann::json& doc) {
  if (a.algorithm.empty()) return;
  if (kind == CollectiveKind::CollectivePermute)
    throw ConfigError("--algorithm " + a.algorithm,
                      "collective-permute has one algorithm (each core sends to its peer); "
                      "allowed: no --algorithm with --op collective-permute");
  doc["collectives"] = {
      {kind == CollectiveKind::AllToAll ? "all_to_all_algorithm" : "algorithm", a.algorithm}};
}

/// Across slices only an all-reduce runs (hierarchically, its middle phase over the DCN, on the
/// axis named data); the others would run in one slice under a header that says several. Never
/// silently one slice.
void span_slices(const CollectiveArgs& a, CollectiveKind kind, int slices,
                 const std::vector<MeshAxis>& mesh, Op& op) {
  if (slices <= 1) return;
  if (kind != CollectiveKind::AllReduce)
    throw ConfigError("topology.slices", std::to_string(slices) +
                                             " slices: only an all-reduce spans slices (over the "
                                             "data-center network); allowed with --op " +
                                             a.op + ": 1");
  if (op.collective.axes.empty())  // "all devices": every axis, so that the group spans slices
    for (const auto& axis : mesh) op.collective.axes.push_back(axis.name);
  if (std::find(op.collective.axes.begin(), op.collective.axes.end(), "data") ==
      op.collective.axes.end())
    throw ConfigError("--axes", "with " + std::to_string(slices) +
                                    " slices the all-reduce spans them over the axis named "
                                    "data; allowed: --mesh and --axes that include data");
}

}  // namespace

void run_collective(const CollectiveArgs& a) {
  if (!a.links_csv.empty()) check_output_path(a.links_csv, "--links-csv");
  auto kind = parse_collective_kind(a.op);
  if (!kind)
    throw ConfigError(
        "--op",
        "unknown collective '" + a.op +
            "'; allowed: all-reduce, reduce-scatter, all-gather, all-to-all, collective-permute");
  const double bytes = static_cast<double>(parse_bytes(a.bytes, "--bytes"));
  auto dtype = parse_dtype(a.dtype);
  if (!dtype) throw ConfigError("--dtype", "unknown dtype '" + a.dtype + "'; allowed: bf16, f32");
  nlohmann::json doc = {{"preset", a.preset}};
  if (!a.topology.empty()) doc["topology"] = a.topology;
  set_algorithm(a, *kind, doc);
  Study study = load_study(doc, a.sets, "(command line)");
  Topology topology(study.topology);
  const int cores = topology.num_chips() * study.hardware.devices_per_chip;

  Program program;
  program.model = "collective";
  program.mesh = mesh_of(a.mesh, cores, study.topology.slices);
  DeviceMesh mesh(topology, study.hardware.devices_per_chip, program.mesh);  // checks the fit
  Op op = collective_op(a, *kind, bytes, *dtype, mesh);
  span_slices(a, *kind, study.topology.slices, program.mesh, op);
  program.ops.push_back(op);
  const int group = static_cast<int>(mesh.groups(op.collective.axes).front().size());

  SimOptions options = SimOptions::from_config(study.config);
  options.progress_interval_s = progress_interval_s();
  options.link_stats = !a.links_csv.empty();
  SimReport r = simulate(program, topology, study.hardware, options);
  if (!a.links_csv.empty()) write_link_csv(a.links_csv, r);
  const auto& st = r.collectives.begin()->second;
  const double t = r.step_time.seconds();
  const double algbw = bytes / t * 1e-9;
  const double busbw = algbw * bus_factor(*kind, group);

  if (a.json) {
    nlohmann::json j = {{"schema_version", 1},
                        {"tpusim_version", TPUSIM_VERSION},
                        {"op", a.op},
                        {"bytes", bytes},
                        {"dtype", a.dtype},
                        {"collective_time_ns", r.step_time.ns()},
                        {"algorithm", st.algorithm},
                        {"steps", st.steps},
                        {"group_size", group},
                        {"groups", st.groups},
                        {"algbw_GBps", algbw},
                        {"busbw_GBps", busbw},
                        {"chips", r.chips},
                        {"cores", r.cores},
                        {"topology", topology.describe()},
                        {"busiest_link_utilization", r.links.busiest_utilization},
                        {"busiest_link", r.links.busiest_link},
                        {"mean_link_utilization", r.links.mean_utilization},
                        {"events", r.kernel_events},
                        {"network_work_items", r.network_work},
                        {"wall_s", r.wall_s},
                        {"simulation", r.symmetry},
                        {"config", study.config.json()}};
    if (r.slices > 1) {
      j["slices"] = r.slices;
      j["dcn_bytes_per_chip"] = r.dcn.bytes_per_chip;
      j["dcn_time_ns"] = r.comm_split.dcn.ns();
    }
    std::cout << j.dump(2) << "\n";
    return;
  }
  print_collective(a, bytes, st, group, topology.describe(), r, options, algbw, busbw);
}

}  // namespace tpusim::cli
