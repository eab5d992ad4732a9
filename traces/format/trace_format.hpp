#pragma once
// The tpusim trace format: a recorded SPMD Program as versioned JSON, optionally gzip-compressed.
// traces/FORMAT.md describes every field. Plain C++ (no SystemC).
#include <nlohmann/json.hpp>
#include <string>

#include "models/program.hpp"

namespace tpusim {

namespace trace {
constexpr const char* kFormatName = "tpusim-trace";
/// Bump when a field changes meaning or a required field is added; readers reject other versions.
constexpr int kFormatVersion = 1;
/// Largest mesh a trace may describe (product of the axis sizes): 16 Mi devices, far beyond the
/// 8192 cores of a Multipod, small enough that per-device checks stay cheap.
constexpr long long kMaxMeshDevices = 1LL << 24;

/// A trace as read: the Program plus the optional "recorded_on" object (topology, hardware,
/// source; null if absent).
struct TraceFile {
  Program program;
  nlohmann::json recorded_on;
};

/// The trace document of a Program. `recorded_on` must be null or an object; its "topology", if
/// present, must be the topology object form ({"name", "dims", "wrap"}).
nlohmann::ordered_json program_to_json(const Program& program, const nlohmann::json& recorded_on);
/// Reads and checks a trace document; errors name `name` and the JSON path.
TraceFile trace_from_json(const nlohmann::json& doc, const std::string& name);
/// Parses trace bytes (gzip detected by magic bytes). The fuzz target's entry point.
TraceFile parse_trace(const std::string& bytes, const std::string& name);
/// Reads a trace file with its metadata.
TraceFile read_trace_file(const std::string& path);
}  // namespace trace

/// Writes `program` to `path` (gzip-compressed if the path ends in ".gz"). `recorded_on` is
/// optional metadata: {"topology": {...}, "hardware": {...}, "source": "...", ...}.
void write_trace(const Program& program, const std::string& path,
                 const nlohmann::json& recorded_on = nullptr);
/// Reads a trace written by write_trace (or by hand, following traces/FORMAT.md).
/// Throws ConfigError naming the file and JSON path of the first problem.
Program read_trace(const std::string& path);

}  // namespace tpusim
