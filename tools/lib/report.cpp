#include "tools/lib/report.hpp"

#include <fmt/format.h>

#include <map>
#include <ostream>

#include "core/params.hpp"
#include "core/units.hpp"
#include "tools/lib/memory_report.hpp"
#include "tools/lib/readable.hpp"

namespace tpusim::cli {

std::string layout_string(const Program& program, const Config& cfg) {
  std::string s;
  for (const auto& a : program.mesh)
    s += (s.empty() ? "" : " ") + a.name + "=" + std::to_string(a.size);
  const auto* wus = json_at(cfg.json(), "parallelism.weight_update_sharding");
  if (wus && wus->is_boolean()) s += std::string(" wus=") + (wus->get<bool>() ? "on" : "off");
  return s;
}

nlohmann::json make_report(const Study& study, const Program& program, const SimReport& r,
                           int top_n) {
  const double step_ms = r.step_time.ms();
  const double step_s = r.step_time.seconds();
  nlohmann::json top = nlohmann::json::array();
  for (int i = 0; i < top_n && i < static_cast<int>(r.top_ops.size()); ++i) {
    const auto& op = r.top_ops[i];
    top.push_back({{"op", op.name}, {"kind", op.kind}, {"time_ms", op.time_ms}});
  }
  // Collectives by kind: count, bytes per core, time in flight of the longest group.
  std::map<std::string, std::tuple<int, double, double>> by_kind;
  for (const auto& [index, st] : r.collectives) {
    const Op& op = program.ops[index];
    auto& [count, bytes, ms] = by_kind[to_string(op.collective.kind)];
    ++count;
    bytes += op.collective.bytes;
    ms += st.longest.ms();
  }
  nlohmann::json coll = nlohmann::json::object();
  for (const auto& [kind, v] : by_kind)
    coll[kind] = {
        {"count", std::get<0>(v)}, {"bytes_per_core", std::get<1>(v)}, {"time_ms", std::get<2>(v)}};
  nlohmann::json j = {
      {"schema_version", kReportSchemaVersion},
      {"tpusim_version", TPUSIM_VERSION},
      {"study", study.source},
      {"model", program.model},
      {"layout", layout_string(program, study.config)},
      {"chips", r.chips},
      {"cores", r.cores},
      {"global_batch", program.examples_per_step},
      {"step_time_ms", step_ms},
      {"compute_ms", r.compute.ms()},
      {"communication_ms", r.communication.ms()},
      {"exposed_communication_ms", r.exposed_communication.ms()},
      {"comm_share", step_s > 0 ? r.communication.seconds() / step_s : 0.0},
      {"exposed_comm_share", step_s > 0 ? r.exposed_communication.seconds() / step_s : 0.0},
      {"mxu_utilization", r.mxu_utilization},
      {"examples_per_s", step_s > 0 ? program.examples_per_step / step_s : 0.0},
      {"examples_per_s_per_chip", step_s > 0 ? program.examples_per_step / step_s / r.chips : 0.0},
      {"useful_tflop_per_core", r.useful_flops_per_core * 1e-12},
      {"ops", program.ops.size()},
      {"collective_ops", program.num_collectives()},
      {"collectives", coll},
      {"top_ops", top},
      {"links",
       {{"busiest_utilization", r.links.busiest_utilization},
        {"busiest", r.links.busiest_link},
        {"mean_utilization", r.links.mean_utilization},
        {"total_bytes", r.links.total_bytes}}},
      {"kernel_events", r.kernel_events},
      {"network_work_items", r.network_work},
      {"wall_s", r.wall_s},
      {"config", study.config.json()},
  };
  return j;
}

void print_report(std::ostream& out, const nlohmann::json& j) {
  out << fmt::format("{} on {} chips ({} cores), {}, global batch {}\n",
                     j["model"].get<std::string>(), j["chips"].get<int>(), j["cores"].get<int>(),
                     j["layout"].get<std::string>(), j["global_batch"].get<std::int64_t>())
      << fmt::format("  step time               {:10.3f} ms\n", j["step_time_ms"].get<double>())
      << fmt::format("  compute                 {:10.3f} ms\n", j["compute_ms"].get<double>())
      << fmt::format("  communication           {:10.3f} ms  (share {:.1f}%)\n",
                     j["communication_ms"].get<double>(), 100 * j["comm_share"].get<double>())
      << fmt::format("  exposed communication   {:10.3f} ms  (share {:.1f}%)\n",
                     j["exposed_communication_ms"].get<double>(),
                     100 * j["exposed_comm_share"].get<double>())
      << fmt::format("  MXU utilization         {:10.1f} %\n",
                     100 * j["mxu_utilization"].get<double>())
      << fmt::format("  examples per second     {:10.0f}  ({:.1f} per chip)\n",
                     j["examples_per_s"].get<double>(), j["examples_per_s_per_chip"].get<double>());
  out << "  collectives:\n";
  for (auto it = j["collectives"].begin(); it != j["collectives"].end(); ++it)
    out << fmt::format("    {:<20} {:>9}  {:>10} per core  {:>10}\n", it.key(),
                       count_of(it.value()["count"].get<int>(), "op"),
                       format_bytes(it.value()["bytes_per_core"].get<double>()),
                       readable_duration_ms(it.value()["time_ms"].get<double>()));
  out << "  top ops by time (per core):\n";
  for (const auto& op : j["top_ops"])
    out << fmt::format("    {:10.3f} ms  {:<18} {}\n", op["time_ms"].get<double>(),
                       op["kind"].get<std::string>(), op["op"].get<std::string>());
  if (j.contains("memory")) print_memory(out, j["memory"]);
  out << fmt::format("  links: busiest {:.1f}% ({}), mean {:.1f}%\n",
                     100 * j["links"]["busiest_utilization"].get<double>(),
                     j["links"]["busiest"].get<std::string>(),
                     100 * j["links"]["mean_utilization"].get<double>())
      << fmt::format("  simulated with {} kernel events in {:.3f} s\n",
                     j["kernel_events"].get<std::uint64_t>(), j["wall_s"].get<double>());
}

}  // namespace tpusim::cli
