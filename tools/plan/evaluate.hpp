#pragma once
// The checks `tpusim plan` makes on every candidate layout before simulating any: the study
// loads and the layout is valid (every check of `tpusim validate`), the Program fits in HBM
// (models/memory), and its lower bounds (tools/plan/bounds.hpp). No SystemC is elaborated.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "models/memory/memory_model.hpp"
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
  /// True: rejected on the memory screen (screened_resident_bytes), the whole Program not
  /// built; peak_bytes is the resident bytes, below the peak.
  bool screened = false;
};

/// A hash of everything the simulation reads from a Program: the mesh, every op's kind, costs,
/// collective (kind, bytes, dtype, axes or groups, shift) and dependencies.
std::string program_fingerprint(const Program& program);

/// Checks one candidate's study; with `graphs`, op graphs are taken from (and kept in) it. With
/// `screen`, a decoder whose resident buffers (screened_resident_bytes) less the chip's CMEM
/// exceed the HBM is rejected without building its whole Program.
CandidateCheck check_candidate(const nlohmann::json& study, OpGraphCache* graphs = nullptr,
                               bool screen = true);

struct Study;
/// The memory screen of `tpusim plan` (docs/plan.md, "Memory"): for a decoder language model's
/// training step (no pipeline, every layer alike), the per-core bytes of the resident buffers
/// (weights, optimizer state, infeed: live through the whole step, so at the peak too) of its
/// compiled Program without CMEM, from the Programs of 1 and 2 layers: each layer adds the same
/// buffers, so r(L) = r(2) + (L - 2) (r(2) - r(1)). std::nullopt for any other study, or when a
/// shallow build fails (the whole build says why).
std::optional<double> screened_resident_bytes(const Study& s, const Topology& topology,
                                              OpGraphCache* graphs = nullptr);

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
