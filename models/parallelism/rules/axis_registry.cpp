#include "models/parallelism/rules/axis_registry.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace tpusim {
namespace {

std::vector<AxisSpec>& axis_registry() {
  static std::vector<AxisSpec> r;
  return r;
}

bool builtin_place(int place) {
  for (int p :
       {kPlaceData, kPlaceFsdp, kPlaceBn, kPlaceSpatial, kPlaceSequence, kPlaceModel2, kPlaceModel})
    if (p == place) return true;
  return false;
}

}  // namespace

AxisRegistrar::AxisRegistrar(AxisSpec spec) {
  // Two axes at one place, or a second declaration of a name, is a tpusim bug.
  for (const auto& a : axis_registry())
    if (a.name == spec.name || a.place == spec.place)
      throw std::logic_error("mesh axis '" + spec.name + "' registered twice or at the place of '" +
                             a.name + "'");
  if (builtin_place(spec.place) || spec.degree == nullptr)
    throw std::logic_error("mesh axis '" + spec.name +
                           "': a built-in axis's place or no degree parameter");
  axis_registry().push_back(std::move(spec));
}

std::vector<AxisSpec> registered_axes() {
  std::vector<AxisSpec> r = axis_registry();
  std::sort(r.begin(), r.end(),
            [](const AxisSpec& a, const AxisSpec& b) { return a.place < b.place; });
  return r;
}

}  // namespace tpusim
