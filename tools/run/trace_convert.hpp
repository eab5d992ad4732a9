#pragma once
// The trace commands as library calls: `tpusim trace import` (a TPU profile or Chakra rank files
// as a trace), `tpusim trace info` (what a trace holds) and `tpusim trace rescale` (the trace on
// another mesh). docs/traces.md, docs/chakra.md.
#include <string>
#include <vector>

#include "traces/profile/profile_import.hpp"

namespace tpusim::cli {

struct ImportArgs {
  std::string profile, out, sizes, mesh;
  std::string format = "profile";
  trace::ImportOptions options;
  /// Which options the command line gave (--format chakra takes --model and
  /// --examples-per-step only when given, and refuses the profile-only options).
  bool model_given = false, examples_per_step_given = false;
  std::vector<std::string> profile_only_given;  ///< of --sizes, --device, --step, --ops-thread
};

/// Imports a.profile (a profile, or with a.format "chakra" a directory of rank files) and writes
/// the trace a.out; prints what it imported. Throws ConfigError on bad input.
void import_trace(const ImportArgs& a);

/// Prints what the trace at `path` holds, as text or (as_json) JSON.
void print_trace_info(const std::string& path, bool as_json);

/// Writes the trace at `in` rescaled to the mesh axes of `mesh` (e.g. "data=64") into `out`.
void rescale_trace(const std::string& in, const std::string& mesh, const std::string& out);

}  // namespace tpusim::cli
