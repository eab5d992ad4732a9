#include "sim/machine/machine.hpp"

#include <cstdlib>
#include <regex>
#include <stdexcept>
#include <string>

#include "core/errors.hpp"

namespace tpusim {
namespace {
const char* const kDim = "xyzw";
}  // namespace

Machine::Machine(sc_core::sc_module_name name, const Topology& topology, const HardwareSpec& hw,
                 const MachineParts& parts)
    : sc_core::sc_module(name), StatGroup("link"), topology_(topology), hw_(hw), parts_(parts) {
  ici_.assign(topology.num_link_slots(), nullptr);
  const int cpc = hw_.devices_per_chip;
  onchip_.assign(static_cast<std::size_t>(topology.num_chips()) * cpc * cpc, nullptr);
  for (int c = 0; c < topology.num_chips(); ++c) build_links(c, parts);
  // link_index_at: the links' indices by chip and place, read without touching the links.
  const int places = topology.num_dims() * 2 + cpc * cpc;
  index_at_.assign(static_cast<std::size_t>(topology.num_chips()) * places, -1);
  for (int c = 0; c < topology.num_chips(); ++c)
    for (int p = 0; p < places; ++p)
      if (const NetworkLink* l = link_at(c, p))
        index_at_[static_cast<std::size_t>(c) * places + p] = l->index;
  first_dcn_link_ = static_cast<int>(all_links_.size());
  if (topology.slices() > 1)
    dcn_ = std::make_unique<Dcn>(topology, topology.slices(), parts.dcn,
                                 [this](Bandwidth b, Duration l) { return make_link(b, l); });
  check_link_names(parts);
}

std::string Machine::chip_name(const Topology& topology, int chip) {
  std::string s = "chip(";
  for (int d = 0; d < topology.num_dims(); ++d)
    s += (d ? "," : "") + std::to_string(topology.coord(chip, d));
  return s + ")";
}

std::string Machine::ici_link_name(int chip, int dim, int dir) const {
  return std::string(name()) + "." + chip_name(topology_, chip) + ".ici." + kDim[dim] +
         (dir > 0 ? "+" : "-");
}

std::string Machine::link_place_name(const NetworkLink& link) const {
  const auto [chip, place] = place_[link.index];
  if (chip < 0) {
    const int k = link.index - first_dcn_link_;
    return "host(" + std::to_string(k / 2) + ")." + (k % 2 == 0 ? "tx" : "fabric");
  }
  const int ici_places = topology_.num_dims() * 2;
  if (place < ici_places)
    return std::string("ici.") + kDim[place / 2] + (place % 2 == 0 ? "+" : "-");
  const int cpc = hw_.devices_per_chip, p = place - ici_places;
  return "onchip." + std::to_string(p / cpc) + "to" + std::to_string(p % cpc);
}

std::string Machine::link_name(const NetworkLink& link) const {
  const int chip = place_[link.index].first;
  return std::string(name()) + "." + (chip < 0 ? "dcn" : chip_name(topology_, chip)) + "." +
         link_place_name(link);
}

NetworkLink* Machine::make_link(Bandwidth bandwidth, Duration latency) {
  NetworkLink& link = link_store_.emplace_back(bandwidth, latency);
  link.index = static_cast<int>(all_links_.size());
  all_links_.push_back(&link);
  place_.emplace_back(-1, -1);
  return &link;
}

void Machine::elaborate_cores(const std::vector<char>* active) {
  if (cores_elaborated_) throw std::logic_error("tpusim bug: the cores are elaborated twice");
  cores_elaborated_ = true;
  sc_core::sc_simcontext* sim = sc_core::sc_get_curr_simcontext();
  const int cpc = hw_.devices_per_chip;
  const MachineParts& parts = parts_;
  cores_.assign(static_cast<std::size_t>(num_cores()), nullptr);
  // The machine's constructor has returned: pushing it back on SystemC's hierarchy stack makes
  // the chips (and the hosts) its children, named multipod.chip(x,y) as if it had built them.
  sim->hierarchy_push(this);
  if (parts.cores)
    for (int c = 0; c < topology_.num_chips(); ++c) {
      bool runs = false;  // a chip none of whose cores runs is not elaborated
      for (int k = 0; k < cpc; ++k) runs = runs || !active || (*active)[c * cpc + k];
      if (!runs) continue;
      chips_.push_back(std::make_unique<Chip>(chip_name(topology_, c).c_str(), c, [&](Chip& chip) {
        chip.cores.resize(static_cast<std::size_t>(cpc));
        for (int k = 0; k < cpc; ++k) {
          const int id = c * cpc + k;
          if (active && !(*active)[id]) continue;
          chip.cores[k] = std::make_unique<TensorCore>(
              ("core" + std::to_string(k)).c_str(), id, *parts.cores,
              id < static_cast<int>(parts.traced.size()) && parts.traced[id],
              parts.compute_scale.empty() ? 1.0 : parts.compute_scale[id]);
          cores_[id] = chip.cores[k].get();
        }
      }));
    }
  // The hosts' wake reaches only the cores that exist (a host outside the domain feeds cores
  // that do not run).
  if (parts.infeed)
    hosts_ = std::make_unique<HostSet>(topology_, cpc, parts.hosts, *parts.infeed, *parts.queue,
                                       [this](int c) {
                                         if (has_core(c)) core(c).wake();
                                       });
  sim->hierarchy_pop();
}

void Machine::build_links(int c, const MachineParts& parts) {
  const int cpc = hw_.devices_per_chip;
  for (int d = 0; d < topology_.num_dims(); ++d)
    for (int dir : {+1, -1}) {
      const int slot = topology_.link_slot(c, d, dir);
      if (!topology_.link_exists(slot)) continue;
      double factor = 1.0;
      if (!parts.degraded.empty()) {
        auto it = parts.degraded.find(ici_link_name(c, d, dir));
        if (it != parts.degraded.end()) factor = it->second;
      }
      NetworkLink* link = make_link(hw_.ici_bandwidth * factor, hw_.ici_latency);
      if (!parts.failed.empty() && parts.failed.count(ici_link_name(c, d, dir)))
        link->failed = any_failed_ = true;
      ici_[slot] = link;
      place_[link->index] = {c, d * 2 + (dir > 0 ? 0 : 1)};
    }
  for (int a = 0; a < cpc; ++a)
    for (int b = 0; b < cpc; ++b)
      if (a != b) {
        NetworkLink* link = make_link(hw_.onchip_bandwidth, hw_.onchip_latency);
        onchip_[static_cast<std::size_t>(c) * cpc * cpc + a * cpc + b] = link;
        place_[link->index] = {c, topology_.num_dims() * 2 + a * cpc + b};
      }
}

void Machine::visit_stats(const std::string& prefix, StatVisitor& visitor) const {
  StatGroup::visit_stats(prefix, visitor);
  visitor.describe("link.bytes", "bytes", "bytes the link carried");
  visitor.describe("link.busy_ns", "ns", "time the link spent serialising bytes");
  visitor.describe("link.transfers", "transfers", "messages, flows or packet trains it carried");
  for (const NetworkLink* l : all_links_) {
    const std::string base = link_name(*l);
    visitor.stat(base + ".bytes", l->bytes);
    visitor.stat(base + ".busy_ns", l->busy_time.ns());
    visitor.stat(base + ".transfers", static_cast<double>(l->transfers));
  }
}

void Machine::check_link_names(const MachineParts& parts) const {
  if (parts.degraded.empty() && parts.failed.empty()) return;  // no names to check
  std::set<std::string> ici_names;
  const int ici_places = topology_.num_dims() * 2;
  for (const NetworkLink* l : all_links_)
    if (place_[l->index].first >= 0 && place_[l->index].second < ici_places)
      ici_names.insert(link_name(*l));
  auto check = [&](const std::string& lname, const char* where) {
    if (ici_names.count(lname)) return;
    if (lname.find("onchip") != std::string::npos)
      throw ConfigError(where, "'" + lname +
                                   "' is an on-chip link (between the cores of one chip); only "
                                   "ICI links fail or degrade here, named " +
                                   name() +
                                   ".chip(COORDINATES).ici. then x, y, z or w, then + "
                                   "or - (e.g. " +
                                   ici_link_name(0, 0, +1) + ")");
    // An old-style name (chip5_ici_xp): say what it is called now.
    static const std::regex old(R"(chip(\d+)_ici_([xyzw])([pm]))");
    std::smatch m;
    if (std::regex_match(lname, m, old)) {
      const long chip = std::stol(m[1]);
      const int dim = static_cast<int>(std::string(kDim).find(m[2].str()[0]));
      const std::string now =
          chip < topology_.num_chips() && dim < topology_.num_dims()
              ? "'" + ici_link_name(static_cast<int>(chip), dim, m[3] == "p" ? +1 : -1) + "'"
              : std::string(name()) + ".chip(COORDINATES).ici." + m[2].str() +
                    (m[3] == "p" ? "+" : "-");
      throw ConfigError(where, "'" + lname +
                                   "' is a link name of before the module tree; links "
                                   "are named as in reports now: " +
                                   now);
    }
    throw ConfigError(where, "'" + lname + "' is not an ICI link of this machine; names are " +
                                 name() +
                                 ".chip(COORDINATES).ici. then x, y, z or w, then + or -, for "
                                 "links that exist (e.g. " +
                                 ici_link_name(0, 0, +1) + ")");
  };
  for (const auto& [lname, factor] : parts.degraded) check(lname, "network.degraded_links");
  for (const auto& lname : parts.failed) check(lname, "network.failed_links");
}

std::vector<NetworkLink*> Machine::links_of_chip(int chip) const {
  std::vector<NetworkLink*> out;
  const int ici_places = topology_.num_dims() * 2, cpc = hw_.devices_per_chip;
  for (int p = 0; p < ici_places; ++p)
    if (NetworkLink* l = ici_[static_cast<std::size_t>(chip) * ici_places + p]) out.push_back(l);
  for (int k = 0; k < cpc * cpc; ++k)
    if (NetworkLink* l = onchip_[static_cast<std::size_t>(chip) * cpc * cpc + k]) out.push_back(l);
  return out;
}

NetworkLink* Machine::link_at(int chip, int place) const {
  const int ici_places = topology_.num_dims() * 2, cpc = hw_.devices_per_chip;
  if (place < ici_places) return ici_[chip * ici_places + place];
  return onchip_[static_cast<std::size_t>(chip) * cpc * cpc + (place - ici_places)];
}

NetworkLink* Machine::shifted_link(const NetworkLink& link, const std::vector<int>& by) const {
  const auto [chip, place] = place_[link.index];
  return chip < 0 ? nullptr : link_at(topology_.shifted(chip, by), place);
}

Route Machine::route(int src, int dst) const {
  const int a = chip_of(src), b = chip_of(dst);
  if (a == b) {
    if (src == dst) return {};
    const int cpc = hw_.devices_per_chip;
    return {onchip_[static_cast<std::size_t>(a) * cpc * cpc + core_in_chip(src) * cpc +
                    core_in_chip(dst)]};
  }
  if (any_failed_) {
    Route r;
    int cur = a;
    const std::vector<int> steps = topology_.route_steps(a, b);
    for (int d = 0; d < topology_.num_dims(); ++d) {
      const int off = steps[d];
      if (off == 0) continue;
      const int dir = off > 0 ? +1 : -1;
      // The other way round a ring reaches the same chip, but not along a twisted dimension
      // (its wrap link lands shifted along the long one).
      const bool detour =
          topology_.wraps(d) && (topology_.twisted_dim() < 0 || d == topology_.twisted_dim());
      if (!walk(cur, d, dir, std::abs(off), r) &&
          !(detour && walk(cur, d, -dir, topology_.dim(d) - std::abs(off), r)))
        throw ConfigError(
            "network.failed_links",
            "chip " + std::to_string(a) + " cannot reach chip " + std::to_string(b) +
                ": a failed link cuts dimension " + std::to_string(d) +
                (topology_.wraps(d) ? " both ways round its ring" : " (an open line)"));
      for (int k = 0; k < std::abs(off); ++k) cur = topology_.neighbor(cur, d, dir);
    }
    return r;
  }
  Route r;
  r.reserve(static_cast<std::size_t>(topology_.hops(a, b)));
  topology_.for_each_route_slot(a, b, [&](int slot) { r.push_back(ici_[slot]); });
  return r;
}

bool Machine::walk(int chip, int dim, int dir, int steps, Route& out) const {
  const std::size_t before = out.size();
  for (int k = 0; k < steps; ++k) {
    NetworkLink* link = ici_[topology_.link_slot(chip, dim, dir)];
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
