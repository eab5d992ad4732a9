#include "sim/collectives/symmetry.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>
#include <set>

#include "sim/collectives/collective_planner.hpp"
#include "sim/machine/machine.hpp"

namespace tpusim {
namespace {

/// A translation of the chips: chip -> its image, core -> its image, link index -> its image.
struct Translation {
  std::vector<int> chip, core, link;
};

/// Multislice: each host's DCN links map to those of the host holding its chips' images; false
/// if the images of a host's chips are not one host's.
bool translate_dcn(const Machine& m, Translation& t) {
  const Dcn* dcn = m.dcn();
  if (!dcn) return true;
  const HostBlocks& b = dcn->blocks();
  for (std::size_t h = 0; h < b.chips.size(); ++h) {
    const int image = b.host_of_chip[t.chip[b.chips[h].front()]];
    for (int c : b.chips[h])
      if (b.host_of_chip[t.chip[c]] != image) return false;
    const Route& from = dcn->links_of_host(static_cast<int>(h));
    const Route& to = dcn->links_of_host(image);
    for (std::size_t j = 0; j < from.size(); ++j) t.link[from[j]->index] = to[j]->index;
  }
  return true;
}

/// The images of chips, cores and links under `chip_image`; false if some chip's links do not
/// line up with its image's (a dimension that is not a ring), or a host's DCN links.
bool make_translation(const Machine& m, std::vector<int> chip_image, Translation& t) {
  const int cpc = m.hardware().devices_per_chip;
  t.chip = std::move(chip_image);
  t.core.assign(static_cast<std::size_t>(m.num_cores()), -1);
  t.link.assign(m.links().size(), -1);
  for (int c = 0; c < m.topology().num_chips(); ++c)
    for (int k = 0; k < cpc; ++k) t.core[c * cpc + k] = t.chip[c] * cpc + k;
  // Each link maps to the link at the same place of its chip's image (the chip map is a
  // bijection, so then every link is some link's image).
  for (const NetworkLink* from : m.links()) {
    const auto [chip, place] = m.place_of(*from);
    if (chip < 0) continue;  // a DCN link: translate_dcn
    const NetworkLink* to = m.link_at(t.chip[chip], place);
    if (!to || from->bandwidth.bytes_per_s() != to->bandwidth.bytes_per_s() ||
        from->latency != to->latency)
      return false;
    t.link[from->index] = to->index;
  }
  return translate_dcn(m, t);
}

/// Chips shifted by `by` along `dim`, following its links (on a twisted torus a shift past the
/// end of a k-chip dimension also moves k chips along the long one).
std::vector<int> shifted_chips(const Topology& topo, int dim, int by) {
  std::vector<int> out(static_cast<std::size_t>(topo.num_chips()));
  for (int c = 0; c < topo.num_chips(); ++c) out[c] = topo.translate(c, dim, by);
  return out;
}

/// True if every chip has the image of its shifts by the periods (`period[d]` chips along d,
/// where smaller than the dimension): then the domain holds one chip of every class. On a
/// plain torus this always holds; on a twisted one it needs the long dimension's period to
/// divide k when a k-chip dimension's period is below k (k steps along that dimension are a
/// shift by k along the long one).
bool domain_is_fundamental(const Topology& topo, const std::vector<int>& period,
                           const std::vector<int>& chip_rep) {
  for (int d = 0; d < topo.num_dims(); ++d) {
    if (period[d] >= topo.dim(d)) continue;
    for (int c = 0; c < topo.num_chips(); ++c)
      if (chip_rep[topo.translate(c, d, period[d])] != chip_rep[c]) return false;
  }
  return true;
}

/// (sender, send) of a ring's non-empty sends, the sender translated by `t` if given, sorted;
/// send k < next.size() is next[k], the others prev[k - next.size()].
using SendKeys = std::vector<std::pair<int, int>>;
SendKeys send_keys(const Ring& r, const Translation* t) {
  SendKeys out;
  out.reserve(r.next.size() + r.prev.size());
  auto add = [&](int sender, std::size_t k) {
    out.emplace_back(t ? t->core[sender] : sender, static_cast<int>(k));
  };
  for (std::size_t k = 0; k < r.next.size(); ++k)
    if (!r.next[k].empty()) add(r.next_from.empty() ? r.members[k] : r.next_from[k], k);
  for (std::size_t k = 0; k < r.prev.size(); ++k)
    if (!r.prev[k].empty()) add(r.members[k], r.next.size() + k);
  // The sends went in with k rising, so the order by sender alone, kept stable, is the order
  // of the pairs: a counting sort by sender gives it in linear time for a large exchange.
  int senders = 0;
  for (const auto& key : out) senders = std::max(senders, key.first + 1);
  if (out.size() < 1024 || static_cast<std::size_t>(senders) > 4 * out.size()) {
    // A translation round a ring turns sorted keys into a rotation of sorted keys (the members
    // that wrap come first): one descent, and the last key below the first. Rotated back, they
    // are sorted in linear time; anything else is sorted.
    const auto descent = std::is_sorted_until(out.begin(), out.end());
    if (descent != out.end() && std::is_sorted(descent, out.end()) && out.back() < out.front())
      std::rotate(out.begin(), descent, out.end());
    else if (descent != out.end())
      std::sort(out.begin(), out.end());
    return out;
  }
  std::vector<std::size_t> at(static_cast<std::size_t>(senders) + 1, 0);
  for (const auto& key : out) ++at[static_cast<std::size_t>(key.first) + 1];
  for (std::size_t i = 1; i < at.size(); ++i) at[i] += at[i - 1];
  SendKeys sorted(out.size());
  for (const auto& key : out) sorted[at[static_cast<std::size_t>(key.first)]++] = key;
  return sorted;
}
const Route& send_route(const Ring& r, int k) {
  const auto i = static_cast<std::size_t>(k);
  return i < r.next.size() ? r.next[i] : r.prev[i - r.next.size()];
}
/// Per core of the image plan's phase: its ring and position (valid where stamp == epoch).
struct Where {
  std::vector<int> ring, pos, stamp;
  int epoch = 0;
  explicit Where(std::size_t cores) : ring(cores), pos(cores), stamp(cores, 0) {}
};

bool same_route(const Route& a, const Route& b, const Translation& t) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (t.link[a[i]->index] != b[i]->index) return false;
  return true;
}

/// True if `image` sends what `ring` translated by `t` sends: the same senders, each with the
/// same routes in any order (an exchange lists its sends by route length, and a translation
/// keeps that order only up to ties). Compares without copying the routes.
bool same_sends(const Ring& ring, const Ring& image, const Translation& t) {
  const SendKeys a = send_keys(ring, &t);
  const SendKeys b = send_keys(image, nullptr);
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].first != b[i].first) return false;
  std::vector<int> x, y;  // one sender's sends in `ring` and in `image`
  for (std::size_t i = 0; i < a.size();) {
    std::size_t end = i + 1;
    while (end < a.size() && a[end].first == a[i].first) ++end;
    if (end == i + 1) {
      if (!same_route(send_route(ring, a[i].second), send_route(image, b[i].second), t))
        return false;
    } else {  // several sends of one sender: compare them as multisets
      x.clear();
      y.clear();
      for (std::size_t j = i; j < end; ++j) {
        x.push_back(a[j].second);
        y.push_back(b[j].second);
      }
      // Both sorted in one order of the (translated) link indices: by length, last link, then
      // link by link, so equal multisets line up send for send.
      const auto by_links = [](const Ring& r, const Translation* tr) {
        return [&r, tr](int u, int v) {
          const Route& p = send_route(r, u);
          const Route& q = send_route(r, v);
          if (p.size() != q.size()) return p.size() < q.size();
          const auto idx = [tr](const NetworkLink* l) {
            return tr ? tr->link[l->index] : l->index;
          };
          if (!p.empty() && idx(p.back()) != idx(q.back())) return idx(p.back()) < idx(q.back());
          for (std::size_t h = 0; h < p.size(); ++h)
            if (idx(p[h]) != idx(q[h])) return idx(p[h]) < idx(q[h]);
          return false;
        };
      };
      std::sort(x.begin(), x.end(), by_links(ring, &t));
      std::sort(y.begin(), y.end(), by_links(image, nullptr));
      for (std::size_t j = 0; j < x.size(); ++j)
        if (!same_route(send_route(ring, x[j]), send_route(image, y[j]), t)) return false;
    }
    i = end;
  }
  return true;
}

