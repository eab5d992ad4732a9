#pragma once
// Reading values out of one profile event's "args": numbers that may be written as strings,
// result shapes, replica groups. Shared by the compute and collective parts of the importer.
#include <optional>
#include <string>
#include <vector>

#include "traces/hlo/xla_hlo_text.hpp"
#include "traces/profile/device_tracks.hpp"

namespace tpusim::trace {

/// "file: traceEvents[i]" (+ ".args.key" if given).
std::string event_where(const std::string& file, const SpanEvent& e,
                        const std::string& arg_key = "");

/// args[key] as a non-negative number; profilers write numbers or numeric strings ("4096").
/// nullopt if absent; ConfigError naming the arg if it is not a number, is negative, or is past
/// kMaxOpFlops ("flops") or kMaxBytes (every other key: sizes).
std::optional<double> arg_non_negative(const std::string& file, const SpanEvent& e,
                                       const char* key);
/// args[key] if it is a string; nullopt if absent; ConfigError if it is not a string.
std::optional<std::string> arg_string(const std::string& file, const SpanEvent& e, const char* key);

/// The event's result shape: args "shape", else "shape_with_layout", else the result shape in
/// "long_name". nullopt if none is given or it does not parse.
std::optional<std::vector<ArrayShape>> event_result_shape(const std::string& file,
                                                          const SpanEvent& e);
/// The HLO attribute (e.g. "replica_groups") from args[attr] or from "long_name".
std::optional<std::string> event_hlo_attribute(const std::string& file, const SpanEvent& e,
                                               const std::string& attr);

}  // namespace tpusim::trace
