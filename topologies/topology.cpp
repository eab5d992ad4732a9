#include "topologies/topology.hpp"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/connected_components.hpp>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "core/config.hpp"
#include "core/errors.hpp"
#include "core/limits.hpp"
#include "core/nearest_name.hpp"
#include "core/params.hpp"
#include "core/presets.hpp"
#include "topologies/slice_names.hpp"
#include "topologies/topology_params.hpp"

namespace tpusim {
namespace {
using T = ParamType;
// One parameter per line reads as a table.
// clang-format off
const ParamRegistrar kTopologyParams{{
    label_param("topology.name", "tpu_v3_multipod", "name of the topology, for reports"),
    {"topology.dims", T::IntegerList, "chips", nlohmann::json::array({128, 32}), "chips along each grid dimension, X first (the default is the 4096-chip Multipod)", 1, 4096},
}};
}  // namespace
// Read elsewhere through its handle (topology_params.hpp).
const Param<std::int64_t> kTopologySlices{{"topology.slices", T::Integer, "slices", 1, "multislice: copies of this grid, each its own ICI domain, joined by the data-center network (dcn.*); data parallelism spans them (parallelism.slices); 1: one ICI domain", 1, 64}};
namespace {
const ParamRegistrar kTopologyParamsAfterSlices{{
    {"topology.wrap", T::BooleanList, "", nlohmann::json::array({false, true}), "per dimension: true if it wraps around (a ring), false for an open line", 0, 1},
    {"topology.twist", T::Boolean, "", false, "a twisted torus (TPU v4's optical switches, ISCA 2023): on a k x k x 2k slice with every dimension wrapping, the wrap links of the two k-chip dimensions land k chips further along the 2k-chip one (docs/studies.md, Chip generations)"},
}};
// clang-format on

nlohmann::json expand_topology(const std::string& text, const std::string& where) {
  return to_json(parse_topology(text, where));
}
/// An object form without "wrap" wraps as the same shape written as text would (every dimension
/// of a 1D, 2D or 4D shape; on a 3D slice those of 4 or more chips), and without "name" is named
/// by its shape ("32x32"), never the default Multipod's wrap and name.
void complete_topology(nlohmann::json& t) {
  const auto dims = t.find("dims");
  if (dims == t.end() || !dims->is_array() || dims->empty()) return;
  std::vector<int> d;
  std::string shape;
  for (const auto& e : *dims) {
    if (!e.is_number_integer() || e.get<long long>() < 1 || e.get<long long>() > 4096) return;
    d.push_back(e.get<int>());
    shape += (shape.empty() ? "" : "x") + std::to_string(d.back());
  }
  if (!t.contains("wrap")) {
    const std::vector<bool> wrap =
        d.size() == 3 ? optical_slice_wrap(d) : std::vector<bool>(d.size(), true);
    t["wrap"] = wrap;
  }
  if (!t.contains("name")) t["name"] = shape;
}
const ShorthandRegistrar kShorthand{"topology", &expand_topology, &complete_topology};

// What a topology may be given as; the presets are those of core/presets' registry.
std::string shape_help() {
  std::string presets;
  for (const auto& n : preset_names(PresetKind::Topology))
    presets += (presets.empty() ? "" : ", ") + n;
  return "a preset name (" + presets +
         "), a shape such as 32x128 (all dimensions wrap), 4x4x8 (3D: dimensions of 4 or more "
         "wrap) or 128x32:wrap=0,1, a Cloud slice name (v4-128, v5p-256, v5litepod-16), or a "
         "JSON file";
}

bool parse_int(const std::string& s, int& out) {
  if (s.empty() || s.size() > 6 || !std::all_of(s.begin(), s.end(), ::isdigit)) return false;
  out = std::atoi(s.c_str());
  return true;
}

/// The 2k-chip dimension of a k x k x 2k shape, or -1.
int long_dim_of(const std::vector<int>& dims) {
  if (dims.size() != 3) return -1;
  for (int d = 0; d < 3; ++d) {
    const int a = dims[(d + 1) % 3], b = dims[(d + 2) % 3];
    if (a == b && dims[d] == 2 * a) return d;
  }
  return -1;
}

void check_twist(const TopologySpec& spec, const std::string& where) {
  bool all_wrap = std::all_of(spec.wrap.begin(), spec.wrap.end(), [](bool w) { return w; });
  for (int d : spec.dims) all_wrap = all_wrap && d > 2;
  if (long_dim_of(spec.dims) < 0 || !all_wrap)
    throw ConfigError(where,
                      "a twisted torus is a k x k x 2k slice (k of 3 or more) whose every "
                      "dimension wraps (TPU v4 paper, ISCA 2023); this topology is not one");
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.push_back("");
  return out;
}
}  // namespace

nlohmann::json to_json(const TopologySpec& spec) {
  nlohmann::json wrap = nlohmann::json::array();
  for (bool w : spec.wrap) wrap.push_back(w);
  nlohmann::json j{{"name", spec.name}, {"dims", spec.dims}, {"wrap", wrap}};
  if (spec.twist) j["twist"] = true;
  if (spec.slices != 1) j["slices"] = spec.slices;
  return j;
}

TopologySpec topology_from_json(const nlohmann::json& j, const std::string& where) {
  ProblemList problems;
  TopologySpec spec;
  if (!j.is_object()) throw ConfigError(where, "expected a topology object, got " + j.dump());
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "name" && it.key() != "dims" && it.key() != "wrap" && it.key() != "twist" &&
        it.key() != "slices" && it.key()[0] != '_')
      problems.add(where + "." + it.key(), "unknown key; allowed: name, dims, wrap, twist, slices");
  if (auto slices = j.find("slices"); slices != j.end()) {
    if (!slices->is_number_integer() || slices->get<long long>() < 1 ||
        slices->get<long long>() > 64)
      problems.add(where + ".slices", slices->dump() +
                                          " is not allowed; expected a slice count "
                                          "from 1 to 64");
    else
      spec.slices = slices->get<int>();
  }
  // Found by fuzz_topology_mesh: a name that is not a string was a JSON type error (exit 3).
  if (auto name = j.find("name"); name != j.end() && !name->is_string())
    problems.add(where + ".name", name->dump() + " is not allowed; expected a string");
  else
    spec.name = j.value("name", "custom");
  auto dims = j.find("dims");
  if (dims == j.end() || !dims->is_array() || dims->empty() || dims->size() > 4) {
    problems.add(where + ".dims", "expected a list of 1 to 4 chip counts");
  } else {
    for (const auto& d : *dims) {
      if (!d.is_number_integer() || d.get<int>() < 1 || d.get<int>() > 4096)
        problems.add(where + ".dims", d.dump() + " is not a chip count from 1 to 4096");
      else
        spec.dims.push_back(d.get<int>());
    }
  }
  auto wrap = j.find("wrap");
  if (wrap == j.end()) {
    spec.wrap.assign(spec.dims.size(), true);
  } else if (!wrap->is_array()) {
    problems.add(where + ".wrap", "expected a list of booleans, one per dimension");
  } else {
    for (const auto& w : *wrap) {
      if (!w.is_boolean())
        problems.add(where + ".wrap", w.dump() + " is not a boolean");
      else
        spec.wrap.push_back(w.get<bool>());
    }
    if (problems.empty() && spec.wrap.size() != spec.dims.size())
      problems.add(where + ".wrap", "has " + std::to_string(spec.wrap.size()) +
                                        " entries but dims has " +
                                        std::to_string(spec.dims.size()) +
                                        "; allowed: one per dimension (a topology given as a "
                                        "shape, e.g. --set topology=4x4x1, wraps as its shape)");
  }
  if (auto twist = j.find("twist"); twist != j.end()) {
    if (!twist->is_boolean())
      problems.add(where + ".twist", twist->dump() + " is not a boolean");
    else
      spec.twist = twist->get<bool>();
  }
  problems.throw_if_any();
  if (spec.twist) check_twist(spec, where + ".twist");
  long long chips = 1;
  for (int d : spec.dims) chips *= d;
  if (chips > kMaxChips)
    throw ConfigError(where + ".dims",
                      std::to_string(chips) + " chips is " +
                          past_limit(static_cast<double>(kMaxChips), "chips", "kMaxChips"));
  return spec;
}

