#include "tools/plan/output.hpp"

#include <algorithm>
#include <cmath>
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

}  // namespace

std::string rate_text(double v) {
  // At least four significant digits: 0.0123 ex/s/chip reads 0.01230, not 0.0.
  if (!std::isfinite(v) || v == 0) return fixed(v, 1);
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(v))));
  return fixed(v, std::clamp(3 - magnitude, 1, 9));
}

namespace {

/// A rate objective's value with its unit: "41.20 % MFU", "1234 tokens/s/chip".
std::string objective_text(const std::string& objective, double v) {
  if (objective == "mfu") return fixed(100 * v, 2) + " % MFU";
  if (objective == "tokens_per_s_per_chip") return rate_text(v) + " tokens/s/chip";
  return rate_text(v) + " ex/s/chip";
}

/// The winner's explanation: its margin over the runner-up, what bounds it, the near ties.
void print_explanation(std::ostream& out, const nlohmann::json& plan) {
  const auto& w = plan["winner"];
  if (!w.contains("explanation")) return;
  const auto& e = w["explanation"];
  const auto& c = plan["candidates"].at(w["id"].get<std::string>());
  const std::string objective = plan["objective"].get<std::string>();
  const bool step = objective == "step_time";
  out << "  " << fixed(c["step_time_ms"].get<double>(), 3) << " ms, "
      << rate_text(c["examples_per_s_per_chip"].get<double>()) << " ex/s/chip";
  if (objective == "mfu" || objective == "tokens_per_s_per_chip")
    out << ", " << objective_text(objective, c[objective].get<double>());
  if (e.contains("margin")) {
    const auto& m = e["margin"];
    out << "; "
        << (step ? fixed(m["step_time_ms"].get<double>(), 3) + " ms"
                 : objective_text(objective, m[objective].get<double>()))
        << " (" << fixed(m["percent"].get<double>(), 2) << " %) "
        << (step ? "faster than" : "more than") << " #2 ("
        << m["runner_up_layout"].get<std::string>() << ")";
    std::string differs;
    for (const auto& d : e["differs"])
      differs += (differs.empty() ? "" : ", ") + d["axis"].get<std::string>() + " " +
                 d["winner"].dump() + " vs " + d["runner_up"].dump();
    if (!differs.empty()) out << ", which differs in " << differs;
  } else {
    out << "; the only layout simulated";
  }
  out << "\n  " << e["bound"]["text"].get<std::string>() << "\n";
  const auto& ties = e["near_ties"];
  if (!ties.empty()) {
    std::string ranks;
    for (const auto& id : ties)
      ranks += (ranks.empty() ? "#" : ", #") +
               plan["candidates"].at(id.get<std::string>())["rank"].dump();
    out << "  near tie: " << ranks << " within " << fixed(e["tie_percent"].get<double>(), 1)
        << " % of the winner, the model's resolution (--tie): their order is not a prediction; "
           "choose among them by memory or other needs\n";
  }
}

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
                  rate_text(c["examples_per_s_per_chip"].get<double>()).c_str(),
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
  out << "Winner: " << plan["winner"]["layout"].get<std::string>() << "\n";
  print_explanation(out, plan);
  out << "  tpusim run " << plan["winner"]["study_file"].get<std::string>() << "\n";
}

}  // namespace tpusim::cli
