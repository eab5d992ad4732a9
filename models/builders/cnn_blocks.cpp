#include "models/builders/cnn_blocks.hpp"

#include <algorithm>

#include "models/ops.hpp"

namespace tpusim {

int CnnBlocks::add_rows(OpNode op, const std::vector<int>& inputs) {
  op.split.spatial = SplitDim::M;
  std::vector<int> ins;
  for (int v : inputs)
    if (v >= 0) ins.push_back(v);
  return g_.add(std::move(op), ins);
}

MapRef CnnBlocks::conv_bn(const std::string& name, const MapRef& x, std::int64_t out_channels,
                          int kernel, int stride, bool relu, ConvPadding pad,
                          const MapRef* residual) {
  OpNode c = conv2d(name, x.map, out_channels, kernel, stride, array_dim_, pad);
  const FeatureMap out = output_of(c);
  if (bn_ == BatchNormMode::Frozen) {
    // Folded into the convolution: the fixed scale is in the weights, the shift is the conv's
    // bias, and the ReLU rides on its output fusion. A residual add is its own fusion (it joins
    // two branches, each of which needs the gradient).
    if (!residual) {
      c.vpu_elements = out.elements();
      c.vpu_ops_per_element = vpu_ops::kBiasAdd + (relu ? vpu_ops::kRelu : 0);
      c.bwd_vpu_ops_per_element = relu ? vpu_ops::kReluGrad : 0;
      return {add_rows(std::move(c), {x.op}), out};
    }
    const int conv_v = add_rows(std::move(c), {x.op});
    OpNode add =
        map_op(OpKind::Elementwise, name + ".add_relu", out, 2,
               vpu_ops::kResidualAdd + (relu ? vpu_ops::kRelu : 0), relu ? vpu_ops::kReluGrad : 0);
    // d relu(a + b) = dy [y > 0] for both branches: the output's sign, not the summands.
    add.grad_reads = relu ? GradReads::Output : GradReads::None;
    return {add_rows(std::move(add), {conv_v, residual->op}), out};
  }
  const int conv_v = add_rows(std::move(c), {x.op});
  const int inputs = residual ? 2 : 1;
  OpNode stats = batch_norm_stats(name + ".bn.stats", out);
  stats.split.spatial = SplitDim::K;  // partial sums over this core's rows
  const int stats_v = g_.add(std::move(stats), {conv_v});
  std::vector<int> ins{conv_v, stats_v};
  if (residual) ins.push_back(residual->op);
  return {add_rows(batch_norm_apply(name + ".bn", out, relu, inputs), ins), out};
}

MapRef CnnBlocks::conv(const std::string& name, const MapRef& x, std::int64_t out_channels,
                       int kernel, int stride, ConvPadding pad) {
  OpNode c = conv2d(name, x.map, out_channels, kernel, stride, array_dim_, pad, true);
  const FeatureMap out = output_of(c);
  return {add_rows(std::move(c), {x.op}), out};
}

MapRef CnnBlocks::max_pool(const std::string& name, const MapRef& x, int kernel, int stride) {
  OpNode p = tpusim::max_pool(name, x.map, kernel, stride);
  const FeatureMap out = output_of(p);
  return {add_rows(std::move(p), {x.op}), out};
}

MapRef CnnBlocks::elementwise(const std::string& name, const std::vector<int>& inputs,
                              const FeatureMap& map, double ops, double bwd_ops) {
  const int n = static_cast<int>(std::max<std::size_t>(1, inputs.size()));
  return {add_rows(map_op(OpKind::Elementwise, name, map, n, ops, bwd_ops), inputs), map};
}

MapRef CnnBlocks::stem(const FeatureMap& image, int block) {
  // The host's input pipeline delivers the (space-to-depth) image in bf16; on the device one
  // pass normalises it.
  FeatureMap in = image;
  if (block > 1)
    in = {image.batch, image.height / block, image.width / block, image.channels * block * block};
  MapRef x{add_rows(map_op(OpKind::Elementwise, "input.normalize", in, 1, 2, 0), {}), in};
  if (block > 1)
    x = conv_bn("stem.conv", x, 64, (7 + block - 1) / block, std::max(1, 2 / block), true);
  else
    x = conv_bn("stem.conv", x, 64, 7, 2, true);
  return max_pool("stem.max_pool", x, 3, 2);
}

MapRef CnnBlocks::bottleneck(const std::string& name, const MapRef& x, std::int64_t width,
                             int stride) {
  const std::int64_t out = 4 * width;
  g_.begin_layer();
  MapRef shortcut = x;
  if (stride != 1 || x.map.channels != out)
    shortcut = conv_bn(name + ".shortcut", x, out, 1, stride, false);
  MapRef y = conv_bn(name + ".conv1", x, width, 1, 1, true);
  y = conv_bn(name + ".conv2", y, width, 3, stride, true);  // v1.5: the stride is on the 3x3
  y = conv_bn(name + ".conv3", y, out, 1, 1, true, ConvPadding::Same, &shortcut);
  g_.end_layer();
  return y;
}

MapRef CnnBlocks::basic_block(const std::string& name, const MapRef& x, std::int64_t width,
                              int stride) {
  g_.begin_layer();
  MapRef shortcut = x;
  if (stride != 1 || x.map.channels != width)
    shortcut = conv_bn(name + ".shortcut", x, width, 1, stride, false);
  MapRef y = conv_bn(name + ".conv1", x, width, 3, stride, true);
  y = conv_bn(name + ".conv2", y, width, 3, 1, true, ConvPadding::Same, &shortcut);
  g_.end_layer();
  return y;
}

}  // namespace tpusim
