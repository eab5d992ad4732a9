#include "models/conv_ops.hpp"

#include <algorithm>
#include <cassert>

#include "models/ops.hpp"

namespace tpusim {
namespace {}  // namespace

std::int64_t conv_out_size(std::int64_t in, int kernel, int stride, ConvPadding pad) {
  if (pad == ConvPadding::Same) return (in + stride - 1) / stride;
  return in < kernel ? 0 : (in - kernel) / stride + 1;
}

ConvShape map_geometry(const FeatureMap& m) {
  ConvShape c;
  c.batch = m.batch;
  c.height = c.out_height = m.height;
  c.width = c.out_width = m.width;
  c.in_channels = c.out_channels = m.channels;
  return c;
}

FeatureMap output_of(const OpNode& n) {
  assert(n.conv);
  return {n.conv->batch, n.conv->out_height, n.conv->out_width, n.conv->out_channels};
}

std::int64_t taps_per_pass(std::int64_t in_channels, std::int64_t taps, int array_dim) {
  if (in_channels >= array_dim) return 1;
  return std::max<std::int64_t>(1, std::min<std::int64_t>(taps, array_dim / in_channels));
}

OpNode conv2d(std::string name, const FeatureMap& in, std::int64_t out_channels, int kernel,
              int stride, int array_dim, ConvPadding pad, bool bias) {
  ConvShape c;
  c.batch = in.batch;
  c.height = in.height;
  c.width = in.width;
  c.in_channels = in.channels;
  c.out_channels = out_channels;
  c.kernel_h = c.kernel_w = kernel;
  c.stride = stride;
  c.out_height = conv_out_size(in.height, kernel, stride, pad);
  c.out_width = conv_out_size(in.width, kernel, stride, pad);

  OpNode op;
  op.name = std::move(name);
  op.kind = OpKind::Conv;
  op.conv = c;
  const std::int64_t taps = static_cast<std::int64_t>(kernel) * kernel;
  const std::int64_t packed = taps_per_pass(c.in_channels, taps, array_dim);
  const std::int64_t groups = (taps + packed - 1) / packed;
  op.matmul = MatmulShape{groups, c.batch * c.out_height * c.out_width, packed * c.in_channels,
                          out_channels};
  // The true FLOPs (the last group may hold fewer taps than the shape says).
  op.flops = 2.0 * taps * op.matmul->m * c.in_channels * out_channels;
  const std::int64_t weights = taps * c.in_channels * out_channels;
  const FeatureMap out = output_of(op);
  op.bytes_read = (in.elements() + static_cast<double>(weights)) * kBf16Bytes;
  op.bytes_written = out.elements() * kBf16Bytes;
  op.params = weights + (bias ? out_channels : 0);
  if (bias) {
    op.vpu_elements = out.elements();
    op.vpu_ops_per_element = vpu_ops::kBiasAdd;
    op.bwd_vpu_ops_per_element = vpu_ops::kBiasAdd;
  }
  op.shapes = {{in.batch, in.height, in.width, in.channels},
               {kernel, kernel, in.channels, out_channels},
               {out.batch, out.height, out.width, out.channels}};
  return op;
}

OpNode map_op(OpKind kind, std::string name, const FeatureMap& map, int inputs,
              double ops_per_element, double bwd_ops_per_element) {
  OpNode op = vector_op(kind, std::move(name), map.elements(), inputs, ops_per_element,
                        bwd_ops_per_element);
  op.conv = map_geometry(map);
  op.shapes = {{map.batch, map.height, map.width, map.channels}};
  return op;
}

OpNode batch_norm_stats(std::string name, const FeatureMap& map) {
  OpNode op =
      map_op(OpKind::BatchNorm, std::move(name), map, 1, vpu_ops::kBnStats, vpu_ops::kBnStatsGrad);
  op.out_dtype = DType::F32;
  // XLA computes the sums in the producing convolution's output fusion (a multi-output fusion),
  // so the statistics add vector work but no HBM pass over the map; likewise their gradient
  // sums ride on the apply gradient's pass (the derived backward op reads only these bytes).
  op.bytes_read = 0;
  op.bytes_written = 2.0 * map.channels * kF32Bytes;  // sum and sum of squares per channel
  op.partial_bytes = op.bytes_written;
  op.shapes.push_back({2, map.channels});
  return op;
}

OpNode batch_norm_apply(std::string name, const FeatureMap& map, bool relu, int inputs) {
  const double ops =
      vpu_ops::kBnApply + (inputs - 1) * vpu_ops::kResidualAdd + (relu ? vpu_ops::kRelu : 0);
  const double bwd = vpu_ops::kBnApplyGrad + (relu ? vpu_ops::kReluGrad : 0);
  OpNode op = map_op(OpKind::BatchNorm, std::move(name), map, inputs, ops, bwd);
  op.params = 2 * map.channels;  // gamma and beta
  return op;
}

OpNode max_pool(std::string name, const FeatureMap& in, int kernel, int stride, ConvPadding pad) {
  const FeatureMap out{in.batch, conv_out_size(in.height, kernel, stride, pad),
                       conv_out_size(in.width, kernel, stride, pad), in.channels};
  // One compare-select per window element and output; backward routes dY to the arg-max.
  OpNode op = map_op(OpKind::Pool, std::move(name), out, 1, kernel * kernel, kernel * kernel);
  op.bytes_read = in.elements() * kBf16Bytes;
  op.conv->height = in.height;
  op.conv->width = in.width;
  op.conv->kernel_h = op.conv->kernel_w = kernel;
  op.conv->stride = stride;
  op.shapes = {{in.batch, in.height, in.width, in.channels},
               {out.batch, out.height, out.width, out.channels}};
  return op;
}

void finish_conv_training_graph(OpGraph& g) {
  for (int v = 0; v < g.size(); ++v) {
    OpNode& b = g.node(v);
    if (b.phase != Phase::Backward || b.forward_of < 0) continue;
    const OpNode& f = g.node(b.forward_of);
    if (f.conv && !b.conv) b.conv = f.conv;
    if (f.kind == OpKind::Conv && f.matmul) {
      b.flops = f.flops;  // each gradient product has the forward's true FLOPs
      // Fused conv traffic: X, W and Y (or their gradients) once each.
      double weights = 1;  // conv2d's shapes: input, kernel {k, k, Cin, Cout}, output
      for (std::int64_t d : f.shapes.at(1)) weights *= static_cast<double>(d);
      const double w_bytes = weights * kBf16Bytes;
      const double x_bytes = f.bytes_read - w_bytes;
      const double y_bytes = f.bytes_written;
      if (b.weight_grad) {  // dW = X^T dY, written in f32
        b.bytes_read = x_bytes + y_bytes;
        b.bytes_written = w_bytes / kBf16Bytes * kF32Bytes;
      } else {  // dX = dY * W^T
        b.bytes_read = y_bytes + w_bytes;
        b.bytes_written = x_bytes;
      }
    } else if (f.kind == OpKind::BatchNorm && f.partial_bytes > 0) {
      // Cross-replica BN backward: sum(dy) and sum(dy * x_hat) over the same cores as forward.
      b.split.spatial = f.split.spatial;
      b.partial_bytes = f.partial_bytes;
    }
  }
}

}  // namespace tpusim