/// True if `image` is `ring` translated by `t` (same members, each with the same routes).
bool same_ring(const Ring& ring, const Ring& image, const Translation& t, const Where& w) {
  if (image.members.size() != ring.members.size() || image.path_latency != ring.path_latency ||
      image.next.size() != ring.next.size() || image.prev.size() != ring.prev.size() ||
      ring.next_from.empty() != image.next_from.empty())
    return false;
  if (!ring.next_from.empty()) return same_sends(ring, image, t);
  const int r = w.ring[t.core[ring.members.front()]];
  for (std::size_t k = 0; k < ring.members.size(); ++k) {
    const int m = t.core[ring.members[k]];
    if (w.stamp[m] != w.epoch || w.ring[m] != r) return false;
    const auto j = static_cast<std::size_t>(w.pos[m]);
    if (k < ring.next.size() && !same_route(ring.next[k], image.next[j], t)) return false;
    if (k < ring.prev.size() && !same_route(ring.prev[k], image.prev[j], t)) return false;
  }
  return true;
}

/// True if `b` is `a` translated by `t`: the same phases, and each ring of `a` translated is a
/// ring of `b` with the same sends.
bool same_plan(const GroupPlan& a, const GroupPlan& b, const Translation& t, Where& w) {
  if (a.phases.size() != b.phases.size()) return false;
  for (std::size_t p = 0; p < a.phases.size(); ++p) {
    const PlanPhase& x = a.phases[p];
    const PlanPhase& y = b.phases[p];
    if (x.kind != y.kind || x.steps != y.steps || x.step_fraction != y.step_fraction ||
        x.bidirectional != y.bidirectional || x.reduce_pieces != y.reduce_pieces ||
        x.rings.size() != y.rings.size() || x.link_s_per_byte != y.link_s_per_byte ||
        x.path_latency != y.path_latency)
      return false;
    ++w.epoch;
    for (std::size_t r = 0; r < y.rings.size(); ++r)
      for (std::size_t k = 0; k < y.rings[r].members.size(); ++k) {
        const int m = y.rings[r].members[k];
        if (w.stamp[m] == w.epoch) continue;  // an exchange may list a core twice
        w.stamp[m] = w.epoch;
        w.ring[m] = static_cast<int>(r);
        w.pos[m] = static_cast<int>(k);
      }
    for (const Ring& ring : x.rings) {
      if (ring.members.empty()) continue;
      const int first = t.core[ring.members.front()];
      if (w.stamp[first] != w.epoch) return false;
      if (!same_ring(ring, y.rings[static_cast<std::size_t>(w.ring[first])], t, w)) return false;
    }
  }
  return true;
}

