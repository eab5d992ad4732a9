#include "models/builders/ssd_layout.hpp"

#include "models/conv_ops.hpp"

namespace tpusim {

std::vector<std::int64_t> ssd_feature_map_sizes(std::int64_t image_size) {
  // Stem conv /2 and max pool /2, conv3_x /2 (each 'same', rounding up).
  std::int64_t s = conv_out_size(image_size, 7, 2, ConvPadding::Same);
  s = conv_out_size(s, 3, 2, ConvPadding::Same);
  s = conv_out_size(s, 3, 2, ConvPadding::Same);
  std::vector<std::int64_t> sizes{s};
  for (int i = 0; i < 3; ++i) sizes.push_back(conv_out_size(sizes.back(), 3, 2, ConvPadding::Same));
  for (int i = 0; i < 2; ++i)
    sizes.push_back(conv_out_size(sizes.back(), 3, 1, ConvPadding::Valid));
  return sizes;
}

std::int64_t ssd_default_boxes(std::int64_t image_size) {
  return ssd_partitioned_boxes(image_size, 1);
}

std::int64_t ssd_partitioned_boxes(std::int64_t image_size, std::int64_t rows_multiple) {
  const auto sizes = ssd_feature_map_sizes(image_size);
  std::int64_t boxes = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const std::int64_t rows = (sizes[i] + rows_multiple - 1) / rows_multiple * rows_multiple;
    boxes += rows * sizes[i] * kSsdBoxesPerLocation[i];
  }
  return boxes;
}

}  // namespace tpusim
