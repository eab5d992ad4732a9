#include "models/memory/memory_model.hpp"

#include <algorithm>

#include "core/units.hpp"

namespace tpusim {
namespace {

// The last op during which output `o` of op i is live.
int end_of(const OpOutput& o, std::size_t i) {
  return o.last_use > static_cast<int>(i) ? o.last_use : static_cast<int>(i);
}

// Every output op i keeps: its main one and those of a fused op's members read outside it.
template <class F>
void for_each_output(const Op& op, F&& f) {
  f(op.output);
  for (const OpOutput& o : op.more_outputs) f(o);
}

}  // namespace

double resident_bytes(const Program& p) {
  double s = 0;
  for (const auto& r : p.resident) s += r.bytes;
  return s;
}

std::vector<std::pair<MemoryClass, double>> MemoryProfile::classes_by_size() const {
  std::vector<std::pair<MemoryClass, double>> out;
  for (int c = 0; c < kMemoryClasses; ++c)
    if (bytes_by_class[c] > 0) out.emplace_back(static_cast<MemoryClass>(c), bytes_by_class[c]);
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

std::vector<double> live_bytes_per_op(const Program& p) {
  if (!p.has_memory) return {};
  const std::size_t n = p.ops.size();
  std::vector<double> delta(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i)
    for_each_output(p.ops[i], [&](const OpOutput& o) {
      delta[i] += o.bytes;
      delta[end_of(o, i) + 1] -= o.bytes;
    });
  std::vector<double> live(n);
  double running = resident_bytes(p);
  for (std::size_t i = 0; i < n; ++i) live[i] = running += delta[i];
  return live;
}

MemoryProfile analyze_memory(const Program& p, double capacity_bytes, int largest) {
  MemoryProfile m;
  m.capacity_bytes = capacity_bytes;
  m.known = p.has_memory;
  if (!m.known) return m;
  m.resident_bytes = resident_bytes(p);
  m.peak_bytes = m.resident_bytes;
  const std::vector<double> live = live_bytes_per_op(p);
  const auto peak = std::max_element(live.begin(), live.end());
  if (peak != live.end()) {
    m.peak_op = static_cast<int>(peak - live.begin());
    m.peak_op_name = p.ops[m.peak_op].name;
    m.peak_bytes = *peak;
  }
  std::vector<LiveTensor> at_peak;
  for (const auto& r : p.resident) at_peak.push_back({r.name, r.cls, r.dtype, r.bytes});
  for (int i = 0; i <= m.peak_op; ++i)
    for_each_output(p.ops[i], [&](const OpOutput& o) {
      if (o.bytes > 0 && end_of(o, i) >= m.peak_op)
        at_peak.push_back({p.ops[i].name, o.cls, o.dtype, o.bytes});
    });
  for (const auto& t : at_peak) m.bytes_by_class[static_cast<int>(t.cls)] += t.bytes;
  const auto keep = std::min<std::size_t>(at_peak.size(), static_cast<std::size_t>(largest));
  std::partial_sort(at_peak.begin(), at_peak.begin() + keep, at_peak.end(),
                    [](const LiveTensor& a, const LiveTensor& b) { return a.bytes > b.bytes; });
  at_peak.resize(keep);
  m.largest = std::move(at_peak);
  return m;
}

std::string describe_oom(const MemoryProfile& m) {
  std::string s = "peak " + format_bytes(m.peak_bytes) + " per core exceeds the " +
                  format_bytes(m.capacity_bytes) + " of HBM (hardware.hbm.GiB_per_core) at op " +
                  m.peak_op_name + ":";
  const auto classes = m.classes_by_size();
  for (std::size_t i = 0; i < classes.size() && i < 3; ++i)
    s += std::string(i ? "," : "") + " " + to_string(classes[i].first) + " " +
         format_bytes(classes[i].second);
  return s;
}

}  // namespace tpusim