/// The collective ops with distinct plan sets, the smallest plans first (they are the cheapest
/// to check and, being latency-bound, the likeliest to break a symmetry).
std::vector<int> distinct_ops(const Program& program, const CollectivePlanner& planner) {
  std::vector<std::pair<std::size_t, int>> sized;
  std::map<const void*, bool> seen;
  for (std::size_t op = 0; op < program.ops.size(); ++op) {
    if (!program.ops[op].is_collective) continue;
    const auto& plans = planner.shapes(static_cast<int>(op));
    if (!seen.emplace(&plans, true).second) continue;
    std::size_t size = 0;
    for (const GroupPlan* plan : plans)
      if (plan)
        for (const PlanPhase& ph : plan->phases)
          for (const Ring& r : ph.rings) size += r.members.size() + r.next.size();
    sized.emplace_back(size, static_cast<int>(op));
  }
  std::sort(sized.begin(), sized.end());
  std::vector<int> out;
  for (const auto& [size, op] : sized) out.push_back(op);
  return out;
}

/// Groups whose plans are the first group's plan P0 moved (shifted_plan by their chip_shift; the
/// first group's is P0 itself, shift 0), compared unbuilt. A translation t takes group g's plan
/// onto group `image`'s exactly when u, t's shift plus g's less image's (round each dimension),
/// maps P0 onto itself: translations of a torus commute and compose as sums of shifts. u = 0
/// holds; every other u is checked once per collective on P0, route by route, and remembered.
class MovedPlans {
 public:
  explicit MovedPlans(const Machine& m) : m_(m) {}
  /// 1 or 0 when both groups' plans are P0 moved, else -1 (compare the plans themselves).
  int same(const CollectivePlanner& planner, int op, std::size_t g, std::size_t image,
           const Translation& t, Where& w) {
    const std::vector<int>* from = planner.moved_by(op, g);
    const std::vector<int>* to = planner.moved_by(op, image);
    // Only where moved plans exist (a plain torus or grid, no failed link: there t is a shift
    // of every coordinate, as Topology::shifted moves chips), and not for the first group alone.
    if (!m_.routes_translate() || (!from && !to)) return -1;
    if ((g != 0 && !from) || (image != 0 && !to)) return -1;
    if (op != op_) known_.clear(), op_ = op;
    const Topology& topo = m_.topology();
    std::vector<int> u(static_cast<std::size_t>(topo.num_dims()));
    bool zero = true;
    for (int d = 0; d < topo.num_dims(); ++d) {
      const int n = topo.dim(d);
      int v = topo.coord(t.chip[0], d) + (from ? (*from)[d] : 0) - (to ? (*to)[d] : 0);
      v = ((v % n) + n) % n;
      u[static_cast<std::size_t>(d)] = v;
      zero = zero && v == 0;
    }
    if (zero) return 1;
    const auto known = known_.find(u);
    if (known != known_.end()) return known->second;
    std::vector<int> chips(static_cast<std::size_t>(topo.num_chips()));
    for (int c = 0; c < topo.num_chips(); ++c) chips[c] = topo.shifted(c, u);
    Translation shift;
    if (!make_translation(m_, std::move(chips), shift)) return -1;
    const GroupPlan& p0 = planner.plan(op, 0);
    const int same = same_plan(p0, p0, shift, w) ? 1 : 0;
    known_.emplace(u, same != 0);
    return same;
  }

