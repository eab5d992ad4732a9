#pragma once
// A compiled Program in a file: `tpusim plan` builds each layout's Program to decide whether to
// simulate it, writes it next to the layout's study, and the `tpusim run --program FILE` it
// starts plays that Program instead of building it again (docs/plan.md, "Bounds before the whole
// build"). Binary, every field of Program and Op as it is in memory (doubles by their bytes), so
// a Program read back is the one written; tagged with the study it was built from and the
// tpusim build that built it (another build may build another Program for the same study).
#include <string>

#include "models/program.hpp"

namespace tpusim {

/// The tag of a Program built from the study whose resolved JSON hashes to `study_hash` by this
/// executable: the hash and the executable's GNU build ID (none when it was linked without one).
std::string program_file_tag(const std::string& study_hash);

/// Writes `program` to `path` with `tag` (program_file_tag).
/// Throws std::runtime_error when the file cannot be written.
void write_program_file(const std::string& path, const Program& program, const std::string& tag);

/// Reads the Program written to `path` with `tag`. Throws ConfigError naming `option` (the
/// command-line option that gave the path) when the file cannot be read, is not such a file, is
/// cut short or inconsistent, or was written for another tag (another study or tpusim build).
Program read_program_file(const std::string& path, const std::string& tag,
                          const std::string& option);

}  // namespace tpusim
