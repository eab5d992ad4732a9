#include "sim/machine/machine.hpp"

#include <cstdlib>
#include <string>

#include "core/errors.hpp"

namespace tpusim {
namespace {
const std::string& name_of(const std::pair<const std::string, double>& e) { return e.first; }
const std::string& name_of(const std::string& e) { return e; }
}  // namespace

Machine::Machine(sc_core::sc_module_name name, const Topology& topology, const HardwareSpec& hw,
                 const std::map<std::string, double>& degraded, const std::set<std::string>& failed)
    : sc_core::sc_module(name), topology_(topology), hw_(hw) {
  std::size_t degraded_found = 0, failed_found = 0;
  static const char* kDim = "xyzw";
  const int n_dims = topology.num_dims();
  const int cpc = hw.cores_per_chip;
  ici_.assign(topology.num_link_slots(), nullptr);
  chips_.reserve(topology.num_chips());
  for (int c = 0; c < topology.num_chips(); ++c) {
    auto chip = std::make_unique<Chip>(("chip" + std::to_string(c)).c_str(), c);
    chip->ici.resize(n_dims * 2);
    for (int d = 0; d < n_dims; ++d) {
      for (int dir : {+1, -1}) {
        const int slot = topology.link_slot(c, d, dir);
        if (!topology.link_exists(slot)) continue;
        std::string lname = "chip" + std::to_string(c) + "_ici_" + kDim[d] + (dir > 0 ? "p" : "m");
        auto factor = degraded.find(lname);
        degraded_found += factor != degraded.end();
        auto link = std::make_unique<LinkModule>(
            sc_core::sc_module_name(lname.c_str()),
            hw.ici_bandwidth * (factor != degraded.end() ? factor->second : 1.0), hw.ici_latency);
        if (failed.count(lname)) {
          link->failed = true;
          ++failed_found;
        }
        ici_[slot] = link.get();
        link->index = static_cast<int>(all_links_.size());
        all_links_.push_back(link.get());
        chip->ici[d * 2 + (dir > 0 ? 0 : 1)] = std::move(link);
      }
    }
    chip->onchip.resize(cpc * cpc);
    for (int a = 0; a < cpc; ++a) {
      for (int b = 0; b < cpc; ++b) {
        if (a == b) continue;
        std::string lname =
            "chip" + std::to_string(c) + "_onchip_" + std::to_string(a) + "to" + std::to_string(b);
        auto link = std::make_unique<LinkModule>(sc_core::sc_module_name(lname.c_str()),
                                                 hw.onchip_bandwidth, hw.onchip_latency);
        link->index = static_cast<int>(all_links_.size());
        all_links_.push_back(link.get());
        chip->onchip[a * cpc + b] = std::move(link);
      }
    }
    chips_.push_back(std::move(chip));
  }
  any_failed_ = failed_found > 0;
  auto check_names = [&](const auto& names, const char* where) {
    for (const auto& entry : names) {
      const std::string& lname = name_of(entry);
      bool exists = false;
      for (const LinkModule* l : all_links_) exists |= lname == std::string(l->basename());
      if (!exists)
        throw ConfigError(where,
                          "'" + lname +
                              "' is not an ICI link of this machine; names are chipN_ici_ "
                              "then x, y, z or w, then p (+) or m (-), for links that exist");
    }
  };
  if (degraded_found != degraded.size()) check_names(degraded, "network.degraded_links");
  if (failed_found != failed.size()) check_names(failed, "network.failed_links");
}

std::vector<LinkModule*> Machine::links_of_chip(int chip) const {
  std::vector<LinkModule*> out;
  for (const auto& l : chips_[chip]->ici)
    if (l) out.push_back(l.get());
  for (const auto& l : chips_[chip]->onchip)
    if (l) out.push_back(l.get());
  return out;
}

Route Machine::route(int src, int dst) const {
  const int a = chip_of(src), b = chip_of(dst);
  if (a == b) {
    if (src == dst) return {};
    return {chips_[a]->onchip[core_in_chip(src) * hw_.cores_per_chip + core_in_chip(dst)].get()};
  }
  if (any_failed_) {
    Route r;
    int cur = a;
    for (int d = 0; d < topology_.num_dims(); ++d) {
      const int off = topology_.offset(topology_.coord(cur, d), topology_.coord(b, d), d);
      if (off == 0) continue;
      const int dir = off > 0 ? +1 : -1;
      if (!walk(cur, d, dir, std::abs(off), r) &&
          !(topology_.wraps(d) && walk(cur, d, -dir, topology_.dim(d) - std::abs(off), r)))
        throw ConfigError(
            "network.failed_links",
            "chip " + std::to_string(a) + " cannot reach chip " + std::to_string(b) +
                ": a failed link cuts dimension " + std::to_string(d) +
                (topology_.wraps(d) ? " both ways round its ring" : " (an open line)"));
      for (int k = 0; k < std::abs(off); ++k) cur = topology_.neighbor(cur, d, dir);
    }
    return r;
  }
  const std::vector<int> slots = topology_.route(a, b);
  Route r(slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i) r[i] = ici_[slots[i]];
  return r;
}

bool Machine::walk(int chip, int dim, int dir, int steps, Route& out) const {
  const std::size_t before = out.size();
  for (int k = 0; k < steps; ++k) {
    LinkModule* link = ici_[topology_.link_slot(chip, dim, dir)];
    if (!link || link->failed) {
      out.resize(before);
      return false;
    }
    out.push_back(link);
    chip = topology_.neighbor(chip, dim, dir);
  }
  return true;
}

}  // namespace tpusim
