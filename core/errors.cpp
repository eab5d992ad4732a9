#include "core/errors.hpp"

namespace tpusim {
namespace {
std::string join(const std::vector<Problem>& problems) {
  std::string out;
  for (const auto& p : problems) {
    if (!out.empty()) out += '\n';
    out += p.line();
  }
  return out;
}
}  // namespace

ConfigError::ConfigError(std::string where, std::string what)
    : ConfigError(std::vector<Problem>{{std::move(where), std::move(what)}}) {}

ConfigError::ConfigError(std::vector<Problem> problems)
    : std::runtime_error(join(problems)), problems_(std::move(problems)) {}

void ProblemList::throw_if_any() const {
  if (!items_.empty()) throw ConfigError(items_);
}

}  // namespace tpusim
