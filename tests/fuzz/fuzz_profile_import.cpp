// libFuzzer target: the profile importer (Chrome trace events). Any input must either import or
// be refused with a ConfigError. An imported Program must be a valid trace: written and read
// back, it gives the same document.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/errors.hpp"
#include "traces/format/trace_format.hpp"
#include "traces/profile/profile_import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpusim;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  trace::ImportResult r;
  try {
    r = trace::import_profile_bytes(bytes, "fuzz.json", trace::ImportOptions{});
  } catch (const ConfigError&) {
    return 0;
  }
  const auto doc = trace::program_to_json(r.program, nullptr);
  const auto back = trace::trace_from_json(nlohmann::json::parse(doc.dump()), "imported");
  if (trace::program_to_json(back.program, nullptr) != doc) std::abort();
  return 0;
}
