#include "topologies/slice_names.hpp"

#include <algorithm>
#include <cctype>

#include "core/errors.hpp"

namespace tpusim {
namespace {
struct SliceFamily {
  const char* prefix;    ///< the Cloud name before the count
  int devices_per_chip;  ///< what the count counts: TensorCores (2 per chip) or chips (1)
  int num_dims;          ///< 3D torus (v4, v5p) or 2D (v5e)
  long long min_chips;   ///< the smallest slice (one host)
  long long max_chips;   ///< the largest slice
  const char* source;
};
// Sizes from the Cloud TPU system architecture pages (docs/reference.md): v4 pods of 4096 chips,
// v4-8 one host of 4 chips; v5p slices up to 16x16x24 = 6144 chips; v5e pods of 16x16 = 256 chips.
const SliceFamily kFamilies[] = {
    {"v4-", 2, 3, 4, 4096, "TPU v4 (the count is TensorCores, 2 per chip)"},
    {"v5p-", 2, 3, 4, 6144, "TPU v5p (the count is TensorCores, 2 per chip)"},
    {"v5litepod-", 1, 2, 1, 256, "TPU v5e (the count is chips)"},
    {"v5e-", 1, 2, 1, 256, "TPU v5e (the count is chips)"},
    {"v6e-", 1, 2, 1, 256, "TPU v6e (the count is chips)"},
};

bool power_of_two(long long n) { return n > 0 && (n & (n - 1)) == 0; }

std::vector<int> doubling_shape(long long chips, int num_dims) {
  std::vector<int> dims(static_cast<std::size_t>(num_dims), 1);
  for (long long n = 1; n < chips; n *= 2) {
    const int smallest = *std::min_element(dims.begin(), dims.end());
    for (int d = num_dims - 1; d >= 0; --d)
      if (dims[d] == smallest) {
        dims[d] *= 2;
        break;
      }
  }
  // A dimension of 1 goes last: 4 chips are 2x2x1 (one TPU v4 host), not 1x2x2.
  std::stable_partition(dims.begin(), dims.end(), [](int d) { return d > 1; });
  return dims;
}
}  // namespace

std::vector<bool> optical_slice_wrap(const std::vector<int>& dims) {
  std::vector<bool> wrap;
  for (int d : dims) wrap.push_back(d >= 4);
  return wrap;
}

std::vector<int> standard_slice_shape(long long chips, int num_dims) {
  if (power_of_two(chips)) return doubling_shape(chips, num_dims);
  if (chips % 3 != 0 || !power_of_two(chips / 3) || chips < 6) return {};
  std::vector<int> dims = doubling_shape(chips / 3 * 4, num_dims);
  auto largest = std::max_element(dims.rbegin(), dims.rend());  // the last of the largest
  if (*largest % 4 != 0) return {};
  *largest = *largest / 4 * 3;
  // A 3D slice of 64 chips or more is made of whole 4x4x4 cubes, every side a multiple of 4
  // (ISCA 2023; shared/reference/tpu-v4-and-later.md). Where the cut side is not (192 and 384
  // chips: 4x8x6, 8x8x6), the slice is the shape of a third as many chips with its (first)
  // smallest side tripled, sides ascending: 4x4x12 (v4-384), 4x8x12.
  if (num_dims == 3 && chips >= 64 && *largest % 4 != 0) {
    dims = doubling_shape(chips / 3, num_dims);
    *std::min_element(dims.begin(), dims.end()) *= 3;
    std::sort(dims.begin(), dims.end());
  }
  return dims;
}

bool parse_slice_name(const std::string& text, TopologySpec& out, const std::string& where) {
  const SliceFamily* family = nullptr;
  for (const auto& f : kFamilies)
    if (text.rfind(f.prefix, 0) == 0) family = &f;
  if (!family) return false;
  const std::string count = text.substr(std::string(family->prefix).size());
  if (count.empty() || count.size() > 6 || !std::all_of(count.begin(), count.end(), ::isdigit))
    throw ConfigError(where, "'" + text + "': expected " + family->prefix +
                                 "N, N the slice size of " + family->source);
  const long long n = std::stoll(count);
  const long long chips = n / family->devices_per_chip;
  std::vector<int> dims;
  if (n % family->devices_per_chip == 0 && chips >= family->min_chips && chips <= family->max_chips)
    dims = standard_slice_shape(chips, family->num_dims);
  if (dims.empty())
    throw ConfigError(where, "'" + text + "' is no standard slice of " + family->source +
                                 ": the slices have 2^k or 3 x 2^k chips, from " +
                                 std::to_string(family->min_chips) + " to " +
                                 std::to_string(family->max_chips) + " chips");
  out.name = text;
  out.dims = dims;
  // v4 and v5p wire their wrap links through the optical switches (a dimension of 4 or more
  // wraps). v5e and v6e have no optical switches: assumed, a slice wraps only along a dimension
  // that spans the whole 16-chip side of the pod, which is a ring; a shorter one is an open line.
  if (family->num_dims == 3) {
    out.wrap = optical_slice_wrap(dims);
  } else {
    out.wrap.clear();
    for (int d : dims) out.wrap.push_back(d == 16);
  }
  return true;
}

}  // namespace tpusim
