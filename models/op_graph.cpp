#include "models/op_graph.hpp"

#include <algorithm>
#include <cassert>

namespace tpusim {

const char* to_string(OpKind k) {
  switch (k) {
    case OpKind::Matmul:
      return "matmul";
    case OpKind::Conv:
      return "conv";
    case OpKind::Elementwise:
      return "elementwise";
    case OpKind::Softmax:
      return "softmax";
    case OpKind::LayerNorm:
      return "layer_norm";
    case OpKind::BatchNorm:
      return "batch_norm";
    case OpKind::Pool:
      return "pool";
    case OpKind::Embedding:
      return "embedding";
    case OpKind::Loss:
      return "loss";
    case OpKind::Optimizer:
      return "optimizer";
    case OpKind::TopK:
      return "top_k";
    case OpKind::OneHotMatmul:
      return "one_hot_matmul";
    case OpKind::Gather:
      return "gather";
  }
  return "?";
}

std::vector<std::pair<std::string, SplitDim>> tensor_splits(const OpSplit& s) {
  return {{"model", s.model}, {"model2", s.model2}, {"sequence", s.sequence}};
}

const char* to_string(SplitDim d) {
  switch (d) {
    case SplitDim::None:
      return "none";
    case SplitDim::Batch:
      return "batch";
    case SplitDim::M:
      return "m";
    case SplitDim::K:
      return "k";
    case SplitDim::N:
      return "n";
  }
  return "?";
}

OpGraph::Vertex OpGraph::add(OpNode node, const std::vector<Vertex>& inputs) {
  if (node.layer < 0 && node.phase == Phase::Forward) node.layer = current_layer_;
  const Vertex v = static_cast<Vertex>(boost::add_vertex(std::move(node), *g_));
  inputs_.push_back(inputs);
  consumers_.emplace_back();
  for (std::size_t slot = 0; slot < inputs.size(); ++slot) {
    assert(inputs[slot] >= 0 && inputs[slot] < v && "inputs must be earlier ops");
    boost::add_edge(inputs[slot], v, OpEdge{static_cast<int>(slot)}, *g_);
    consumers_[static_cast<std::size_t>(inputs[slot])].emplace_back(v, static_cast<int>(slot));
  }
  return v;
}

double OpGraph::total_flops() const {
  double sum = 0;
  for (Vertex v = 0; v < size(); ++v) sum += node(v).flops;
  return sum;
}

double OpGraph::total_flops(Phase p) const {
  double sum = 0;
  for (Vertex v = 0; v < size(); ++v)
    if (node(v).phase == p) sum += node(v).flops;
  return sum;
}

double OpGraph::model_flops() const {
  double sum = 0;
  for (Vertex v = 0; v < size(); ++v)
    if (!node(v).recompute) sum += node(v).flops * node(v).model_flops_share;
  return sum;
}

std::int64_t OpGraph::total_params() const {
  std::int64_t sum = 0;
  for (Vertex v = 0; v < size(); ++v)
    if (node(v).phase == Phase::Forward) sum += node(v).params;
  return sum;
}

}  // namespace tpusim
