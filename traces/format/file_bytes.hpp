#pragma once
// Reading and writing whole files, gzip-compressed or not, and parsing JSON text with errors that
// name the file, line and column. Used by the trace reader/writer and the profile importer.
#include <nlohmann/json.hpp>
#include <string>

namespace tpusim::trace {

/// True if `bytes` starts with the gzip magic bytes 1f 8b.
bool is_gzip(const std::string& bytes);

/// Decompresses a gzip stream (several concatenated members are allowed). `name` names the
/// input in errors. Throws ConfigError on a truncated or corrupt stream, or if the output would
/// exceed kMaxTraceFileBytes (core/limits.hpp); it stops inflating there.
std::string gunzip(const std::string& bytes, const std::string& name);
/// Compresses `bytes` as one gzip member, at zlib's fastest level (Z_BEST_SPEED: a timeline or
/// trace is written once per run, and level 6 took half of a PaLM timeline's cost for a file 30 %
/// smaller).
std::string gzip(const std::string& bytes);

/// The file's contents, decompressed if they start with the gzip magic bytes. A file or its
/// decompressed contents past kMaxTraceFileBytes is refused before it is read whole.
std::string read_file_maybe_gzip(const std::string& path);
/// Writes `bytes` to `path`, gzip-compressed if the path ends in ".gz".
void write_file_maybe_gzip(const std::string& path, const std::string& bytes);

/// Deepest nesting of arrays/objects accepted in a trace or profile (real files need 6 or so);
/// the bound keeps hostile input from exhausting the stack.
constexpr int kMaxJsonDepth = 64;

/// Parses JSON text; errors name `name`:line:column and what was expected.
nlohmann::json parse_json_text(const std::string& text, const std::string& name);

}  // namespace tpusim::trace
