#pragma once
// Trace files written by the command-line tests: the JSON text of a small tpusim trace.
#include <string>

/// A one-mesh-axis trace (8 devices on "data") with the given ops (JSON text of the "ops" array).
inline std::string trace_with(const std::string& ops) {
  return R"({"format": "tpusim-trace", "version": 1, "model": "m", "examples_per_step": 8,
             "mesh": [{"name": "data", "size": 8}], "ops": [)" +
         ops + "]}";
}
