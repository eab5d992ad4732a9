#pragma once
// The elaborated machine: one Chip module per chip, each with its TensorCores, its outgoing ICI
// links (one LinkModule module per direction of each physical link) and the on-chip paths between
// its cores. Knows routes between cores; knows nothing of programs.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <systemc>
#include <vector>

#include "core/hardware.hpp"
#include "sim/network/link.hpp"
#include "sim/network/network.hpp"
#include "topologies/topology.hpp"

namespace tpusim {

class Chip : public sc_core::sc_module {
 public:
  Chip(sc_core::sc_module_name name, int id) : sc_core::sc_module(name), id(id) {}
  const int id;
  std::vector<std::unique_ptr<LinkModule>>
      ici;  ///< outgoing ICI links, by direction slot (null if absent)
  std::vector<std::unique_ptr<LinkModule>>
      onchip;  ///< [a * cores + b]: core a to core b (null on the diagonal)
};

class Machine : public sc_core::sc_module {
 public:
  /// `degraded`: ICI link name -> bandwidth factor (network.degraded_links); a name that is not
  /// a link of this machine is a ConfigError.
  /// `failed`: ICI link names that carry nothing (network.failed_links), likewise checked.
  Machine(sc_core::sc_module_name name, const Topology& topology, const HardwareSpec& hw,
          const std::map<std::string, double>& degraded = {},
          const std::set<std::string>& failed = {});

  const Topology& topology() const { return topology_; }
  const HardwareSpec& hardware() const { return hw_; }
  int num_cores() const { return topology_.num_chips() * hw_.cores_per_chip; }
  int chip_of(int core) const { return core / hw_.cores_per_chip; }
  int core_in_chip(int core) const { return core % hw_.cores_per_chip; }

  LinkModule* ici_link(int slot) const { return ici_[slot]; }
  /// The links a message from core `src` to core `dst` crosses: the on-chip path within a chip,
  /// else the dimension-order ICI route between their chips. Along a dimension whose shortest
  /// way crosses a failed link the route goes the other way round the ring, so it stays
  /// dimension-ordered; if both ways are cut (or the dimension is an open line) it throws
  /// ConfigError naming the two chips.
  Route route(int src, int dst) const;
  /// The links leaving a chip (ICI and on-chip).
  std::vector<LinkModule*> links_of_chip(int chip) const;
  /// Every link, for statistics.
  const std::vector<LinkModule*>& links() const { return all_links_; }

 private:
  const Topology& topology_;
  HardwareSpec hw_;
  std::vector<std::unique_ptr<Chip>> chips_;
  std::vector<LinkModule*> ici_;  ///< by topology link slot
  std::vector<LinkModule*> all_links_;
  bool any_failed_ = false;
  /// Appends the ICI links of `steps` hops from `chip` along `dim` in `dir`; false (and nothing
  /// appended) if one of them has failed.
  bool walk(int chip, int dim, int dir, int steps, Route& out) const;
};

}  // namespace tpusim
