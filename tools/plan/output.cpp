#include "tools/plan/output.hpp"

#include <cstdio>
#include <ostream>

namespace tpusim::cli {
namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string gib(double bytes) { return fixed(bytes / (1024.0 * 1024 * 1024), 2); }

void print_rows(std::ostream& out, const nlohmann::json& plan, const nlohmann::json& ids) {
  char line[512];
  std::snprintf(line, sizeof line, "  %4s  %-48s %9s %11s %6s %9s %9s\n", "rank", "layout",
                "step_ms", "ex/s/chip", "comm%", "peak_GiB", "bound_ms");
  out << line;
  for (const auto& id : ids) {
    const auto& c = plan["candidates"].at(id.get<std::string>());
    std::snprintf(line, sizeof line, "  %4s  %-48s %9s %11s %6s %9s %9s%s\n",
                  c["rank"].dump().c_str(), c["layout"].get<std::string>().c_str(),
                  fixed(c["step_time_ms"].get<double>(), 3).c_str(),
                  fixed(c["examples_per_s_per_chip"].get<double>(), 1).c_str(),
                  fixed(100 * c["comm_share"].get<double>(), 1).c_str(),
                  gib(c["peak_memory_bytes"].get<double>()).c_str(),
                  fixed(c["bound_ms"].get<double>(), 3).c_str(),
                  c["study_layout"].get<bool>() ? "  <- the study's layout" : "");
    out << line;
  }
}

}  // namespace

void print_plan(std::ostream& out, const nlohmann::json& plan) {
  const auto& n = plan["counts"];
  out << "tpusim plan: " << plan["study"].get<std::string>() << " ("
      << plan["model"].get<std::string>() << ", " << plan["chips"] << " chips), objective "
      << plan["objective"].get<std::string>() << "\n";
  out << "  " << n["candidates"] << " layouts: " << n["invalid"] << " invalid, " << n["oom"]
      << " do not fit, " << n["equivalent"] << " same Program as another, " << n["pruned"]
      << " skipped by bound, " << n["simulated"] << " simulated (" << n["cached"]
      << " from earlier runs), " << n["failed"] << " failed\n\n";
  out << "Top " << plan["top"].size() << ":\n";
  print_rows(out, plan, plan["top"]);
  out << "\nPareto front (step time vs peak memory per core):\n";
  print_rows(out, plan, plan["pareto"]);
  out << "\nRejected:\n";
  for (const auto& r : plan["rejected"])
    out << "  " << r["count"] << " " << r["class"].get<std::string>() << ", e.g. "
        << r["example"].get<std::string>() << ": " << r["reason"].get<std::string>() << "\n";
  const auto& s = plan["study_layout"];
  out << "\nThe study's layout (" << s["layout"].get<std::string>() << "): ";
  if (s.contains("rank"))
    out << "rank " << s["rank"] << " of " << n["simulated"] << ", "
        << fixed(s["step_time_ms"].get<double>(), 3) << " ms\n";
  else
    out << s["status"].get<std::string>() << "\n";
  out << "Winner: " << plan["winner"]["layout"].get<std::string>() << "\n  tpusim run "
      << plan["winner"]["study_file"].get<std::string>() << "\n";
}

}  // namespace tpusim::cli
