#include "tools/plan/candidates.hpp"

#include <algorithm>
#include <map>

#include "tools/sweep/csv_table.hpp"
#include "tools/sweep/expand.hpp"

namespace tpusim::cli {
namespace {

/// Keeps one layout per Program (the study's own if it is among them); the others are listed
/// with it and counted, not simulated.
std::vector<Survivor> merge_equivalent(std::vector<Survivor> all, Rejections& rejected) {
  std::stable_partition(all.begin(), all.end(), [](const Survivor& s) { return s.is_study; });
  std::map<std::string, std::size_t> first;
  std::vector<Survivor> out;
  for (auto& s : all) {
    const std::string key = s.check.program_fingerprint + sweep::number_text(s.check.peak_bytes);
    auto [it, fresh] = first.emplace(key, out.size());
    if (fresh) {
      out.push_back(std::move(s));
      continue;
    }
    Survivor& kept = out[it->second];
    kept.equivalents.push_back(s.label);
    add_rejection(rejected, "same Program as another layout", s.label,
                  "builds the same Program as " + kept.label + ", simulated once for both");
  }
  return out;
}

/// Keeps, for each axis value of `values`, the smallest peak seen that did not fit.
void note_oom_peak(std::vector<plan::AxisPeaks>& peaks, const std::vector<nlohmann::json>& values,
                   double peak) {
  for (std::size_t k = 0; k < peaks.size() && k < values.size(); ++k) {
    const auto& vs = peaks[k].values;
    const auto it = std::find(vs.begin(), vs.end(), values[k]);
    if (it == vs.end()) continue;  // the study's own value outside the space
    double& smallest = peaks[k].smallest_peak[it - vs.begin()];
    if (smallest == 0 || peak < smallest) smallest = peak;
  }
}

}  // namespace

CheckedSpace check_space(const plan::SearchSpace& space, const nlohmann::json& base,
                         const plan::Candidate* own) {
  CheckedSpace r;
  Rejections& rejected = r.rejected;
  std::vector<plan::Candidate> all = plan::enumerate(space, base);
  bool own_listed = own == nullptr;
  for (const auto& c : all) own_listed = own_listed || c.values == own->values;
  if (!own_listed) all.push_back(*own);
  r.total = all.size();
  for (const auto& axis : space.axes)
    r.oom_peaks.push_back({axis.path, axis.values, std::vector<double>(axis.values.size(), 0.0)});
  std::vector<Survivor> out;
  for (auto& c : all) {
    Survivor s{std::move(c), {}, "", "", false};
    s.label = plan::candidate_label(space, s.candidate.values);
    s.is_study = own && s.candidate.values == own->values;
    s.check = check_candidate(s.candidate.study);
    if (!s.check.rejected_class.empty()) {
      add_rejection(rejected, s.check.rejected_class, s.label, s.check.reason);
      if (s.is_study) r.own_rejection = s.check.rejected_class + ": " + s.check.reason;
      if (s.check.peak_bytes > 0 && s.check.rejected_class == "does not fit in HBM" &&
          (r.smallest_oom_peak == 0 || s.check.peak_bytes < r.smallest_oom_peak)) {
        r.smallest_oom_peak = s.check.peak_bytes;
        r.smallest_oom_label = s.label;
      }
      if (s.check.peak_bytes > 0 && s.check.rejected_class == "does not fit in HBM")
        note_oom_peak(r.oom_peaks, s.candidate.values, s.check.peak_bytes);
      continue;
    }
    s.id = sweep::fnv1a_hex(s.check.resolved.dump());
    out.push_back(std::move(s));
  }
  r.survivors = merge_equivalent(std::move(out), rejected);
  return r;
}

}  // namespace tpusim::cli
