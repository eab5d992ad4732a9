#include "tools/report/memory_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ostream>
#include <utility>
#include <vector>

#include "core/units.hpp"

namespace tpusim::cli {
namespace {
// What the largest class at the peak holds, in the words of docs/memory.md's table.
const char* class_meaning(const std::string& cls) {
  if (cls == "activations") return "forward tensors kept for the backward pass or recomputed";
  if (cls == "weight_copies") return "the bf16 (or int8) weights the passes read, FSDP's gathered";
  if (cls == "optimizer_state") return "the optimizer's f32 slots";
  if (cls == "master_weights") return "the f32 master weights";
  if (cls == "activation_gradients") return "gradients flowing back through the layers";
  if (cls == "weight_gradients") return "f32 weight gradients before their reduction";
  if (cls == "gradient_buckets") return "reduced gradients before the optimizer";
  return "see docs/memory.md";
}

// "activations: 62 % of the peak (forward tensors ...)": the class that sets the peak.
std::string peak_set_by(const MemoryProfile& m) {
  const auto classes = m.classes_by_size();
  if (classes.empty() || m.peak_bytes <= 0) return "";
  const std::string cls = to_string(classes.front().first);
  return fmt::format("{}: {:.0f} % of the peak ({}) at {}", cls,
                     100 * classes.front().second / m.peak_bytes, class_meaning(cls),
                     m.peak_op_name);
}
}  // namespace

nlohmann::json memory_json(const MemoryProfile& m, double analysis_s) {
  if (!m.known) return {{"known", false}};
  nlohmann::json classes = nlohmann::json::object();
  for (const auto& [cls, bytes] : m.classes_by_size()) classes[to_string(cls)] = bytes;
  nlohmann::json largest = nlohmann::json::array();
  for (const auto& t : m.largest)
    largest.push_back({{"name", t.name},
                       {"class", to_string(t.cls)},
                       {"dtype", to_string(t.dtype)},
                       {"bytes", t.bytes}});
  return {{"known", true},
          {"peak_bytes", m.peak_bytes},
          {"capacity_bytes", m.capacity_bytes},
          {"headroom_bytes", m.headroom_bytes()},
          {"fits", m.fits()},
          {"peak_op", m.peak_op_name},
          {"peak_set_by", peak_set_by(m)},
          {"resident_bytes", m.resident_bytes},
          {"bytes_by_class", classes},
          {"largest", largest},
          {"analysis_s", analysis_s}};
}

void print_memory(std::ostream& out, const nlohmann::json& m) {
  if (!m.value("known", false)) {
    out << "  memory: unknown (the program carries no tensor sizes)\n";
    return;
  }
  const double headroom = m["headroom_bytes"].get<double>();
  out << fmt::format("  memory per core         {:>10} peak of {} ({} {}) during {}\n",
                     format_bytes(m["peak_bytes"].get<double>()),
                     format_bytes(m["capacity_bytes"].get<double>()),
                     format_bytes(std::fabs(headroom)),
                     headroom >= 0 ? "headroom" : "OVER CAPACITY", m["peak_op"].get<std::string>());
  std::vector<std::pair<std::string, double>> classes;
  for (auto it = m["bytes_by_class"].begin(); it != m["bytes_by_class"].end(); ++it)
    classes.emplace_back(it.key(), it.value().get<double>());
  std::stable_sort(classes.begin(), classes.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (m.contains("peak_set_by") && !m["peak_set_by"].get<std::string>().empty())
    out << "    set by " << m["peak_set_by"].get<std::string>() << "\n";
  for (const auto& [name, bytes] : classes)
    out << fmt::format("    {:<22} {:>10}\n", name, format_bytes(bytes));
  out << "  largest buffers at the peak:\n";
  for (const auto& t : m["largest"])
    out << fmt::format("    {:>10}  {:<5} {:<21} {}\n", format_bytes(t["bytes"].get<double>()),
                       t["dtype"].get<std::string>(), t["class"].get<std::string>(),
                       t["name"].get<std::string>());
}

TimedMemory analyze_timed(const Program& program, double capacity_bytes) {
  const auto start = std::chrono::steady_clock::now();
  TimedMemory t{analyze_memory(program, capacity_bytes), 0};
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return t;
}

}  // namespace tpusim::cli
