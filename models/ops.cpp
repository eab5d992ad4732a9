#include "models/ops.hpp"

namespace tpusim {

double matmul_bytes_read(const MatmulShape& s, DType in) {
  const double b = static_cast<double>(s.batch);
  return (b * s.m * s.k + b * s.k * s.n) * dtype_bytes(in);
}

double matmul_bytes_written(const MatmulShape& s, DType out) {
  return static_cast<double>(s.batch) * s.m * s.n * dtype_bytes(out);
}

OpNode weight_matmul(std::string name, std::int64_t m, std::int64_t k, std::int64_t n, bool bias) {
  OpNode op;
  op.name = std::move(name);
  op.kind = OpKind::Matmul;
  op.matmul = MatmulShape{1, m, k, n};
  op.flops = op.matmul->flops();
  // Forward reads the bf16 copy of the weights that the optimizer writes (models/training.cpp).
  op.bytes_read = matmul_bytes_read(*op.matmul, DType::BF16);
  op.bytes_written = matmul_bytes_written(*op.matmul, DType::BF16);
  if (bias) {
    op.vpu_elements = static_cast<double>(m) * n;
    op.vpu_ops_per_element = vpu_ops::kBiasAdd;
    op.bwd_vpu_ops_per_element = vpu_ops::kBiasAdd;  // bias gradient: a column sum of dY
  }
  op.params = k * n + (bias ? n : 0);
  op.shapes = {{m, k}, {k, n}, {m, n}};
  return op;
}

OpNode activation_matmul(std::string name, std::int64_t batch, std::int64_t m, std::int64_t k,
                         std::int64_t n) {
  OpNode op;
  op.name = std::move(name);
  op.kind = OpKind::Matmul;
  op.matmul = MatmulShape{batch, m, k, n};
  op.flops = op.matmul->flops();
  op.bytes_read = matmul_bytes_read(*op.matmul, DType::BF16);
  op.bytes_written = matmul_bytes_written(*op.matmul, DType::BF16);
  op.shapes = {{batch, m, k}, {batch, k, n}, {batch, m, n}};
  return op;
}

OpNode vector_op(OpKind kind, std::string name, double elements, int inputs, double ops_per_element,
                 double bwd_ops_per_element) {
  OpNode op;
  op.name = std::move(name);
  op.kind = kind;
  op.vpu_elements = elements;
  op.vpu_ops_per_element = ops_per_element;
  op.bwd_vpu_ops_per_element = bwd_ops_per_element;
  if (kind == OpKind::Softmax) op.grad_reads = GradReads::Output;
  op.bytes_read = elements * inputs * dtype_bytes(DType::BF16);
  op.bytes_written = elements * dtype_bytes(DType::BF16);
  op.shapes = {{static_cast<std::int64_t>(elements)}};
  return op;
}

OpNode layer_norm(std::string name, std::int64_t rows, std::int64_t width, int inputs,
                  double ops_per_element, double bwd_ops_per_element) {
  OpNode op = vector_op(OpKind::LayerNorm, std::move(name), static_cast<double>(rows) * width,
                        inputs, ops_per_element, bwd_ops_per_element);
  op.params = 2 * width;  // gamma and beta
  op.shapes = {{rows, width}, {rows, width}};
  return op;
}

OpNode embedding_lookup(std::string name, std::int64_t rows, std::int64_t table_rows,
                        std::int64_t width) {
  OpNode op;
  op.name = std::move(name);
  op.kind = OpKind::Embedding;
  op.vpu_elements = static_cast<double>(rows) * width;
  op.vpu_ops_per_element = vpu_ops::kGather;
  op.bwd_vpu_ops_per_element = vpu_ops::kGather;  // scatter-add: one add per element
  // Token ids (i32) and the gathered bf16 rows in; the rows out.
  op.bytes_read =
      static_cast<double>(rows) * (dtype_bytes(DType::I32) + width * dtype_bytes(DType::BF16));
  op.bytes_written = static_cast<double>(rows) * width * dtype_bytes(DType::BF16);
  op.params = table_rows * width;
  op.shapes = {{rows}, {table_rows, width}, {rows, width}};
  return op;
}

OpNode cross_entropy_loss(std::string name, std::int64_t rows, std::int64_t classes) {
  OpNode op = vector_op(OpKind::Loss, std::move(name), static_cast<double>(rows) * classes, 1,
                        vpu_ops::kCrossEntropy, vpu_ops::kCrossEntropyGrad);
  op.out_dtype = DType::F32;
  op.bytes_written = static_cast<double>(rows) * dtype_bytes(DType::F32);
  // Split over the classes, each core holds a partial max and sum per row (f32 each).
  op.partial_bytes = static_cast<double>(rows) * 2 * dtype_bytes(DType::F32);
  op.shapes = {{rows, classes}, {rows}};
  return op;
}

}  // namespace tpusim