TopologySpec parse_topology(const std::string& text, const std::string& where) {
  if (text.empty()) throw ConfigError(where, "empty topology; expected " + shape_help());
  // Inline shape: digits separated by 'x', optionally ":wrap=..."
  std::string shape = text, wrap_part;
  if (auto colon = text.find(':'); colon != std::string::npos) {
    shape = text.substr(0, colon);
    wrap_part = text.substr(colon + 1);
  }
  if (std::isdigit(static_cast<unsigned char>(shape[0]))) {
    TopologySpec spec;
    spec.name = text;
    for (const auto& part : split(shape, 'x')) {
      int v = 0;
      if (!parse_int(part, v) || v < 1)
        throw ConfigError(where, "'" + text + "' is not a topology; expected " + shape_help());
      spec.dims.push_back(v);
    }
    if (wrap_part.empty() && spec.dims.size() == 3) {
      spec.wrap = optical_slice_wrap(spec.dims);  // TPU v4 / v5p: 4 or more chips wrap
    } else if (wrap_part.empty()) {
      spec.wrap.assign(spec.dims.size(), true);
    } else {
      if (wrap_part.rfind("wrap=", 0) != 0)
        throw ConfigError(where,
                          "'" + text + "': after ':' expected wrap=FLAGS, e.g. 128x32:wrap=0,1");
      for (const auto& f : split(wrap_part.substr(5), ',')) {
        if (f != "0" && f != "1")
          throw ConfigError(where, "'" + text + "': wrap flags are 0 or 1, one per dimension");
        spec.wrap.push_back(f == "1");
      }
    }
    return topology_from_json(to_json(spec), where);
  }
  if (!wrap_part.empty())
    throw ConfigError(where, "'" + text + "': wrap flags go with a shape, e.g. 128x32:wrap=0,1");
  if (TopologySpec slice; parse_slice_name(text, slice, where)) return slice;
  nlohmann::json j;
  std::error_code ec;  // a name too long for the file system is no file: then it is a preset name
  if (std::filesystem::exists(text, ec) && !std::filesystem::is_directory(text, ec)) {
    j = read_json_file(text);
  } else {
    j = nlohmann::json{{"preset", text}};
    try {
      resolve_presets(j, where);
    } catch (const ConfigError& e) {
      throw ConfigError(where, "'" + text + "' is not a known topology; expected " + shape_help() +
                                   did_you_mean_suffix(text, preset_names(PresetKind::Topology)));
    }
  }
  return topology_from_json(j, where);
}

