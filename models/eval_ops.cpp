#include "models/eval_ops.hpp"

#include "models/ops.hpp"

namespace tpusim {

OpNode top_k_select(std::string name, std::int64_t rows, std::int64_t classes, std::int64_t k,
                    bool split_classes) {
  const double passes = static_cast<double>(k) * 2 + 1;  // compare + select per pass, label test
  OpNode op = vector_op(OpKind::Elementwise, std::move(name), static_cast<double>(rows) * classes,
                        1, passes, 0);
  const double best_bytes = static_cast<double>(rows) * k * 2 * dtype_bytes(DType::F32);
  op.bytes_written = best_bytes;
  op.out_dtype = DType::F32;
  if (split_classes) {
    op.split.model = SplitDim::K;
    op.partial_bytes = best_bytes;
  }
  op.shapes = {{rows, classes}, {rows, k}};
  return op;
}

}  // namespace tpusim
