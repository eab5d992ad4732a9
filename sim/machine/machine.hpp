#pragma once
// The machine: its links (plain records, NetworkLink) and, as a SystemC module tree that reads as
// the hardware, the chips it simulates:
//   multipod.chip(x,y)             one Chip per chip with a TensorCore that runs
//   multipod.chip(x,y).core0       its TensorCores, each with its memory (hbm, behind a TLM-2.0
//                                  target socket) and its DMA engines (dma, the initiator)
//   multipod.hostN                 the hosts, with infeed (sim/machine/host.hpp)
// Links are named by their place, as the tree would name them (link_name):
//   multipod.chip(x,y).ici.x+      a chip's outgoing ICI links, one per direction (x+, x-, y+,
//                                  y-, z+, ... for the dimensions the topology has)
//   multipod.chip(x,y).onchip.0to1 the on-chip paths between its cores
//   multipod.dcn.host(N).tx        multislice: the data-center network (sim/machine/dcn.hpp)
// Machine's constructor builds every link (the routes and the symmetry search need them all);
// elaborate_cores() then elaborates the chips whose TensorCores run (a symmetric run's domain,
// else all), and the hosts: a symmetric run creates SystemC objects for its domain only. Knows
// routes between cores; knows nothing of programs.
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <systemc>
#include <vector>

#include "core/hardware.hpp"
#include "sim/core/tensor_core.hpp"
#include "sim/kernel/stats.hpp"
#include "sim/machine/dcn.hpp"
#include "sim/machine/host.hpp"
#include "sim/network/link.hpp"
#include "sim/network/network.hpp"
#include "topologies/topology.hpp"

namespace tpusim {

class Chip : public sc_core::sc_module {
 public:
  /// `build` elaborates the chip's children (it runs inside the constructor).
  Chip(sc_core::sc_module_name name, int id, const std::function<void(Chip&)>& build)
      : sc_core::sc_module(name), id(id) {
    build(*this);
  }
  const int id;
  /// core0, core1, ...: null for a core not elaborated (outside a symmetric run's domain).
  std::vector<std::unique_ptr<TensorCore>> cores;
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

class Machine : public sc_core::sc_module, public StatGroup {
 public:
  /// Builds every link (ICI, on-chip, DCN); no chips, TensorCores or hosts yet.
  Machine(sc_core::sc_module_name name, const Topology& topology, const HardwareSpec& hw,
          const MachineParts& parts = {});
  /// Elaborates the chips that hold a core `active` marks (per core, 1: elaborate; null: every
  /// core) with those TensorCores, in core order, then the hosts (parts.infeed), whose SC_METHODs
  /// come after the cores'. Once, before the simulation starts.
  void elaborate_cores(const std::vector<char>* active);
  /// Per core: its spans go to the timeline (replaces MachineParts::traced before
  /// elaborate_cores; a symmetric run traces the domain images of the cores asked for).
  void set_traced(std::vector<bool> traced) { parts_.traced = std::move(traced); }

  const Topology& topology() const { return topology_; }
  const HardwareSpec& hardware() const { return hw_; }
  int num_cores() const { return topology_.num_chips() * hw_.devices_per_chip; }
  int chip_of(int core) const { return core / hw_.devices_per_chip; }
  int core_in_chip(int core) const { return core % hw_.devices_per_chip; }
  /// True if core `core` was elaborated (elaborate_cores: every core, or a symmetric run's
  /// domain).
  bool has_core(int core) const {
    return static_cast<std::size_t>(core) < cores_.size() && cores_[core] != nullptr;
  }
  /// The TensorCore `core`; only for a core that has_core().
  TensorCore& core(int core) const { return *cores_[core]; }
  HostSet* hosts() const { return hosts_.get(); }
  /// Slices of the machine (topology.slices); only one is elaborated, the others are its images.
  int slices() const { return topology_.slices(); }
  /// The data-center network when slices() > 1, else null.
  const Dcn* dcn() const { return dcn_.get(); }
  /// The route of core `core`'s cross-slice traffic (its host's DCN links); slices() > 1.
  const Route& dcn_route(int core) const { return dcn_->route_of_chip(chip_of(core)); }
  /// "chip(x,y)": a chip's module name, its coordinates in the topology's dimensions.
  static std::string chip_name(const Topology& topology, int chip);

