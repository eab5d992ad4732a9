#pragma once
// The device tracks of a Chrome trace event file as the TensorFlow and JAX profilers write them
// for TPUs: {"traceEvents": [...]} (or a bare array), "M" metadata events naming processes
// ("/device:TPU:0 ...") and threads ("XLA Ops", "Steps"), and "X" complete events with "ts" and
// "dur" in microseconds.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tpusim::trace {

struct SpanEvent {
  std::size_t index = 0;  ///< position in traceEvents (for error messages)
  std::string name;
  double ts_us = 0;
  double dur_us = 0;
  const nlohmann::json* args = nullptr;  ///< the event's "args" object, or null
};

struct DeviceTrack {
  int tpu_id = -1;               ///< N of "/device:TPU:N"
  std::string process_name;      ///< as in the process_name metadata event
  std::vector<SpanEvent> ops;    ///< complete events on the ops thread, by start time
  std::vector<SpanEvent> steps;  ///< complete events on the "Steps" thread, by start time
};

/// The TPU device tracks, ordered by device id. `ops_thread` is the thread name whose events
/// are device ops ("XLA Ops"). Throws ConfigError naming `name` and traceEvents[i] for
/// malformed events on those threads (missing or negative "dur", non-numeric "ts", ...).
std::vector<DeviceTrack> read_device_tracks(const nlohmann::json& doc, const std::string& name,
                                            const std::string& ops_thread);

/// The thread name of the step markers.
constexpr const char* kStepsThread = "Steps";

}  // namespace tpusim::trace