Topology::Topology(TopologySpec spec) : spec_(std::move(spec)) {
  num_chips_ = 1;
  for (int d : spec_.dims) {
    stride_.push_back(num_chips_);
    num_chips_ *= d;
  }
  if (spec_.twist) twisted_dim_ = long_dim_of(spec_.dims);
  for (int s = 0; s < num_link_slots(); ++s)
    if (link_exists(s)) ++num_directed_links_;
}

std::vector<int> Topology::coords(int chip) const {
  std::vector<int> c(num_dims());
  for (int d = 0; d < num_dims(); ++d) c[d] = coord(chip, d);
  return c;
}

int Topology::chip_at(const std::vector<int>& c) const {
  int chip = 0;
  for (int d = 0; d < num_dims(); ++d) chip += c[d] * stride_[d];
  return chip;
}

int Topology::shifted(int chip, const std::vector<int>& by) const {
  int out = chip;
  for (int d = 0; d < num_dims(); ++d) {
    const int n = spec_.dims[d], c = coord(chip, d);
    out += (((c + by[d]) % n + n) % n - c) * stride_[d];
  }
  return out;
}

int Topology::neighbor(int chip, int d, int dir) const {
  const int n = spec_.dims[d];
  if (n == 1) return -1;
  int c = coord(chip, d) + dir;
  int shift = 0;  // along the twisted dimension, on a twisted wrap link
  if (c < 0 || c >= n) {
    if (!wraps(d)) return -1;
    c = (c + n) % n;
    if (twisted_dim_ >= 0 && d != twisted_dim_) {
      const int t = twisted_dim_, half = spec_.dims[t] / 2;
      shift = ((coord(chip, t) + half) % spec_.dims[t] - coord(chip, t)) * stride_[t];
    }
  }
  return chip + (c - coord(chip, d)) * stride_[d] + shift;
}

bool Topology::link_exists(int slot) const {
  const int dir_bit = slot % 2;
  const int d = (slot / 2) % num_dims();
  const int chip = slot / 2 / num_dims();
  return neighbor(chip, d, dir_bit == 0 ? +1 : -1) >= 0;
}

Link Topology::link(int slot) const {
  Link l;
  l.dir = slot % 2 == 0 ? +1 : -1;
  l.dim = (slot / 2) % num_dims();
  l.src = slot / 2 / num_dims();
  l.dst = neighbor(l.src, l.dim, l.dir);
  return l;
}

int Topology::offset(int a, int b, int d) const {
  const int n = spec_.dims[d];
  int off = b - a;
  if (wraps(d)) {
    off = ((off % n) + n) % n;  // 0..n-1 going +
    if (off > n / 2) off -= n;  // shorter going -
  }
  return off;
}

