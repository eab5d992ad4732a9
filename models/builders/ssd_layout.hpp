#pragma once
// SSD300's feature maps and default boxes (Liu et al. 2016; MLPerf v0.7 ssd300 with the
// ResNet-34 backbone), shared by the builder and its tests.
#include <cstdint>
#include <vector>

namespace tpusim {

/// Default boxes per location on the six feature maps.
constexpr std::int64_t kSsdBoxesPerLocation[6] = {4, 6, 6, 6, 4, 4};

/// Heights (= widths) of the six feature maps for an input of `image_size` pixels: /8 (the
/// backbone: stem /4, conv3_x /2, conv4_x stride 1), then three stride-2 'same' convs and two
/// 3x3 'valid' convs. 300 gives 38, 19, 10, 5, 3, 1.
std::vector<std::int64_t> ssd_feature_map_sizes(std::int64_t image_size);

/// Default boxes of one image: sum over maps of size^2 x boxes per location (8732 at 300).
std::int64_t ssd_default_boxes(std::int64_t image_size);

/// Default boxes of one image with each map's height padded up to a multiple of `rows_multiple`
/// (label tensors split over that many cores along H: 10144 at 300 and 8).
std::int64_t ssd_partitioned_boxes(std::int64_t image_size, std::int64_t rows_multiple);

}  // namespace tpusim
