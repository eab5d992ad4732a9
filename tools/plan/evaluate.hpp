#pragma once
// The checks `tpusim plan` makes on every candidate layout before simulating any: the study
// loads and the layout is valid (every check of `tpusim validate`), the Program fits in HBM
// (models/memory), and its lower bounds (tools/plan/bounds.hpp). No SystemC is elaborated.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "models/program.hpp"
#include "models/workload.hpp"
#include "tools/plan/bounds.hpp"

namespace tpusim::cli {

struct CandidateCheck {
  std::string
      rejected_class;       ///< "" if the candidate passed; else e.g. "invalid parallelism.model"
  std::string reason;       ///< the error line, or why it does not fit
  nlohmann::json resolved;  ///< the resolved study (when it loaded)
  double peak_bytes = 0;    ///< per core (when the Program was built)
  double capacity_bytes = 0;
  plan::StepBound bound;
  double examples_per_step = 0;
  double chips = 0;
  double tokens_per_step = 0;      ///< language models: examples x tokens per example
  double model_flops = 0;          ///< the Program's model FLOPs per step (0: not counted)
  double peak_flops_per_chip = 0;  ///< for MFU
  /// Identifies the Program (program_fingerprint): two layouts with the same fingerprint run
  /// the same Program on the same machine, so one simulation serves both.
  std::string program_fingerprint;
};

/// A hash of everything the simulation reads from a Program: the mesh, every op's kind, costs,
/// collective (kind, bytes, dtype, axes or groups, shift) and dependencies.
std::string program_fingerprint(const Program& program);

/// Checks one candidate's study; with `graphs`, op graphs are taken from (and kept in) it.
CandidateCheck check_candidate(const nlohmann::json& study, OpGraphCache* graphs = nullptr);

/// Rejected candidates grouped by class: count and the first example.
struct RejectedClass {
  std::size_t count = 0;
  std::string example;  ///< the candidate's label
  std::string reason;
};
using Rejections = std::map<std::string, RejectedClass>;
void add_rejection(Rejections& r, const std::string& cls, const std::string& label,
                   const std::string& reason, std::size_t count = 1);

}  // namespace tpusim::cli
