// libFuzzer target: the trace reader. Any input must either read as a Program or be refused
// with a ConfigError; nothing else (no crash, no other exception, no sanitizer report). A trace
// that reads must write and read back to the same document, and rescaling it must not crash.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/errors.hpp"
#include "traces/format/rescale.hpp"
#include "traces/format/trace_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpusim;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  trace::TraceFile t;
  try {
    t = trace::parse_trace(bytes, "fuzz.json");
  } catch (const ConfigError&) {
    return 0;
  }
  const auto doc = trace::program_to_json(t.program, t.recorded_on);
  const auto again = trace::trace_from_json(nlohmann::json::parse(doc.dump()), "round-trip");
  if (trace::program_to_json(again.program, again.recorded_on) != doc) std::abort();
  try {
    std::vector<MeshAxis> doubled = t.program.mesh;
    doubled.front().size = doubled.front().size > (1 << 20) ? 1 : doubled.front().size * 2;
    rescale(t.program, doubled);
  } catch (const ConfigError&) {
  }
  return 0;
}
