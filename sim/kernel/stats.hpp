#pragma once
// Statistics registered on the module that owns them, as gem5's statistics groups and SST's
// registered statistics are: a module that keeps statistics is also a StatGroup and registers
// each one once, at elaboration, with its name, unit and meaning and a reader of the plain member
// the hot path increments (no string lookup per event). visit_module_stats() walks the SystemC
// module tree and reads every group's statistics, each named by its module's place in the tree
// (multipod.chip(3,1).core0.hbm.bytes_read).
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace tpusim {

/// What reads statistics: each one's full name and value; once per kind of statistic
/// ("hbm.bytes_read": the group's kind, then the name), its unit and meaning.
class StatVisitor {
 public:
  virtual void stat(const std::string& path, double value) = 0;
  virtual void describe(const std::string& kind_and_name, const char* unit,
                        const char* description) = 0;

 protected:
  ~StatVisitor() = default;
};

class StatGroup {
 public:
  /// `kind` names what the group is (core, hbm, dma, link): the key of its statistics'
  /// descriptions.
  explicit StatGroup(const char* kind) : kind_(kind) {}
  StatGroup(const StatGroup&) = delete;
  StatGroup& operator=(const StatGroup&) = delete;
  const char* stat_kind() const { return kind_; }
  /// Reads the group's statistics under `prefix` (its module's full name): the registered ones;
  /// a group whose parts are not modules adds theirs in an override.
  virtual void visit_stats(const std::string& prefix, StatVisitor& visitor) const;

 protected:
  ~StatGroup() = default;
  /// Registers a statistic; `name` may hold dots (mxu.busy_ns: a part of the module that is not
  /// a module itself). `value` reads it when the statistics are written.
  void add_stat(const char* name, const char* unit, const char* description,
                std::function<double()> value);
  /// Room for `n` statistics, registered with one allocation.
  void reserve_stats(std::size_t n) { stats_.reserve(n); }

 private:
  struct Stat {
    const char* name;
    const char* unit;
    const char* description;
    std::function<double()> value;
  };
  const char* kind_;
  std::vector<Stat> stats_;
};

/// Walks every SystemC object from the top-level ones down, in the kernel's order, and reads the
/// statistics of each that is a StatGroup.
void visit_module_stats(StatVisitor& visitor);
/// SystemC objects elaborated: the top-level ones and their children, recursively.
std::size_t count_systemc_objects();

}  // namespace tpusim
