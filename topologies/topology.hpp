#pragma once
// An N-dimensional grid of chips with a wrap flag per dimension (torus, mesh or mixed), its
// directed ICI links, dimension-order routing and structural counts. Plain C++ and Boost.Graph.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tpusim {

struct TopologySpec {
  std::string name;
  std::vector<int> dims;   ///< chips along each dimension, X first
  std::vector<bool> wrap;  ///< true: the dimension is a ring
  /// A twisted torus (TPU v4's optical switches can wire one, ISCA 2023): on a k x k x 2k slice
  /// the wrap links of the two k-chip dimensions land k chips further along the 2k-chip one.
  bool twist = false;
  /// Copies of this grid (slices) joined by the data-center network (multislice); each is its own
  /// ICI domain. 1: one ICI domain, the grid alone.
  int slices = 1;
};

/// Parses "tpu_v3_pod" (a preset in configs/topologies), "32x128" (every dimension wraps),
/// "4x4x8" (3D: a dimension of 4 or more chips wraps, as TPU v4 / v5p slices), "128x32:wrap=0,1",
/// a Cloud slice name ("v4-128": topologies/slice_names.hpp) or a path to a JSON file. Throws
/// ConfigError naming `where`.
TopologySpec parse_topology(const std::string& text, const std::string& where = "--topology");
/// The object form used inside studies: {"name":..., "dims":[...], "wrap":[...]} (and
/// "twist": true on a twisted torus, "slices" when it is not 1).
nlohmann::json to_json(const TopologySpec& spec);
/// Reads the object form; checks consistency (dims and wrap of equal length).
TopologySpec topology_from_json(const nlohmann::json& j, const std::string& where = "topology");

/// A directed link: one direction of one physical ICI link.
struct Link {
  int src = -1;
  int dst = -1;
  int dim = 0;
  int dir = +1;  ///< +1 or -1 along `dim`
};

class Topology {
 public:
  explicit Topology(TopologySpec spec);

  const TopologySpec& spec() const { return spec_; }
  const std::string& name() const { return spec_.name; }
  int num_dims() const { return static_cast<int>(spec_.dims.size()); }
  int dim(int d) const { return spec_.dims[d]; }
  /// A dimension forms a ring only if it wraps and has more than two chips (with two, the
  /// wrap link would join the same pair twice; tpusim treats it as a single link).
  bool wraps(int d) const { return spec_.wrap[d] && spec_.dims[d] > 2; }
  int num_chips() const { return num_chips_; }  ///< of one slice
  int slices() const { return spec_.slices; }

  std::vector<int> coords(int chip) const;
  int coord(int chip, int d) const { return (chip / stride_[d]) % spec_.dims[d]; }
  int chip_at(const std::vector<int>& coords) const;

  /// The chip one step along `dim` in direction `dir` (+1/-1), or -1 at an open edge.
  int neighbor(int chip, int dim, int dir) const;
  /// Directed link ids are dense in [0, num_link_slots()); a slot exists if neighbor() >= 0.
  int link_slot(int chip, int dim, int dir) const {
    return (chip * num_dims() + dim) * 2 + (dir > 0 ? 0 : 1);
  }
  int num_link_slots() const { return num_chips_ * num_dims() * 2; }
  bool link_exists(int slot) const;
  Link link(int slot) const;
  /// Directed links that exist (each physical link counts twice).
  int num_directed_links() const { return num_directed_links_; }
  int num_physical_links() const { return num_directed_links_ / 2; }

  /// Signed shortest offset from a to b along `dim` (ties on a ring go +).
  int offset(int a_coord, int b_coord, int dim) const;
  /// The signed steps along each dimension of the route from src to dst. On a plain grid each is
  /// offset() of the coordinates. On a twisted torus the chips are a group (Z^3 modulo the
  /// lattice of its wraps, so a step along a k-chip dimension past its end also moves k along
  /// the long one), and this is the shortest of the step vectors that lead from src to dst
  /// (fewest hops; ties to the first found, + before -, X before Y): it depends only on the
  /// displacement, so routes are the same under every translation of the torus.
  std::vector<int> route_steps(int src, int dst) const;
  /// Dimension-order route (X first, then Y, ...) of route_steps(): the directed link slots from
  /// src to dst, shortest way round on rings (on a twisted torus, a shortest path).
  std::vector<int> route(int src, int dst) const;
  /// Calls `f(slot)` for each slot of route(src, dst) in order; on a torus that is not twisted
  /// without allocating (routes are built by the million for an all-to-all on the Multipod).
  template <class F>
  void for_each_route_slot(int src, int dst, F&& f) const;
  int hops(int src, int dst) const;
  /// The chip `by` steps (negative: backwards) along `dim` from `chip`: a translation of the
  /// torus, following its links (on a twisted torus the wrap links land shifted, so this is not
  /// a shift of one coordinate). Defined on dimensions that wrap.
  int translate(int chip, int dim, int by) const;
  /// The chip moved by `by[d]` chips along every dimension d, each coordinate modulo its
  /// dimension's length: a translation of a plain (untwisted) grid.
  int shifted(int chip, const std::vector<int>& by) const;

  /// The 2k-chip dimension along which a twisted torus's other wrap links land shifted by k
  /// chips; -1 on a torus that is not twisted.
  int twisted_dim() const { return twisted_dim_; }
  /// Physical links cut when the largest dimension is halved (the bisection). On a twisted torus,
  /// the fewest links any halving of one dimension cuts.
  int bisection_links() const;
  /// True if every chip reaches every other (checked with Boost.Graph connected_components).
  bool connected() const;
  std::string describe() const;  ///< "128x32 (wrap X=no Y=yes), 4096 chips"

 private:
  TopologySpec spec_;
  std::vector<int> stride_;
  int num_chips_ = 0;
  int num_directed_links_ = 0;
  int twisted_dim_ = -1;
  int links_cut_halving(int d) const;
};

template <class F>
void Topology::for_each_route_slot(int src, int dst, F&& f) const {
  if (twisted_dim_ >= 0) {
    for (int slot : route(src, dst)) f(slot);
    return;
  }
  int cur = src;
  for (int d = 0; d < num_dims(); ++d) {
    const int n = spec_.dims[d], stride = stride_[d];
    int c = coord(src, d);
    const int steps = offset(c, coord(dst, d), d);
    const int dir = steps >= 0 ? +1 : -1;
    for (int k = 0; k < (steps >= 0 ? steps : -steps); ++k) {
      f(link_slot(cur, d, dir));
      c += dir;  // neighbor(cur, d, dir) on a plain grid: past an end only where it wraps
      if (c == n) {
        c = 0;
        cur -= (n - 1) * stride;
      } else if (c < 0) {
        c = n - 1;
        cur += (n - 1) * stride;
      } else {
        cur += dir * stride;
      }
    }
  }
}

}  // namespace tpusim
