#include "sim/kernel/stats.hpp"

#include <systemc>

namespace tpusim {
namespace {
void visit(const sc_core::sc_object& object, StatVisitor& visitor) {
  if (const auto* group = dynamic_cast<const StatGroup*>(&object))
    group->visit_stats(object.name(), visitor);
  for (const sc_core::sc_object* child : object.get_child_objects()) visit(*child, visitor);
}

std::size_t count(const sc_core::sc_object& object) {
  std::size_t n = 1;
  for (const sc_core::sc_object* child : object.get_child_objects()) n += count(*child);
  return n;
}
}  // namespace

void StatGroup::add_stat(const char* name, const char* unit, const char* description,
                         std::function<double()> value) {
  stats_.push_back({name, unit, description, std::move(value)});
}

void StatGroup::visit_stats(const std::string& prefix, StatVisitor& visitor) const {
  for (const Stat& s : stats_) {
    visitor.describe(std::string(kind_) + "." + s.name, s.unit, s.description);
    visitor.stat(prefix + "." + s.name, s.value());
  }
}

void visit_module_stats(StatVisitor& visitor) {
  for (const sc_core::sc_object* top : sc_core::sc_get_top_level_objects()) visit(*top, visitor);
}

std::size_t count_systemc_objects() {
  std::size_t n = 0;
  for (const sc_core::sc_object* top : sc_core::sc_get_top_level_objects()) n += count(*top);
  return n;
}

}  // namespace tpusim
