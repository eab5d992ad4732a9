#pragma once
// The elaborated machine as a SystemC module tree that reads as the hardware:
//   multipod.chip(x,y)             one Chip per chip, named by its grid coordinates
//   multipod.chip(x,y).core0       its TensorCores, each with mxu, vpu, hbm and dma children
//   multipod.chip(x,y).ici.x+      its outgoing ICI links, one LinkModule per direction (x+, x-,
//                                  y+, y-, z+, ... for the dimensions the topology has)
//   multipod.chip(x,y).onchip.0to1 the on-chip paths between its cores
//   multipod.hostN                 the hosts, with infeed (sim/machine/host.hpp)
//   multipod.dcn                   multislice: the data-center network (sim/machine/dcn.hpp)
// SystemC makes an object the child of the module on top of its hierarchy stack. Machine's
// constructor elaborates the chips with their links and the DCN; elaborate_cores() then
// re-enters each chip to build the TensorCores that run (a symmetric run's domain, else all),
// and builds the hosts. Knows routes between cores; knows nothing of programs.
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <systemc>
#include <vector>

#include "core/hardware.hpp"
#include "sim/core/tensor_core.hpp"
#include "sim/machine/dcn.hpp"
#include "sim/machine/host.hpp"
#include "sim/network/link.hpp"
#include "sim/network/network.hpp"
#include "topologies/topology.hpp"

namespace tpusim {

/// A module whose children are the objects `build` creates (it runs inside the constructor).
class Assembly : public sc_core::sc_module {
 public:
  Assembly(sc_core::sc_module_name name, const std::function<void()>& build)
      : sc_core::sc_module(name) {
    build();
  }
};

class Chip : public sc_core::sc_module {
 public:
  /// `build` elaborates the chip's children (it runs inside the constructor).
  Chip(sc_core::sc_module_name name, int id, const std::function<void(Chip&)>& build)
      : sc_core::sc_module(name), id(id) {
    build(*this);
  }
  const int id;
  /// core0, core1, ...: null for a core not elaborated (outside a symmetric run's domain); empty
  /// before Machine::elaborate_cores or without cores.
  std::vector<std::unique_ptr<TensorCore>> cores;
  std::unique_ptr<Assembly> ici_ports, onchip_ports;
  std::vector<std::unique_ptr<LinkModule>>
      ici;  ///< outgoing ICI links, by direction slot (null if absent)
  std::vector<std::unique_ptr<LinkModule>>
      onchip;  ///< [a * cores + b]: core a to core b (null on the diagonal)
};

/// What Machine elaborates besides its chips' links: the TensorCores and the hosts (both in
/// Machine::elaborate_cores).
struct MachineParts {
  /// network.degraded_links: ICI link name (as in reports) -> bandwidth factor; a name that is
  /// not a link of this machine is a ConfigError.
  std::map<std::string, double> degraded;
  std::set<std::string> failed;  ///< network.failed_links: links that carry nothing, likewise
  const ExecutionContext* cores = nullptr;  ///< null: no TensorCores (links only)
  std::vector<bool> traced;                 ///< per core: its spans go to the timeline
  std::vector<double> compute_scale;        ///< per core; empty: 1 for all
  /// With hosts (tpusim train): what they feed, their parameters and their event queue.
  const InfeedPlan* infeed = nullptr;
  HostOptions hosts;
  EventQueue* queue = nullptr;
  /// Multislice (topology.slices > 1): the data-center network's parameters.
  DcnOptions dcn;
};

class Machine : public sc_core::sc_module {
 public:
  /// Elaborates the chips, their links and the DCN; no TensorCores and no hosts yet.
  Machine(sc_core::sc_module_name name, const Topology& topology, const HardwareSpec& hw,
          const MachineParts& parts = {});
  /// Elaborates the TensorCores of the cores `active` marks (per core, 1: elaborate; null:
  /// every core), each as a child of its chip, in core order, then the hosts (parts.infeed):
  /// their SC_METHODs are created after the cores' as when the constructor built both, so the
  /// kernel runs the processes in the same order. Once, before the simulation starts.
  void elaborate_cores(const std::vector<char>* active);