 private:
  const Machine& m_;
  int op_ = -1;
  std::map<std::vector<int>, bool> known_;
};

/// True if every collective's groups and plans map onto themselves under `t`.
bool invariant(const std::vector<int>& ops, const CollectivePlanner& planner, const Translation& t,
               Where& w, const Machine& m) {
  MovedPlans moved(m);
  for (int op : ops) {
    const auto& shapes = planner.shapes(op);
    const GroupSet& gs = planner.groups(op);
    for (std::size_t g = 0; g < gs.groups.size(); ++g) {
      const auto& members = gs.groups[g];
      if (members.empty()) continue;
      const int image = gs.group_of_core[t.core[members.front()]];
      if (image < 0 || gs.groups[image].size() != members.size()) return false;
      for (int m : members)
        if (gs.group_of_core[t.core[m]] != image) return false;
      if (!shapes[g] || !shapes[image]) return false;
      const int same = moved.same(planner, op, g, static_cast<std::size_t>(image), t, w);
      if (same == 0) return false;
      if (same == 1) continue;
      if (!same_plan(planner.plan(op, g), planner.plan(op, static_cast<std::size_t>(image)), t, w))
        return false;
    }
  }
  return true;
}

/// Per dimension of the topology, the most ICI hops any route of the ops' plans takes along it.
std::vector<int> longest_routes(const std::vector<int>& ops, const Machine& m,
                                const CollectivePlanner& planner) {
  std::vector<int> most(static_cast<std::size_t>(m.topology().num_dims()), 0);
  for (int op : ops) {
    const std::vector<int> along = hops_along(m, planner.shapes(op));
    for (std::size_t d = 0; d < most.size(); ++d) most[d] = std::max(most[d], along[d]);
  }
  return most;
}

/// The next multiple of `p` that divides `n` (n itself at most).
int next_multiple(int p, int n) {
  for (int q = p + p; q < n; q += p)
    if (n % q == 0) return q;
  return n;
}

