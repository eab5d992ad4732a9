#pragma once
// The checks `tpusim plan` makes on every candidate layout before simulating any: the study
// loads and the layout is valid (every check of `tpusim validate`), the Program fits in HBM
// (models/memory), and its lower bounds (tools/plan/bounds.hpp). No SystemC is elaborated.
#include <map>
#include <memory>
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
  /// True: rejected on the memory screen (screened_memory), the whole Program not built;
  /// peak_bytes is the screen's figure, below the peak.
  bool screened = false;
  /// True: passed the memory screen, whose shallow Programs also gave a step bound; the whole
  /// Program is not built yet (`tpusim plan` builds it when the search reaches the layout and
  /// the bound does not skip it). `bound` is ScreenedMemory::bound, `peak_bytes` a lower
  /// bound on the peak (the screen's larger figure less a core's share of CMEM), `model_flops`
  /// the screen's; no program_fingerprint.
  bool deferred = false;
  /// Build::Kept: the compiled Program, when it fits (`tpusim plan` writes it for the run).
  std::shared_ptr<const Program> program;
};

/// A hash of everything the simulation reads from a Program: the mesh, every op's kind, costs,
/// collective (kind, bytes, dtype, axes or groups, shift) and dependencies.
std::string program_fingerprint(const Program& program);

/// How check_candidate goes about a layout.
enum class Build {
  /// The memory screen first: a decoder whose resident buffers or forward pass (screened_memory)
  /// less a core's share of CMEM exceed the HBM is rejected without building its whole Program.
  Screened,
  Whole,     ///< built whole, without the screen
  Deferred,  ///< as Screened, and one the screen passes with a bound is not built whole
  Kept,      ///< as Whole, the Program kept in CandidateCheck::program when it fits
};

/// Checks one candidate's study; with `graphs`, op graphs are taken from (and kept in) it.
CandidateCheck check_candidate(const nlohmann::json& study, OpGraphCache* graphs = nullptr,
                               Build build = Build::Screened);

struct Study;
/// What the memory screen of `tpusim plan` (docs/plan.md, "Memory") knows of a decoder language
/// model's training step (no pipeline, every layer alike) without building its whole Program:
/// per core, of its compiled Program without CMEM, extrapolated from the Programs of 2 and 3
/// layers (each layer adds the same buffers): the resident bytes (weights, optimizer state,
/// infeed: live through the whole step, so at the peak too) and the most bytes live during the
/// forward pass (the layers' saved activations grow with the depth; no gradient is live yet).
/// Both are below the peak, and CMEM holds at most its size of them.
/// With them, from the same shallow Programs, a lower bound on the step (docs/plan.md, "Memory
/// and bounds before the whole build"): every buffer that fits alone counted in CMEM
/// (place_in_cmem_optimistic), each term on the line through depths 3 and 4 (extrapolated_bound
/// in evaluate.cpp): exact for the compute term, a sum over the layers' identical ops; below the
/// bisection and ingress terms, each the largest of such sums; the critical path where it grows
/// by no less from 3 to 4 than from 2 to 3 (measured below the whole Program's, not proven).
struct ScreenedMemory {
  double resident_bytes = 0;
  double forward_peak_bytes = 0;
  std::optional<plan::StepBound> bound;  ///< none: a term not in line (or not needed)
  double model_flops = 0;                ///< with `bound`: the whole Program's
  double examples_per_step = 0;
  double tokens_per_example = 0;
};
/// The screen's figures; std::nullopt for any other study, when a shallow build fails (the whole
/// build says why), or when the Program of 4 layers is not in line with those of 2 and 3 (not
/// built when the resident bytes alone, less a core's CMEM, are over the HBM). With
/// `resident_first` (check_candidate), the resident bytes are first taken from the shallow
/// Programs partitioned but not compiled, and when they alone are over, only they are given
/// (forward_peak_bytes the same, no bound): the verdict and its figure are the same.
std::optional<ScreenedMemory> screened_memory(const Study& s, const Topology& topology,
                                              OpGraphCache* graphs = nullptr,
                                              bool resident_first = false);

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
