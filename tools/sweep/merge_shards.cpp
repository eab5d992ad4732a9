#include "tools/sweep/merge_shards.hpp"

#include <filesystem>
#include <iostream>

#include "core/config.hpp"
#include "core/errors.hpp"
#include "core/limits.hpp"
#include "core/output_file.hpp"
#include "tools/sweep/readable.hpp"
#include "tools/sweep/sweep_dir.hpp"

namespace tpusim::cli {
namespace {

namespace fs = std::filesystem;

void copy_if_present(const std::string& from, const std::string& to) {
  std::error_code ec;
  if (!fs::exists(from) || (fs::exists(to) && fs::equivalent(from, to, ec))) return;
  write_output_file(to, read_file_bounded(from, kMaxTraceFileBytes, "kMaxTraceFileBytes"));
}

/// A report without the fields that change with every run (the wall clock), for comparing two
/// copies of one point.
nlohmann::json without_wall_clock(nlohmann::json r) {
  r.erase("wall_s");
  r.erase("elaboration_s");
  if (r.contains("memory") && r["memory"].is_object()) r["memory"].erase("analysis_s");
  return r;
}

/// The directory whose copy of point `p` the merge takes: a result (ok, or out of memory) over a
/// failure. Two directories holding different results for the point are a problem: neither may
/// silently win.
std::string merge_source(const std::vector<std::string>& dirs, const sweep::PlanPoint& p,
                         ProblemList& problems) {
  std::string source;
  nlohmann::json report;
  for (const auto& d : dirs) {
    const sweep::PointOutcome o = sweep::read_outcome(d, p.id);
    if (!sweep::finished(o.state)) {
      // A point file that holds no result (damaged, or a negative or non-finite figure) is not
      // merged; say so rather than drop it silently.
      if (o.state == sweep::PointState::Pending && fs::exists(sweep::point_file(d, p.id)))
        std::cerr << "tpusim merge: warning: " << sweep::point_file(d, p.id)
                  << " holds no result (damaged, or a figure that is negative or not finite); "
                     "not merged\n";
      continue;
    }
    if (!source.empty() && without_wall_clock(o.report) != report)
      problems.add(sweep::point_file(d, p.id),
                   "holds another result for point " + std::to_string(p.index) + " than " +
                       sweep::point_file(source, p.id) +
                       "; allowed: one result per point (merge shards of one sweep, each once)");
    source = d;
    report = without_wall_clock(o.report);
  }
  if (source.empty())
    for (const auto& d : dirs)
      if (sweep::read_outcome(d, p.id).state == sweep::PointState::Failed) source = d;
  return source;
}

}  // namespace

int run_merge(const std::vector<std::string>& dirs, const std::string& out) {
  std::vector<sweep::Plan> plans;
  ProblemList problems;
  for (const auto& d : dirs) {
    try {
      plans.push_back(read_plan(d));
    } catch (const ConfigError& e) {
      for (const auto& p : e.problems()) problems.add(p.where, p.what);
    }
  }
  problems.throw_if_any();
  const sweep::Plan& first = plans.front();
  auto set_list = [](const sweep::Plan& p) {
    std::string s;
    for (const auto& x : p.sets) s += (s.empty() ? "--set " : " --set ") + x;
    return s.empty() ? std::string("no --set") : s;
  };
  for (std::size_t i = 1; i < plans.size(); ++i)
    if (plans[i].sets != first.sets)
      problems.add(dirs[i], "ran with " + set_list(plans[i]) + ", but " + dirs[0] + " with " +
                                set_list(first) + "; merge only shards run with the same --set");
  problems.throw_if_any();
  for (std::size_t i = 1; i < plans.size(); ++i)
    if (plans[i].points_digest() != first.points_digest() || plans[i].columns != first.columns)
      problems.add(dirs[i], "holds a different sweep than " + dirs[0] + " (" + plans[i].sweep_file +
                                " vs " + first.sweep_file +
                                ", or other points); merge only shards of one sweep");
  problems.throw_if_any();

  std::vector<std::string> sources;
  for (const auto& p : first.points) sources.push_back(merge_source(dirs, p, problems));
  problems.throw_if_any();

  const SweepDirLock lock = make_sweep_dir(out);
  sweep::Plan merged = first;
  merged.shard = merged.shard_count = 1;
  std::size_t ok = 0, oom = 0, failed = 0, missing = 0;
  for (std::size_t i = 0; i < merged.points.size(); ++i) {
    const sweep::PlanPoint& p = merged.points[i];
    const std::string& source = sources[i];
    if (source.empty()) {
      ++missing;
      continue;
    }
    copy_if_present(sweep::point_file(source, p.id), sweep::point_file(out, p.id));
    copy_if_present(sweep::error_file(source, p.id), sweep::error_file(out, p.id));
    copy_if_present(sweep::study_file(source, p.id), sweep::study_file(out, p.id));
    const sweep::PointState state = sweep::read_outcome(source, p.id).state;
    (state == sweep::PointState::Ok ? ok : state == sweep::PointState::Oom ? oom : failed) += 1;
  }
  write_plan(out, merged);
  write_results(out, merged);
  std::cerr << "tpusim merge: " << count_of(static_cast<long long>(merged.points.size()), "point")
            << " from " << count_of(static_cast<long long>(dirs.size()), "directory", "directories")
            << ": " << ok << " ok, " << oom << " out of memory, " << failed << " failed, "
            << missing << " not run; results in " << out << "/results.csv\n";
  return ok + oom == merged.points.size() ? 0 : 1;
}

}  // namespace tpusim::cli
