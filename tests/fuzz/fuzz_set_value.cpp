// libFuzzer target: the --set value parser. The input is one assignment PATH=VALUE as given on the
// command line (VALUE read as JSON, else as a string), applied to a small study document and
// then validated. Any input must apply or be refused with a ConfigError; nothing else: no
// crash, no other exception, no unbounded memory (nesting past 256 levels is refused).
#include <cstdint>
#include <string>

#include "core/config.hpp"
#include "core/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpusim;
  const std::string assignment(reinterpret_cast<const char*>(data), size);
  nlohmann::json doc = {{"workload", {{"model", "bert_large"}, {"global_batch", 32}}},
                        {"topology", "4x4"}};
  try {
    apply_set(doc, assignment);
    (void)doc.dump();
  } catch (const ConfigError&) {
  }
  return 0;
}
