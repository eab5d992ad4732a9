#include "models/parallelism/per_core_cost.hpp"

#include "models/ops.hpp"
#include "models/parallelism/spatial.hpp"

namespace tpusim {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// `map`: the op splits a feature map (spatial partitioning, padded shards; `degree_w` of the
// `degree` cores split W).
void divide(MatmulShape& s, SplitDim d, int degree, const OpNode* map = nullptr, int degree_w = 1) {
  if (degree <= 1) return;
  auto part = [&](std::int64_t x) {
    return map ? spatial_shard(*map, x, degree, degree_w) : ceil_div(x, degree);
  };
  switch (d) {
    case SplitDim::None:
      return;
    case SplitDim::Batch:
      s.batch = part(s.batch);
      return;
    case SplitDim::M:
      s.m = part(s.m);
      return;
    case SplitDim::K:
      s.k = part(s.k);
      return;
    case SplitDim::N:
      s.n = part(s.n);
      return;
  }
}

double ratio(double part, double whole) { return whole > 0 ? part / whole : 0; }

// Vector ops per element of quantized training (AQT, docs/llm.md): quantizing an operand takes
// the absolute value, its running maximum over the channel, the multiply by the inverse scale
// and the round-and-convert; rescaling a product multiplies by both operands' scales and
// converts the int32 (or fp8 accumulator) result to bf16.
constexpr double kQuantizeOps = 4;
constexpr double kRescaleOps = 2;

// A quantized matmul's vector work on one core: both operands quantized, the output rescaled
// (added to the op's own epilogue, which the vector unit runs alongside the MXU).
void add_quantize_work(ComputeCost& c, const MatmulShape& s, bool weights_stored_8bit) {
  const double b = static_cast<double>(s.batch);
  const double operands = b * s.m * s.k + (weights_stored_8bit ? 0 : b * s.k * s.n),
               out = b * s.m * s.n;
  const double ops =
      c.vpu_elements * c.vpu_ops_per_element + kQuantizeOps * operands + kRescaleOps * out;
  if (c.vpu_elements <= 0) c.vpu_elements = out;
  c.vpu_ops_per_element = ops / c.vpu_elements;
}

// The HBM bytes a matmul's operands take: both in the op's dtype, or (weights stored in 8 bits)
// the weight operand at one byte.
double operand_bytes(const MatmulShape& s, const OpNode& n) {
  if (!n.weights_stored_8bit) return matmul_bytes_read(s, n.dtype);
  const double b = static_cast<double>(s.batch);
  return b * s.m * s.k * dtype_bytes(n.dtype) + b * s.k * s.n;
}

}  // namespace

ComputeCost per_core_cost(const OpNode& n, const Layout& layout, double shard) {
  ComputeCost c;
  c.vpu_ops_per_element = n.vpu_ops_per_element;
  if (n.matmul) {
    const MatmulShape whole = *n.matmul;
    MatmulShape s = whole;
    divide(s, n.split.model, layout.model);
    divide(s, n.split.model2, layout.model2);
    divide(s, n.split.sequence, layout.sequence);
    divide(s, n.split.spatial, layout.spatial, &n, layout.spatial_w);
    c.matmul = s;
    c.flops = n.flops * ratio(s.flops(), whole.flops()) / shard;
    const double read = ratio(operand_bytes(s, n), operand_bytes(whole, n));
    const double out =
        ratio(matmul_bytes_written(s, n.out_dtype), matmul_bytes_written(whole, n.out_dtype));
    c.bytes_read = n.bytes_read * read / shard;
    c.bytes_written = n.bytes_written * out / shard;
    c.vpu_elements = n.vpu_elements * out / shard;
    c.mxu_dtype = n.mxu_dtype;
    if (is_8bit(n.mxu_dtype)) add_quantize_work(c, s, n.weights_stored_8bit);
    return c;
  }
  const double model = n.split.model == SplitDim::None ? 1 : layout.model;
  const double spatial = n.split.spatial == SplitDim::None
                             ? 1
                             : 1 / spatial_fraction(n, layout.spatial, layout.spatial_w);
  const double model2 = n.split.model2 == SplitDim::None ? 1 : layout.model2;
  const double sequence = n.split.sequence == SplitDim::None ? 1 : layout.sequence;
  const double div = model * spatial * shard * model2 * sequence;
  c.flops = n.flops / div;
  c.bytes_read = n.bytes_read / div;
  c.bytes_written = n.bytes_written / div;
  c.vpu_elements = n.vpu_elements / div;
  if (n.kind == OpKind::Embedding && n.split.model == SplitDim::K) {
    // Each core gathers the rows of its vocabulary range and writes zeros elsewhere.
    c.bytes_written *= model;
    c.vpu_elements *= model;
  }
  return c;
}

double partial_result_bytes(const OpNode& n, const Layout& layout, const ComputeCost& cost) {
  if (n.scatter_partial && n.scatter_bytes > 0) {
    double div = 1;
    for (const auto& a : n.scatter_divisors) div *= layout.degree(a);
    return n.scatter_bytes / div;
  }
  if (n.partial_bytes <= 0) return cost.bytes_written;
  // Explicit partials (per-row statistics, norms) are divided only by axes splitting the rows.
  double div = 1;
  if (n.split.model != SplitDim::None && n.split.model != SplitDim::K) div *= layout.model;
  if (n.split.spatial != SplitDim::None && n.split.spatial != SplitDim::K) div *= layout.spatial;
  if (n.split.model2 != SplitDim::None && n.split.model2 != SplitDim::K) div *= layout.model2;
  if (n.split.sequence != SplitDim::None && n.split.sequence != SplitDim::K) div *= layout.sequence;
  return n.partial_bytes / div;
}

}  // namespace tpusim