std::vector<int> Topology::route_steps(int src, int dst) const {
  std::vector<int> steps(num_dims());
  if (twisted_dim_ < 0) {
    for (int d = 0; d < num_dims(); ++d) steps[d] = offset(coord(src, d), coord(dst, d), d);
    return steps;
  }
  // The displacement reduced by the wrap lattice: (k, 0, k) and (0, k, k) (a k-chip dimension
  // and the long one, t) and 2k along t. Each k-chip step is then c or c - k, which moves t by
  // -k; t's step the shorter way round its 2k ring.
  const int t = twisted_dim_, n = spec_.dims[t], k = n / 2;
  std::vector<int> c(num_dims());
  int ct = coord(dst, t) - coord(src, t);
  for (int d = 0; d < num_dims(); ++d) {
    if (d == t) continue;
    c[d] = coord(dst, d) - coord(src, d);
    if (c[d] < 0) c[d] += k, ct -= k;
  }
  int best = -1;
  const int a = t == 0 ? 1 : 0, b = t == 2 ? 1 : 2;  // the two k-chip dimensions, in order
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      int z = (((ct - (i + j) * k) % n) + n) % n;
      if (z > k) z -= n;  // a tie at k goes +
      const int sa = c[a] - i * k, sb = c[b] - j * k;
      const int h = std::abs(sa) + std::abs(sb) + std::abs(z);
      if (best >= 0 && h >= best) continue;
      best = h;
      steps[a] = sa, steps[b] = sb, steps[t] = z;
    }
  return steps;
}

std::vector<int> Topology::route(int src, int dst) const {
  if (twisted_dim_ < 0) {
    std::vector<int> links;
    links.reserve(static_cast<std::size_t>(hops(src, dst)));
    for_each_route_slot(src, dst, [&](int slot) { links.push_back(slot); });
    return links;
  }
  const std::vector<int> steps = route_steps(src, dst);
  std::vector<int> links;
  int total = 0;
  for (int s : steps) total += std::abs(s);
  links.reserve(static_cast<std::size_t>(total));
  int cur = src;
  for (int d = 0; d < num_dims(); ++d) {
    const int dir = steps[d] >= 0 ? +1 : -1;
    for (int k = 0; k < std::abs(steps[d]); ++k) {
      links.push_back(link_slot(cur, d, dir));
      cur = neighbor(cur, d, dir);
    }
  }
  return links;
}

int Topology::hops(int src, int dst) const {
  int h = 0;
  if (twisted_dim_ < 0) {
    for (int d = 0; d < num_dims(); ++d) h += std::abs(offset(coord(src, d), coord(dst, d), d));
    return h;
  }
  for (int s : route_steps(src, dst)) h += std::abs(s);
  return h;
}

int Topology::translate(int chip, int dim, int by) const {
  const int n = spec_.dims[dim];
  if (twisted_dim_ < 0 || dim == twisted_dim_) {
    std::vector<int> x = coords(chip);
    x[dim] = ((x[dim] + by) % n + n) % n;
    return chip_at(x);
  }
  // Along a twisted dimension: n steps move n along the long one (half way round it), so the
  // translation repeats after 2n steps; walk the links.
  by %= 2 * n;
  const int dir = by >= 0 ? +1 : -1;
  for (int s = 0; s < std::abs(by); ++s) chip = neighbor(chip, dim, dir);
  return chip;
}

int Topology::links_cut_halving(int d) const {
  int cut = 0;
  for (int s = 0; s < num_link_slots(); s += 2)  // the + direction of each physical link
    if (link_exists(s)) {
      const Link l = link(s);
      cut += (coord(l.src, d) < spec_.dims[d] / 2) != (coord(l.dst, d) < spec_.dims[d] / 2);
    }
  return cut;
}

int Topology::bisection_links() const {
  if (twisted_dim_ >= 0) {
    int fewest = links_cut_halving(0);
    for (int d = 1; d < num_dims(); ++d) fewest = std::min(fewest, links_cut_halving(d));
    return fewest;
  }
  int d =
      static_cast<int>(std::max_element(spec_.dims.begin(), spec_.dims.end()) - spec_.dims.begin());
  if (spec_.dims[d] < 2) return 0;
  const int cross_section = num_chips_ / spec_.dims[d];
  return cross_section * (wraps(d) ? 2 : 1);
}

bool Topology::connected() const {
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;
  Graph g(num_chips_);
  for (int s = 0; s < num_link_slots(); s += 2)  // the + direction of each physical link
    if (link_exists(s)) boost::add_edge(s / 2 / num_dims(), link(s).dst, g);
  std::vector<int> component(num_chips_);
  return num_chips_ == 0 || boost::connected_components(g, component.data()) == 1;
}

std::string Topology::describe() const {
  std::ostringstream os;
  static const char* kNames[] = {"X", "Y", "Z", "W"};
  for (int d = 0; d < num_dims(); ++d) os << (d ? "x" : "") << spec_.dims[d];
  os << " (";
  for (int d = 0; d < num_dims(); ++d)
    os << (d ? " " : "") << kNames[d] << (spec_.wrap[d] ? " wraps" : " open");
  os << (spec_.twist ? ", twisted" : "") << "), " << num_chips_ << " chips";
  if (spec_.slices > 1)
    os << " per slice, " << spec_.slices << " slices (" << num_chips_ * spec_.slices << " chips)";
  return os.str();
}

}  // namespace tpusim
