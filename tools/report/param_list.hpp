#pragma once
// `tpusim params` as library calls: every declared parameter with its unit, default and
// meaning, or the classes of the memory report.
#include <string>

namespace tpusim::cli {

/// Prints the classes of the memory report (dtype, lifetime, source), as text or JSON.
void list_memory_classes(bool as_json);

/// Prints every parameter whose path contains `filter` (all if empty), as text or JSON; throws
/// ConfigError if none does.
void run_params(bool as_json, const std::string& filter);

}  // namespace tpusim::cli