/// The smallest period of dimension `dim` under which everything is invariant (the dimension's
/// size if none smaller is).
int find_period(const std::vector<int>& ops, const Machine& m, const CollectivePlanner& planner,
                int dim, Where& w) {
  const Topology& topo = m.topology();
  const int n = topo.dim(dim);
  if (!topo.wraps(dim)) return n;
  for (int p = 1; p < n; ++p) {
    if (n % p) continue;
    // Multislice: a shift that cuts host blocks does not map the hosts' DCN links onto hosts'.
    if (const Dcn* dcn = m.dcn(); dcn && p % dcn->blocks().extent[dim] != 0) continue;
    Translation t;
    if (!make_translation(m, shifted_chips(topo, dim, p), t)) return n;
    if (invariant(ops, planner, t, w, m)) return p;
  }
  return n;
}

/// Machine::links() index of a link found from its address alone: a link object is large and
/// the links of a route lie far apart in memory, so reading `index` from each costs a cache
/// miss per hop; this table of addresses stays in cache.
class LinkIndex {
 public:
  explicit LinkIndex(const std::vector<NetworkLink*>& links) {
    while ((std::size_t{1} << bits_) < 4 * links.size()) ++bits_;
    slots_.assign(std::size_t{1} << bits_, {nullptr, -1});
    for (const NetworkLink* l : links) {
      std::size_t i = home(l);
      while (slots_[i].first) i = (i + 1) & (slots_.size() - 1);
      slots_[i] = {l, l->index};
    }
  }
  int operator()(const NetworkLink* l) const {
    std::size_t i = home(l);
    while (slots_[i].first != l) i = (i + 1) & (slots_.size() - 1);
    return slots_[i].second;
  }

 private:
  std::size_t home(const NetworkLink* l) const {
    return static_cast<std::size_t>(
        (reinterpret_cast<std::uintptr_t>(l) >> 4) * 0x9E3779B97F4A7C15ull >> (64 - bits_));
  }
  int bits_ = 4;
  std::vector<std::pair<const NetworkLink*, int>> slots_;
};

/// The sends of one step's batch, hop by hop: at hop h, each link's run of the sends crossing
/// it at their h-th hop, in batch order, as the message level reserves them (every first hop,
/// then every second...). A run is a list through `next`; its entries hold the sender's class.
struct HopRuns {
  struct Entry {
    int link, cls;
  };
  std::vector<std::vector<Entry>> at;  ///< per hop, the sends' entries in batch order
  std::size_t hops = 0;                ///< hops in use of `at`
  std::vector<int> first, last;  ///< per link: the current hop's run (valid where stamp == epoch)
  std::vector<int> stamp;
  int epoch = 0;
  std::vector<int> next;  ///< per entry of the current hop
  const std::vector<Entry>* cur = nullptr;
  std::vector<int> touched;  ///< links with a run at the current hop

  void start(std::size_t links) {
    for (std::size_t h = 0; h < hops; ++h) at[h].clear();
    hops = 0;
    if (stamp.size() < links) {
      stamp.assign(links, 0);
      first.resize(links);
      last.resize(links);
    }
  }
  /// One send, its route walked once (hop h of every send lands in at[h], in batch order).
  void add(int sender_class, const Route& route, const LinkIndex& index) {
    if (route.size() > at.size()) at.resize(route.size());
    hops = std::max(hops, route.size());
    for (std::size_t h = 0; h < route.size(); ++h) at[h].push_back({index(route[h]), sender_class});
  }
  /// Builds hop h's runs; false once no send has a hop h.
  bool hop(std::size_t h) {
    ++epoch;
    touched.clear();
    if (h >= hops) return false;
    cur = &at[h];
    next.assign(cur->size(), -1);
    for (std::size_t e = 0; e < cur->size(); ++e) {
      const auto link = static_cast<std::size_t>((*cur)[e].link);
      if (stamp[link] != epoch) {
        stamp[link] = epoch;
        first[link] = static_cast<int>(e);
        touched.push_back(static_cast<int>(link));
      } else {
        next[static_cast<std::size_t>(last[link])] = static_cast<int>(e);
      }
      last[link] = static_cast<int>(e);
    }
    return true;
  }
  bool has(int link) const { return stamp[static_cast<std::size_t>(link)] == epoch; }
  /// True if this hop's run at link `a` and `other`'s at link `b` meet the same classes in order.
  bool same_classes(int a, const HopRuns& other, int b) const {
    int i = first[static_cast<std::size_t>(a)], j = other.first[static_cast<std::size_t>(b)];
    for (; i >= 0 && j >= 0;
         i = next[static_cast<std::size_t>(i)], j = other.next[static_cast<std::size_t>(j)])
      if ((*cur)[static_cast<std::size_t>(i)].cls != (*other.cur)[static_cast<std::size_t>(j)].cls)
        return false;
    return i < 0 && j < 0;
  }
};

