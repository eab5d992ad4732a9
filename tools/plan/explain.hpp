#pragma once
// Why the winner of `tpusim plan` wins: its margin over the runner-up and the axes they differ
// in, what bounds its step (compute or exposed communication), the layouts within the near-tie
// share of it; and, when no layout fits, which axes would help. Plain C++ over the plan JSON.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tpusim::plan {

/// The default near-tie share (`tpusim plan --tie`, in %): layouts whose objective is within
/// this fraction of the winner's are flagged as ties. A choice, not a measured figure: the
/// model's step times differ from measured ones by 1 to 16 % (README, Calibration), so an order
/// decided by less than 2 % is not a prediction to rely on.
constexpr double kDefaultTiePercent = 2.0;

/// The `winner` object's explanation, from the plan's `candidates` (each with its rank and
/// report figures), `top`-independent: {"margin": {...} (absent with one layout), "differs":
/// [{"axis", "winner", "runner_up"}], "bound": {...}, "near_ties": [ids], "tie_percent"}.
/// `objective` is "step_time" or "examples_per_s_per_chip".
nlohmann::json explain_winner(const nlohmann::json& candidates, const std::string& winner_id,
                              const std::string& objective, double tie_percent);

/// The smallest peak per value of each axis, over the layouts that do not fit: entries
/// (axis path, its values in order, the smallest peak at each value, 0 where none was seen).
struct AxisPeaks {
  std::string path;
  std::vector<nlohmann::json> values;
  std::vector<double> smallest_peak;
};

/// "; what may help: ..." for the error when nothing fits: the axes whose last (largest)
/// searched value gives the smallest peak, as axes to widen, and the memory-saving keys the
/// study declares that the space leaves out (`declared`: those keys), as axes to add.
std::string what_would_fit(const std::vector<AxisPeaks>& peaks,
                           const std::vector<std::string>& declared_not_searched);

/// Keys that lower the peak memory per core when set, for the advice above.
const std::vector<std::string>& memory_saving_keys();

}  // namespace tpusim::plan
