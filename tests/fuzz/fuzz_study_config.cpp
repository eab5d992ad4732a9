// libFuzzer target: the study loader. The input is a study's JSON text, optionally followed by a
// NUL byte and up to four --set assignments, one per line. Presets resolve from the source tree's
// configs/. Any input must load or be refused with a ConfigError; nothing else.
#include <cstdint>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpusim;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const auto nul = bytes.find('\0');
  std::vector<std::string> sets;
  if (nul != std::string::npos) {
    std::size_t start = nul + 1;
    while (start <= bytes.size() && sets.size() < 4) {
      const auto end = bytes.find('\n', start);
      sets.push_back(bytes.substr(start, end == std::string::npos ? end : end - start));
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  try {
    const Config c = load_config(parse_json_text(bytes.substr(0, nul), "fuzz.json"), sets);
    (void)c.json().dump();
  } catch (const ConfigError&) {
  }
  return 0;
}