/// True if the projection of `full` is `full` itself: every sender in the domain and every
/// link its own image (a ring inside the domain). Then the batch-order check holds trivially.
bool projects_onto_itself(const Ring& full, const SymmetricRun& s) {
  auto inside = [&](int sender, const Route& route) {
    if (route.empty()) return true;
    if (!s.active[sender]) return false;
    for (const NetworkLink* l : route)
      if (s.link_rep[l->index] != l->index) return false;
    return true;
  };
  for (std::size_t k = 0; k < full.next.size(); ++k)
    if (!inside(full.next_from.empty() ? full.members[k] : full.next_from[k], full.next[k]))
      return false;
  for (std::size_t k = 0; k < full.prev.size(); ++k)
    if (!inside(full.members[k], full.prev[k])) return false;
  return true;
}

/// The projection of one step's batch is exact if every link of the full batch meets its
/// senders' classes in the same order as its image in the domain does, and the projected batch
/// meets them so too: then each reservation sees what its image sees. Compared hop by hop, the
/// runs of each hop bucketed by link in batch order.
void check_batch_order(const Ring& full, const Ring& projected, const std::vector<int>& cls,
                       const SymmetricRun& s, const LinkIndex& index, HopRuns& f, HopRuns& p) {
  if (projects_onto_itself(full, s)) return;
  const std::vector<int>& link_rep = s.link_rep;
  f.start(link_rep.size());
  p.start(link_rep.size());
  for (std::size_t k = 0; k < full.next.size(); ++k)
    f.add(cls[full.next_from.empty() ? full.members[k] : full.next_from[k]], full.next[k], index);
  for (std::size_t k = 0; k < full.prev.size(); ++k)
    f.add(cls[full.members[k]], full.prev[k], index);
  for (std::size_t k = 0; k < projected.next.size(); ++k)
    p.add(cls[projected.next_from[k]], projected.next[k], index);
  const std::string why = "a link meets the sends of one step in another order than its image";
  for (std::size_t h = 0;; ++h) {
    const bool more_f = f.hop(h), more_p = p.hop(h);
    if (!more_f && !more_p) break;
    for (int here : f.touched) {
      const int image = link_rep[static_cast<std::size_t>(here)];
      if (image != here && f.has(image) && !f.same_classes(here, f, image)) throw why;
    }
    for (int here : p.touched)
      if (f.has(here) && !p.same_classes(here, f, here)) throw why;
  }
}

/// Per core and per link: stamps of the set being checked (valid where equal to the epoch).
struct Stamps {
  std::vector<int> core, link;
  int core_epoch = 0, link_epoch = 0;
  /// The message level: a projected route may cross the image of one link more than once.
  bool fold = false;
  HopRuns full_runs, projected_runs;  ///< check_batch_order's scratch
  std::unique_ptr<LinkIndex> link_index;
};

