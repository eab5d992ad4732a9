#include "topologies/mesh_placement.hpp"

#include <numeric>
#include <optional>

namespace tpusim {
namespace {

// Whole dimensions: for each axis, innermost first, the subsets of the free dimensions of the
// most members first, in lexicographic order, whose sizes multiply to the axis's size.
bool try_subsets(const std::vector<int>& dims, std::vector<bool>& free, int size,
                 std::vector<int>& chosen) {
  const int n = static_cast<int>(dims.size());
  for (int k = n; k >= 1; --k) {
    std::vector<int> idx(k);
    std::iota(idx.begin(), idx.end(), 0);
    while (true) {
      long long product = 1;
      bool usable = true;
      for (int i : idx) {
        usable = usable && free[i];
        product *= dims[i];
      }
      if (usable && product == size) {
        chosen = idx;
        for (int i : idx) free[i] = false;
        return true;
      }
      int pos = k - 1;  // next combination in lexicographic order
      while (pos >= 0 && idx[pos] == n - k + pos) --pos;
      if (pos < 0) break;
      ++idx[pos];
      for (int j = pos + 1; j < k; ++j) idx[j] = idx[j - 1] + 1;
    }
  }
  return false;
}

std::optional<MeshPlacement> whole_dimensions(const std::vector<int>& dims,
                                              const std::vector<int>& sizes) {
  MeshPlacement p;
  p.axes.resize(sizes.size());
  std::vector<int> need = sizes;
  // The cores of a chip (dimension 0) go to the innermost axes first, as the row-major order of
  // a chip's devices has them: the on-chip link is the fastest.
  int used = 1;
  for (int a = static_cast<int>(sizes.size()) - 1; a >= 0 && used < dims[0]; --a) {
    const int take = std::gcd(need[a], dims[0] / used);
    if (take <= 1) continue;
    p.axes[a].push_back({0, take, used});
    used *= take;
    need[a] /= take;
  }
  if (used != dims[0]) return std::nullopt;
  std::vector<bool> free(dims.size());
  for (std::size_t d = 1; d < dims.size(); ++d) free[d] = dims[d] > 1;
  for (int a = static_cast<int>(sizes.size()) - 1; a >= 0; --a) {
    if (need[a] <= 1) continue;
    std::vector<int> chosen;
    if (!try_subsets(dims, free, need[a], chosen)) return std::nullopt;
    for (int d : chosen) p.axes[a].push_back({d, dims[d], 1});
  }
  return p;
}

MeshPlacement split_dimensions(const std::vector<int>& dims, const std::vector<int>& sizes) {
  MeshPlacement p;
  p.split = true;
  p.axes.resize(sizes.size());
  std::vector<int> used(dims.size(), 1);  // product of the shares taken of each dimension
  for (int a = static_cast<int>(sizes.size()) - 1; a >= 0; --a) {
    int need = sizes[a];
    std::vector<int> left(dims.size());
    for (std::size_t d = 0; d < dims.size(); ++d) left[d] = dims[d] / used[d];
    for (std::size_t d = 0; d < dims.size() && need > 1; ++d) {
      const int take = std::gcd(need, dims[d] / used[d]);
      if (take <= 1) continue;
      p.axes[a].push_back({static_cast<int>(d), take, used[d]});
      used[d] *= take;
      need /= take;
    }
    if (need > 1) {
      p.failed_axis = a;
      p.left = left;
      return p;
    }
  }
  return p;
}

}  // namespace

MeshPlacement place_mesh(const std::vector<int>& dims, const std::vector<int>& sizes) {
  if (auto whole = whole_dimensions(dims, sizes)) return *whole;
  return split_dimensions(dims, sizes);
}

bool fits_in(std::vector<int> left, int size) {
  for (int& l : left) {
    const int take = std::gcd(size, l);
    size /= take;
  }
  return size == 1;
}

std::string describe_pieces(const std::vector<PlacementPiece>& pieces,
                            const std::vector<std::string>& dim_names) {
  if (pieces.empty()) return "one device";
  std::string out;
  for (const auto& piece : pieces) {
    out += (out.empty() ? "" : " x ") + dim_names[piece.dim] + " " + std::to_string(piece.size);
    if (piece.stride > 1) out += " (every " + std::to_string(piece.stride) + ")";
  }
  return out;
}

std::vector<int> placed_cores(const DeviceMesh& mesh, const Topology& topology) {
  std::vector<int> dims{mesh.devices_per_chip()}, sizes;
  for (int d = 0; d < topology.num_dims(); ++d) dims.push_back(topology.dim(d));
  for (const auto& a : mesh.axes()) sizes.push_back(a.size);
  const MeshPlacement placement = place_mesh(dims, sizes);
  if (!placement.ok()) return {};
  std::vector<long long> radix(dims.size(), 1);
  for (std::size_t d = 1; d < dims.size(); ++d) radix[d] = radix[d - 1] * dims[d - 1];
  std::vector<int> cores(mesh.num_devices());
  for (int dev = 0; dev < mesh.num_devices(); ++dev) {
    const std::vector<int> coords = mesh.device_coords(dev);
    long long core = 0;
    for (std::size_t a = 0; a < coords.size(); ++a) {
      int index = coords[a];
      for (const auto& piece : placement.axes[a]) {
        core += static_cast<long long>(index % piece.size) * piece.stride * radix[piece.dim];
        index /= piece.size;
      }
    }
    cores[dev] = static_cast<int>(core);
  }
  return cores;
}

std::vector<std::vector<int>> placed_groups(const DeviceMesh& mesh, const std::vector<int>& cores,
                                            const std::vector<std::string>& axes) {
  auto groups = mesh.groups(axes);  // DeviceMesh puts device d on core d: these are devices
  if (!cores.empty())
    for (auto& g : groups)
      for (int& member : g) member = cores[member];
  return groups;
}

}  // namespace tpusim