  const Topology& topology() const { return topology_; }
  const HardwareSpec& hardware() const { return hw_; }
  int num_cores() const { return topology_.num_chips() * hw_.devices_per_chip; }
  int chip_of(int core) const { return core / hw_.devices_per_chip; }
  int core_in_chip(int core) const { return core % hw_.devices_per_chip; }
  /// True if core `core` was elaborated (elaborate_cores: every core, or a symmetric run's
  /// domain).
  bool has_core(int core) const {
    const auto& cores = chips_[chip_of(core)]->cores;
    return static_cast<std::size_t>(core_in_chip(core)) < cores.size() &&
           cores[core_in_chip(core)] != nullptr;
  }
  /// The TensorCore `core`; only for a core that has_core().
  TensorCore& core(int core) const { return *chips_[chip_of(core)]->cores[core_in_chip(core)]; }
  HostSet* hosts() const { return hosts_.get(); }
  /// Slices of the machine (topology.slices); only one is elaborated, the others are its images.
  int slices() const { return topology_.slices(); }
  /// The data-center network when slices() > 1, else null.
  const Dcn* dcn() const { return dcn_.get(); }
  /// The route of core `core`'s cross-slice traffic (its host's DCN links); slices() > 1.
  const Route& dcn_route(int core) const { return dcn_->route_of_chip(chip_of(core)); }
  /// "chip(x,y)": a chip's module name, its coordinates in the topology's dimensions.
  static std::string chip_name(const Topology& topology, int chip);

  LinkModule* ici_link(int slot) const { return ici_[slot]; }
  /// The links a message from core `src` to core `dst` crosses: the on-chip path within a chip,
  /// else the dimension-order ICI route between their chips. Along a dimension whose shortest
  /// way crosses a failed link the route goes the other way round the ring, so it stays
  /// dimension-ordered; if both ways are cut (or the dimension is an open line) it throws
  /// ConfigError naming the two chips.
  Route route(int src, int dst) const;
  /// The links leaving a chip (ICI and on-chip).
  std::vector<LinkModule*> links_of_chip(int chip) const;
  /// Whether routes move with the chips: route(src, dst) moved by a translation of the grid
  /// (Topology::shifted) is the route between the moved cores, for cores whose coordinates
  /// stay in range without wrapping on an open dimension. True on a plain grid or torus with no
  /// failed link (a detour does not move with the chips; a twisted torus's wrap links land
  /// shifted).
  bool routes_translate() const { return !any_failed_ && topology_.twisted_dim() < 0; }
  /// The image of an ICI or on-chip link when the chips move by `by` (Topology::shifted): the
  /// same direction, or the same pair of cores, at the image chip. Null for a DCN link or where
  /// the image chip lacks that link.
  LinkModule* shifted_link(const LinkModule& link, const std::vector<int>& by) const;
  /// A link's chip and its place there: dim * 2 + (dir < 0) for an ICI link, 2 * dims +
  /// a * devices + b for the on-chip path a -> b; chip -1 for a DCN link.
  std::pair<int, int> place_of(const LinkModule& link) const { return place_[link.index]; }
  /// The link at `place` of `chip` (as place_of gives it), null where the chip has none.
  LinkModule* link_at(int chip, int place) const;
  /// True for the data-center network's links (multislice).
  bool is_dcn_link(const LinkModule& l) const { return dcn_ && l.index >= first_dcn_link_; }
  /// Every link, for statistics.
  const std::vector<LinkModule*>& links() const { return all_links_; }

 private:
  void build_chip(Chip& chip, const MachineParts& parts);
  std::unique_ptr<LinkModule> make_link(const char* name, Bandwidth bandwidth, Duration latency);
  /// Every degraded or failed link name is a link of this machine, else a ConfigError (which
  /// for an old-style name, chipN_ici_xp, suggests its name in the module tree).
  void check_link_names(const MachineParts& parts) const;
  std::string ici_link_name(int chip, int dim, int dir) const;

  const Topology& topology_;
  HardwareSpec hw_;
  MachineParts parts_;  ///< what elaborate_cores builds from
  bool cores_elaborated_ = false;
  std::vector<std::unique_ptr<Chip>> chips_;
  std::unique_ptr<HostSet> hosts_;
  std::unique_ptr<Dcn> dcn_;
  int first_dcn_link_ = 0;
  std::vector<LinkModule*> ici_;  ///< by topology link slot
  std::vector<LinkModule*> all_links_;
  std::vector<std::pair<int, int>> place_;  ///< per link (all_links_ index): place_of
  bool any_failed_ = false;
  /// Appends the ICI links of `steps` hops from `chip` along `dim` in `dir`; false (and nothing
  /// appended) if one of them has failed.
  bool walk(int chip, int dim, int dir, int steps, Route& out) const;
};

}  // namespace tpusim