std::unique_ptr<GroupPlan> project(const GroupPlan& plan, const Machine& m, const SymmetricRun& s,
                                   const std::vector<int>& cls, Stamps& st) {
  std::vector<int>& stamp = st.core;
  int& epoch = st.core_epoch;
  std::vector<int>& link_stamp = st.link;
  int& link_epoch = st.link_epoch;
  auto out = std::make_unique<GroupPlan>();
  // The classes (domain images) of `cores` all occur among `kept`, else not exact.
  auto covers = [&](const std::vector<int>& cores, const std::vector<int>& kept) {
    ++epoch;
    for (int c : kept) stamp[c] = epoch;
    for (int c : cores)
      if (stamp[cls[c]] != epoch) return false;
    return true;
  };
  for (const PlanPhase& phase : plan.phases) {
    PlanPhase p = phase.without_rings();
    for (const Ring& ring : phase.rings) {
      Ring r;
      std::vector<int> senders, kept_senders;
      int routes = 0;
      auto take = [&](int sender, const Route& route) {
        if (route.empty()) return;
        ++routes;
        senders.push_back(sender);
        if (!s.active[sender]) return;
        kept_senders.push_back(sender);
        r.next.push_back(route);  // its links are replaced by their images below
        r.next_from.push_back(sender);
      };
      for (std::size_t k = 0; k < ring.next.size(); ++k)
        take(ring.next_from.empty() ? ring.members[k] : ring.next_from[k], ring.next[k]);
      for (std::size_t k = 0; k < ring.prev.size(); ++k) take(ring.members[k], ring.prev[k]);
      for (int m : ring.members)
        if (s.active[m]) r.members.push_back(m);
      if (r.members.empty() && r.next.empty()) continue;
      if (!covers(ring.members, r.members) || !covers(senders, kept_senders))
        throw std::string("a ring's members in the domain do not stand for all its members");
      r.path_latency = ring.path_latency;
      // Every link of the kept sends replaced by its image in the domain. At the message level
      // a route may cross one image several times: its hop h on the image stands for the
      // message of another sender of its class at hop h on that link, and the message level
      // reserves hop by hop across the batch, so the image meets, hop after hop, what the link
      // meets (the batch-order check below compares exactly that, per hop and link). The flow
      // and packet levels share a link between the flows crossing it, so there it must not.
      for (Route& route : r.next) {
        ++link_epoch;
        for (auto& l : route) {
          l = m.links()[s.link_rep[l->index]];
          if (!st.fold && link_stamp[l->index] == link_epoch)
            throw std::string("a route crosses two images of one link in the domain");
          link_stamp[l->index] = link_epoch;
        }
      }
      if (!st.link_index) st.link_index = std::make_unique<LinkIndex>(m.links());
      check_batch_order(ring, r, cls, s, *st.link_index, st.full_runs, st.projected_runs);
      r.represented_routes = routes;
      r.represented_members = static_cast<int>(ring.members.size());
      p.rings.push_back(std::move(r));
    }
    if (p.rings.empty() && !phase.rings.empty())
      throw std::string("a phase has no ring in the domain");
    out->phases.push_back(std::move(p));
  }
  return out;
}

/// The domain: chips whose coordinates are below the periods (their cores marked active); each
/// chip's image in it (returned) and each core's (`cls`).
std::vector<int> mark_domain(const Machine& m, SymmetricRun& s, std::vector<int>& cls) {
  const Topology& topo = m.topology();
  const int cpc = m.hardware().devices_per_chip;
  std::vector<int> chip_rep(static_cast<std::size_t>(topo.num_chips()));
  s.active.assign(static_cast<std::size_t>(m.num_cores()), 0);
  cls.assign(static_cast<std::size_t>(m.num_cores()), 0);
  for (int c = 0; c < topo.num_chips(); ++c) {
    auto x = topo.coords(c);
    bool in = true;
    for (int d = 0; d < topo.num_dims(); ++d) {
      in = in && x[d] < s.period[d];
      x[d] %= s.period[d];
    }
    chip_rep[c] = topo.chip_at(x);
    for (int k = 0; k < cpc; ++k) {
      s.active[c * cpc + k] = in;
      cls[c * cpc + k] = chip_rep[c] * cpc + k;
      s.active_cores += in;
    }
  }
  return chip_rep;
}

