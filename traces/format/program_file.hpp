#pragma once
// A compiled Program in a file: `tpusim plan` builds each layout's Program to decide whether to
// simulate it, writes it next to the layout's study, and the `tpusim run --program FILE` it
// starts plays that Program instead of building it again (docs/plan.md, "Bounds before the whole
// build"). Binary, every field of Program and Op as it is in memory (doubles by their bytes), so
// a Program read back is the one written; tagged with the study it was built from.
#include <string>

#include "models/program.hpp"

namespace tpusim {

/// Writes `program` to `path` with `tag` (the hash of the resolved study it was built from).
/// Throws std::runtime_error when the file cannot be written.
void write_program_file(const std::string& path, const Program& program, const std::string& tag);

/// Reads the Program written to `path` with `tag`. Throws ConfigError naming `option` (the
/// command-line option that gave the path) when the file cannot be read, is not such a file, is
/// cut short or inconsistent, or was written for another tag (another study).
Program read_program_file(const std::string& path, const std::string& tag,
                          const std::string& option);

}  // namespace tpusim
