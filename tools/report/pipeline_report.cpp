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

// An op of the layers: its name's second part is the layer's number ("decoder.3.mlp.in", its
// collectives and fusions "decoder.3. ..."), as the builders of layered models name them.
bool layer_op(const Op& op) {
  const auto a = op.name.find('.');
  if (a == std::string::npos) return false;
  const auto b = op.name.find('.', a + 1);
  if (b == std::string::npos || b == a + 1) return false;
  return std::all_of(op.name.begin() + a + 1, op.name.begin() + b,
                     [](char c) { return c >= '0' && c <= '9'; });
}

bool gradient_sync(const Op& op) { return op.name.rfind("grad.bucket.", 0) == 0; }

}  // namespace

void add_pipeline(nlohmann::json& j, const Program& program, const SimReport& r) {
  const PipelineInfo& info = program.pipeline;
  if (info.stages <= 1) return;
  std::vector<double> op_ms(program.ops.size(), 0.0);
  for (const auto& t : r.top_ops) op_ms[t.index] = t.time_ms;
  // The units in order: the ops after one stage permute up to and including the next (the
  // compiler may have fused ops inside a unit; the permutes keep their names and order). A
  // unit's stage work is its layers' ops and its permute. The other ops in it are outside the
  // layers: in a forward unit the embedding (the first stage's work, as real pipelines place
  // it), in a backward unit before the layers the head and loss (the last stage's), after them
  // the embedding's backward; the gradient sync overlaps the pipeline's tail and is nobody's.
  std::vector<double> unit_ms;
  double ms = 0, permute_bytes = 0, embedding_ms = 0, head_ms = 0;
  std::size_t unit = 0;
  bool layers_seen = false;
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    const bool forward = unit < info.units.size() ? info.units[unit].forward : true;
    if (is_stage_permute(op) || layer_op(op)) {
      ms += op_ms[i];
      layers_seen = layers_seen || layer_op(op);
    } else if (!gradient_sync(op) && unit < info.units.size()) {
      (forward || layers_seen ? embedding_ms : head_ms) += op_ms[i];
    }
    if (!is_stage_permute(op)) continue;
    unit_ms.push_back(ms);
    permute_bytes = std::max(permute_bytes, op.collective.bytes);
    ms = 0;
    ++unit;
    layers_seen = false;
  }
  const std::size_t n = std::min(unit_ms.size(), info.units.size());
  double iterations_ms = 0;
  for (std::size_t u = 0; u < n; ++u) iterations_ms += unit_ms[u];
  nlohmann::json waits = nlohmann::json::array(), busy = nlohmann::json::array();
  double total = 0;
  for (int s = 0; s < info.stages; ++s) {
    double wait = 0;
    for (std::size_t u = 0; u < n; ++u)
      if (info.bubble(info.units[u].forward, info.units[u].iteration, s)) wait += unit_ms[u];
    waits.push_back(wait);
    busy.push_back(iterations_ms - wait + (s == 0 ? embedding_ms : 0) +
                   (s == info.stages - 1 ? head_ms : 0));
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
      {"stage_iterations_ms", iterations_ms},
      {"stage_wait_ms", waits},
      {"stage_busy_ms", busy},
      {"embedding_ms", embedding_ms},
      {"head_ms", head_ms},
      {"bubble_ms", bubble},
      {"bubble_fraction", iterations_ms > 0 ? bubble / iterations_ms : 0.0},
      {"bubble_share_of_step", step > 0 ? bubble / step : 0.0},
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
      "    bubble {:.3f} ms per stage ({:.1f} % of the stage iterations, closed form "
      "(p - 1) / (m v + p - 1) = {:.1f} %; {:.1f} % of the step), each stage waited {:.3f} .. "
      "{:.3f} ms\n",
      p["stages"].get<int>(), p["repeats"].get<int>(), p["microbatches"].get<int>(),
      p["schedule"].get<std::string>(), p["iterations"].get<int>(), p["bubble_ms"].get<double>(),
      100 * p["bubble_fraction"].get<double>(),
      100 * p["closed_form_bubble_fraction"].get<double>(),
      100 * p["bubble_share_of_step"].get<double>(), *lo, *hi);
}

}  // namespace tpusim::cli