/// The smallest period per dimension (the dimension's length where none is smaller), each a
/// multiple of `multiple_of`'s and, off the message level, at least the longest route along it.
std::vector<int> find_periods(const Program& program, const Machine& m,
                              const CollectivePlanner& planner, const std::vector<int>& multiple_of,
                              bool message_level) {
  const Topology& topo = m.topology();
  const std::vector<int> ops = distinct_ops(program, planner);
  Where where(static_cast<std::size_t>(m.num_cores()));
  std::vector<int> periods, longest;  // longest: per dimension, filled when a period must cover it
  for (int d = 0; d < topo.num_dims(); ++d) {
    int p = find_period(ops, m, planner, d, where);
    // A multiple of both divides the dimension: both divide it.
    if (d < static_cast<int>(multiple_of.size())) p = std::lcm(p, multiple_of[d]);
    // Off the message level a route must not cross two images of one link: the period takes
    // in the longest route along the dimension (a multiple of a period is one too).
    if (!message_level && p < topo.dim(d)) {
      if (longest.empty()) longest = longest_routes(ops, m, planner);
      while (p < longest[static_cast<std::size_t>(d)]) p = next_multiple(p, topo.dim(d));
    }
    periods.push_back(p);
  }
  return periods;
}

}  // namespace

std::string SymmetricRun::describe() const {
  std::string p;
  for (std::size_t d = 0; d < period.size(); ++d) p += (d ? " x " : "") + std::to_string(period[d]);
  return std::to_string(active_cores) + " of " + std::to_string(active.size()) +
         " cores simulated (a domain of " + p + " chips)";
}

SymmetrySearch find_symmetry(const Program& program, const Machine& m,
                             const CollectivePlanner& planner, const std::vector<int>& multiple_of,
                             bool message_level) {
  SymmetrySearch out;
  const Topology& topo = m.topology();
  auto s = std::make_unique<SymmetricRun>();
  s->period = find_periods(program, m, planner, multiple_of, message_level);
  bool smaller = false;
  for (int d = 0; d < topo.num_dims(); ++d) smaller = smaller || s->period[d] < topo.dim(d);
  if (!smaller) {
    out.reason = "no translation of the torus maps every collective group onto another";
    return out;
  }
  std::vector<int> cls;
  const std::vector<int> chip_rep = mark_domain(m, *s, cls);
  if (!domain_is_fundamental(topo, s->period, chip_rep)) {
    out.reason =
        "the periods' domain does not hold one chip of each class of the twisted torus's "
        "translations";
    return out;
  }
  Translation rep;
  if (!make_translation(m, chip_rep, rep)) {
    out.reason = "the links of a chip and of its image in the domain differ";
    return out;
  }
  s->link_rep = rep.link;
  s->ops.assign(program.ops.size(), nullptr);
  std::map<const void*, const SymmetricRun::OpGroups*> done;
  Stamps st;
  st.fold = message_level;
  st.core.assign(static_cast<std::size_t>(m.num_cores()), 0);
  st.link.assign(m.links().size(), 0);
  std::vector<int>& stamp = st.core;
  int& epoch = st.core_epoch;
  try {
    for (std::size_t op = 0; op < program.ops.size(); ++op) {
      if (!program.ops[op].is_collective) continue;
      const auto& plans = planner.shapes(static_cast<int>(op));
      auto it = done.find(&plans);
      if (it != done.end()) {
        s->ops[op] = it->second;
        continue;
      }
      const GroupSet& gs = planner.groups(static_cast<int>(op));
      auto g = std::make_unique<SymmetricRun::OpGroups>();
      g->active_members.assign(gs.groups.size(), 0);
      g->plans.resize(gs.groups.size());
      for (std::size_t k = 0; k < gs.groups.size(); ++k) {
        std::vector<int> in;
        for (int c : gs.groups[k])
          if (s->active[c]) in.push_back(c);
        g->active_members[k] = static_cast<int>(in.size());
        if (in.empty()) continue;
        ++epoch;
        for (int c : in) stamp[c] = epoch;
        for (int c : gs.groups[k])
          if (stamp[cls[c]] != epoch)
            throw std::string("a group's members in the domain do not stand for all its members");
        ++g->played;
        g->plans[k] = project(planner.plan(static_cast<int>(op), k), m, *s, cls, st);
      }
      done.emplace(&plans, g.get());
      s->ops[op] = g.get();
      s->owned.push_back(std::move(g));
    }
  } catch (const std::string& why) {
    out.reason = why;
    return out;
  }
  s->core_rep = std::move(cls);
  out.run = std::move(s);
  return out;
}

}  // namespace tpusim
