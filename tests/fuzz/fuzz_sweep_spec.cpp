// libFuzzer target: the sweep file parser, the expansion of its points and the expression parser.
// The input is a sweep document; a base given by file name resolves against configs/studies/.
// Points are expanded with a validator that only resolves presets (the study loader has its own
// target), so that up to kMaxSweepPoints points stay fast. Every input must expand or be refused
// with a ConfigError. The input is also parsed and evaluated as one expression.
#include <cstdint>
#include <map>
#include <string>

#include "core/config.hpp"
#include "core/errors.hpp"
#include "tools/sweep/expand.hpp"
#include "tools/sweep/expr.hpp"
#include "tools/sweep/sweep_spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpusim;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    const auto e = sweep::Expr::parse(bytes, "fuzz");
    (void)e.eval({{"chips", 16}, {"cores", 32}, {"cores_per_chip", 2}, {"base", 1}}, "fuzz");
  } catch (const ConfigError&) {
  }
  try {
    const auto spec = sweep::parse_sweep(parse_json_text(bytes, "fuzz.json"), "fuzz.json",
                                         config_dir() + "/studies");
    (void)sweep::expand(spec, {}, [](const nlohmann::json& study) {
      nlohmann::json doc = study;
      resolve_presets(doc);
      return doc;
    });
  } catch (const ConfigError&) {
  }
  return 0;
}
