#include "tools/report/pipeline_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

namespace tpusim::cli {
namespace {

bool is_stage_permute(const Op& op) {
  return op.is_collective && op.collective.kind == CollectiveKind::CollectivePermute &&
         op.name.rfind("pipeline.", 0) == 0;
}

}  // namespace

void add_pipeline(nlohmann::json& j, const Program& program, const SimReport& r) {
  const PipelineInfo& info = program.pipeline;
  if (info.stages <= 1) return;
  std::vector<double> op_ms(program.ops.size(), 0.0);
  for (const auto& t : r.top_ops) op_ms[t.index] = t.time_ms;
  // The units in order: the ops after one stage permute up to and including the next (the
  // compiler may have fused ops inside a unit; the permutes keep their names and order).
  std::vector<double> unit_ms;
  double ms = 0, permute_bytes = 0;
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    ms += op_ms[i];
    if (!is_stage_permute(program.ops[i])) continue;
    unit_ms.push_back(ms);
    permute_bytes = std::max(permute_bytes, program.ops[i].collective.bytes);
    ms = 0;
  }
  const std::size_t n = std::min(unit_ms.size(), info.units.size());
  nlohmann::json waits = nlohmann::json::array();
  double total = 0;
  for (int s = 0; s < info.stages; ++s) {
    double wait = 0;
    for (std::size_t u = 0; u < n; ++u)
      if (info.bubble(info.units[u].forward, info.units[u].iteration, s)) wait += unit_ms[u];
    waits.push_back(wait);
    total += wait;
  }
  const double bubble = total / info.stages, step = r.step_time.ms();
  const int iterations = info.microbatches * info.repeats + info.stages - 1;
  j["pipeline"] = {
      {"stages", info.stages},
      {"microbatches", info.microbatches},
      {"repeats", info.repeats},
      {"schedule", info.schedule},
      {"iterations", iterations},
      {"stage_wait_ms", waits},
      {"bubble_ms", bubble},
      {"bubble_fraction", step > 0 ? bubble / step : 0.0},
      {"closed_form_bubble_fraction", static_cast<double>(info.stages - 1) / iterations},
      {"permute_bytes_per_core", permute_bytes},
  };
}

void print_pipeline(std::ostream& out, const nlohmann::json& j) {
  if (!j.contains("pipeline")) return;
  const auto& p = j["pipeline"];
  const auto waits = p["stage_wait_ms"].get<std::vector<double>>();
  const auto [lo, hi] = std::minmax_element(waits.begin(), waits.end());
  out << fmt::format(
      "  pipeline: {} stages x {} chunks, {} microbatches, {} ({} iterations each way)\n"
      "    bubble {:.3f} ms per stage ({:.1f} % of the step; (p - 1) / (m v + p - 1) = {:.1f} % "
      "of the stage iterations), each stage waited {:.3f} .. {:.3f} ms\n",
      p["stages"].get<int>(), p["repeats"].get<int>(), p["microbatches"].get<int>(),
      p["schedule"].get<std::string>(), p["iterations"].get<int>(), p["bubble_ms"].get<double>(),
      100 * p["bubble_fraction"].get<double>(),
      100 * p["closed_form_bubble_fraction"].get<double>(), *lo, *hi);
}

}  // namespace tpusim::cli