  NetworkLink* ici_link(int slot) const { return ici_[slot]; }
  /// A link's name, as its place in the machine: multipod.chip(5,0).ici.x+,
  /// multipod.chip(0,0).onchip.0to1, multipod.dcn.host(3).tx.
  std::string link_name(const NetworkLink& link) const;
  /// Its name inside its chip (ici.x+, onchip.0to1) or the DCN (host(3).tx).
  std::string link_place_name(const NetworkLink& link) const;
  /// True for a host's DCN interfaces (tx), false for its fabric share and every other link.
  bool is_dcn_tx(const NetworkLink& l) const {
    return is_dcn_link(l) && (l.index - first_dcn_link_) % 2 == 0;
  }
  /// Writes every link's statistics (bytes, busy_ns, transfers) under its name.
  void visit_stats(const std::string& prefix, StatVisitor& visitor) const override;
  /// The links a message from core `src` to core `dst` crosses: the on-chip path within a chip,
  /// else the dimension-order ICI route between their chips. Along a dimension whose shortest
  /// way crosses a failed link the route goes the other way round the ring, so it stays
  /// dimension-ordered; if both ways are cut (or the dimension is an open line) it throws
  /// ConfigError naming the two chips.
  Route route(int src, int dst) const;
  /// The links leaving a chip (ICI and on-chip).
  std::vector<NetworkLink*> links_of_chip(int chip) const;
  /// Whether routes move with the chips: route(src, dst) moved by a translation of the grid
  /// (Topology::shifted) is the route between the moved cores, for cores whose coordinates
  /// stay in range without wrapping on an open dimension. True on a plain grid or torus with no
  /// failed link (a detour does not move with the chips; a twisted torus's wrap links land
  /// shifted).
  bool routes_translate() const { return !any_failed_ && topology_.twisted_dim() < 0; }
  /// The image of an ICI or on-chip link when the chips move by `by` (Topology::shifted): the
  /// same direction, or the same pair of cores, at the image chip. Null for a DCN link or where
  /// the image chip lacks that link.
  NetworkLink* shifted_link(const NetworkLink& link, const std::vector<int>& by) const;
  /// A link's chip and its place there: dim * 2 + (dir < 0) for an ICI link, 2 * dims +
  /// a * devices + b for the on-chip path a -> b; chip -1 for a DCN link.
  std::pair<int, int> place_of(const NetworkLink& link) const { return place_[link.index]; }
  /// The link at `place` of `chip` (as place_of gives it), null where the chip has none.
  NetworkLink* link_at(int chip, int place) const;
  /// The index (links()) of link_at(chip, place), -1 where the chip has none; a table lookup
  /// that does not touch the link (for counting many routes' hops, profile_plans).
  int link_index_at(int chip, int place) const {
    const int places = topology_.num_dims() * 2 + hw_.devices_per_chip * hw_.devices_per_chip;
    return index_at_[static_cast<std::size_t>(chip) * places + place];
  }
  /// True for the data-center network's links (multislice).
  bool is_dcn_link(const NetworkLink& l) const { return dcn_ && l.index >= first_dcn_link_; }
  /// Every link, for statistics.
  const std::vector<NetworkLink*>& links() const { return all_links_; }

 private:
  void build_links(int chip, const MachineParts& parts);
  NetworkLink* make_link(Bandwidth bandwidth, Duration latency);
  /// Every degraded or failed link name is a link of this machine, else a ConfigError (which
  /// for an old-style name, chipN_ici_xp, suggests its name in the module tree).
  void check_link_names(const MachineParts& parts) const;
  std::string ici_link_name(int chip, int dim, int dir) const;

  const Topology& topology_;
  HardwareSpec hw_;
  MachineParts parts_;  ///< what elaborate_cores builds from
  bool cores_elaborated_ = false;
  std::vector<std::unique_ptr<Chip>> chips_;  ///< the elaborated chips, in chip order
  std::vector<TensorCore*> cores_;            ///< per core; null: not elaborated
  std::deque<NetworkLink> link_store_;        ///< every link (stable addresses)
  std::vector<NetworkLink*> onchip_;          ///< [chip][a * cores + b]: core a to core b
  std::unique_ptr<HostSet> hosts_;
  std::unique_ptr<Dcn> dcn_;
  int first_dcn_link_ = 0;
  std::vector<NetworkLink*> ici_;  ///< by topology link slot
  std::vector<NetworkLink*> all_links_;
  std::vector<std::pair<int, int>> place_;  ///< per link (all_links_ index): place_of
  std::vector<int> index_at_;               ///< per chip and place: link_index_at
  bool any_failed_ = false;
  /// Appends the ICI links of `steps` hops from `chip` along `dim` in `dir`; false (and nothing
  /// appended) if one of them has failed.
  bool walk(int chip, int dim, int dir, int steps, Route& out) const;
};

}  // namespace tpusim
