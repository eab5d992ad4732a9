// libFuzzer target: the Chakra reader. The input is the bytes of one rank file (a one-rank
// trace directory: DIR/et.0.et); the importer must read it as a Program or refuse it with a
// ConfigError; nothing else (no crash, no other exception, no sanitizer report). What it reads
// must be a trace that the trace reader (and so replay) reads back: `trace import --format
// chakra` never writes a trace that replay refuses.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/errors.hpp"
#include "traces/chakra/chakra.hpp"
#include "traces/format/trace_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpusim;
  static const std::string dir = [] {
    const std::string d = "/tmp/fuzz_chakra_reader_" + std::to_string(::getpid());
    std::filesystem::create_directories(d);
    return d;
  }();
  {
    std::ofstream out(dir + "/et.0.et", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  trace::ChakraImport imported;
  try {
    imported = trace::read_chakra(dir, {});
  } catch (const ConfigError&) {
    return 0;
  }
  const auto doc = trace::program_to_json(imported.trace.program, imported.trace.recorded_on);
  try {
    (void)trace::trace_from_json(nlohmann::json::parse(doc.dump()), "imported.json");
  } catch (const ConfigError&) {
    std::abort();  // an import the trace reader refuses
  }
  return 0;
}
