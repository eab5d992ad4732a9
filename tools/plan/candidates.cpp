#include "tools/plan/candidates.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <map>
#include <thread>

#include "core/config.hpp"
#include "models/workload.hpp"
#include "tools/sweep/csv_table.hpp"
#include "tools/sweep/expand.hpp"
#include "tools/sweep/sweep_progress.hpp"

namespace tpusim::cli {
namespace {

/// Keeps one layout per Program (the study's own if it is among them); the others are listed
/// with it and counted, not simulated. Deferred layouts (no Program yet) are all kept: the
/// search merges them as it builds them.
std::vector<Survivor> merge_equivalent(std::vector<Survivor> all, Rejections& rejected) {
  std::stable_partition(all.begin(), all.end(), [](const Survivor& s) { return s.is_study; });
  std::map<std::string, std::size_t> first;
  std::vector<Survivor> out;
  for (auto& s : all) {
    if (s.check.deferred) {
      out.push_back(std::move(s));
      continue;
    }
    auto [it, fresh] = first.emplace(program_key(s.check), out.size());
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

/// The order to check candidates in: those whose op graphs are alike next to each other, so
/// that the graph cache keeps what the next ones need. The axes the model's builder reads
/// (graph_read_paths: a build of the study's own graph; e.g. parallelism.model,
/// workload.remat) vary slowest; the others (fsdp, microbatches, megacore: they change only the
/// batch a graph is built for) within. Any order gives the same checks.
std::vector<std::size_t> check_order(const plan::SearchSpace& space,
                                     const std::vector<plan::Candidate>& all,
                                     const nlohmann::json& base) {
  std::vector<std::size_t> order(all.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<std::string> read;
  try {
    read = graph_read_paths(Config(base));
  } catch (const ConfigError&) {
    return order;  // the study's own layout is invalid: enumeration order
  }
  std::vector<std::size_t> graph_axes;
  for (std::size_t k = 0; k < space.axes.size(); ++k)
    if (std::find(read.begin(), read.end(), space.axes[k].path) != read.end())
      graph_axes.push_back(k);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    for (std::size_t k : graph_axes) {
      const std::string va = all[a].values[k].dump(), vb = all[b].values[k].dump();
      if (va != vb) return va < vb;
    }
    return false;
  });
  return order;
}

/// check_candidate of every candidate, `jobs` threads taking the next unchecked one (in
/// check_order), sharing one op-graph cache; every layout but `own` may be deferred.
std::vector<CandidateCheck> check_all(const plan::SearchSpace& space,
                                      const std::vector<plan::Candidate>& all,
                                      const nlohmann::json& base, const plan::Candidate* own,
                                      int jobs, bool terminal) {
  CheckProgress progress(all.size(), terminal);
  std::vector<CandidateCheck> checks(all.size());
  const std::vector<std::size_t> order = check_order(space, all, base);
  OpGraphCache graphs(64);  // the shallow and whole depths of a few batches at a time
  std::atomic<std::size_t> next{0};
  std::vector<std::exception_ptr> failed(all.size());  // a bug's exception, rethrown in order
  auto work = [&] {
    for (std::size_t n = next++; n < all.size(); n = next++) {
      const std::size_t i = order[n];
      try {
        const bool is_own = own && all[i].values == own->values;
        checks[i] =
            check_candidate(all[i].study, &graphs, is_own ? Build::Screened : Build::Deferred);
      } catch (...) {
        failed[i] = std::current_exception();
      }
      progress.checked();
    }
  };
  const int threads = std::max(1, std::min<int>(jobs, static_cast<int>(all.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (const auto& e : failed)
    if (e) std::rethrow_exception(e);
  return checks;
}

/// The layouts the memory screen rejected are built whole where their figures are shown: the
/// first that does not fit (the example plan.json gives with its reason), and every one when
/// none passed (the error then names the smallest peak and what would fit).
void rebuild_what_is_shown(const std::vector<plan::Candidate>& all,
                           std::vector<CandidateCheck>& checks) {
  const bool none_passed = std::none_of(checks.begin(), checks.end(), [](const CandidateCheck& c) {
    return c.rejected_class.empty();
  });
  auto shown = [&](const CandidateCheck& c) {
    return !none_passed && c.rejected_class == "does not fit in HBM";
  };
  for (std::size_t n = 0; n < checks.size(); ++n) {
    if (checks[n].screened) checks[n] = check_candidate(all[n].study, nullptr, Build::Whole);
    if (shown(checks[n])) break;  // the example; the others' figures are not shown
  }
}

}  // namespace

CheckProgress::CheckProgress(std::size_t total, bool terminal, std::FILE* out)
    : total_(total), terminal_(terminal), out_(out), start_(std::chrono::steady_clock::now()) {}

CheckProgress::~CheckProgress() {
  if (!drawn_) return;
  std::fprintf(out_, "\r\033[K");
  std::fflush(out_);
}

void CheckProgress::checked() {
  if (!terminal_) return;
  const std::lock_guard<std::mutex> lock(mutex_);
  ++done_;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(200)) return;
  last_draw_ = now;
  drawn_ = true;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double left = elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_);
  std::fprintf(out_, "\r\033[Ktpusim plan: checking layouts, %zu of %zu, %s elapsed, ETA %s", done_,
               total_, clock_text(elapsed).c_str(), clock_text(left).c_str());
  std::fflush(out_);
}

std::string program_key(const CandidateCheck& c) {
  return c.program_fingerprint + sweep::number_text(c.peak_bytes);
}

void reject(CheckedSpace& r, const Survivor& s) {
  add_rejection(r.rejected, s.check.rejected_class, s.label, s.check.reason);
  if (s.is_study) r.own_rejection = s.check.rejected_class + ": " + s.check.reason;
  if (s.check.peak_bytes <= 0 || s.check.rejected_class != "does not fit in HBM") return;
  if (r.smallest_oom_peak == 0 || s.check.peak_bytes < r.smallest_oom_peak) {
    r.smallest_oom_peak = s.check.peak_bytes;
    r.smallest_oom_label = s.label;
  }
  note_oom_peak(r.oom_peaks, s.candidate.values, s.check.peak_bytes);
}

CheckedSpace check_space(const plan::SearchSpace& space, const nlohmann::json& base,
                         const plan::Candidate* own, int jobs, bool terminal) {
  CheckedSpace r;
  Rejections& rejected = r.rejected;
  std::vector<plan::Candidate> all = plan::enumerate(space, base);
  bool own_listed = own == nullptr;
  for (const auto& c : all) own_listed = own_listed || c.values == own->values;
  if (!own_listed) all.push_back(*own);
  r.total = all.size();
  for (const auto& axis : space.axes)
    r.oom_peaks.push_back({axis.path, axis.values, std::vector<double>(axis.values.size(), 0.0)});
  std::vector<CandidateCheck> checks = check_all(space, all, base, own, jobs, terminal);
  rebuild_what_is_shown(all, checks);
  std::vector<Survivor> out;
  for (std::size_t n = 0; n < all.size(); ++n) {
    Survivor s{std::move(all[n]), {}, "", "", false};
    s.label = plan::candidate_label(space, s.candidate.values);
    s.is_study = own && s.candidate.values == own->values;
    s.check = checks[n];
    if (!s.check.rejected_class.empty()) {
      reject(r, s);
      continue;
    }
    s.id = sweep::study_id(s.check.resolved);
    out.push_back(std::move(s));
  }
  r.survivors = merge_equivalent(std::move(out), rejected);
  return r;
}

}  // namespace tpusim::cli
