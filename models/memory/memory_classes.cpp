#include "models/memory/memory_classes.hpp"

namespace tpusim {

const std::vector<MemoryClassInfo>& memory_classes() {
  using C = MemoryClass;
  // One class per line reads as a table.
  // clang-format off
  static const std::vector<MemoryClassInfo> kTable{
      {C::MasterWeights, "f32", "the whole step", "parameters of every weight-owning op, divided over the model axis where the op splits them, and over the replicas with weight-update sharding"},
      {C::WeightCopies, "bf16", "the whole step", "the copy of the same parameters that forward and backward read (the optimizer writes it; with weight-update sharding the all-gather fills it), divided over the model axis only"},
      {C::OptimizerState, "f32", "the whole step", "optimizer slots per weight (momentum SGD and LARS 1, Adam and LAMB 2), sharded like the master weights"},
      {C::Infeed, "mixed", "the whole step", "two batches of the replica's input as the builder declares it (ids, images, host-computed labels), divided over the spatial cores"},
      {C::Activations, "op dtype", "producer to last reader", "outputs of forward ops (and of their recomputed copies); tensors a backward op reads stay live until it runs"},
      {C::ActivationGradients, "bf16", "producer to last reader", "outputs of backward ops that flow to earlier ops (the gradient of an input)"},
      {C::WeightGradients, "f32", "producer to its bucket's collective (or the optimizer)", "weight gradients of every owner an op contributes to, as the gradient matmul or scatter-add writes them"},
      {C::GradientBuckets, "grad_dtype", "bucket collective to the bucket's last optimizer op", "the reduced gradients of a bucket (the reduce-scatter's 1/replicas share with weight-update sharding)"},
      {C::OptimizerUpdates, "f32", "update op to apply op", "LAMB's update direction (4 bytes per weight) and the per-tensor norms of LAMB and LARS between the two optimizer phases"},
      {C::CollectiveBuffers, "op dtype", "producer to its all-reduce", "partial sums of a split contraction staged for their all-reduce, and the optimizer norms in flight"},
      {C::Halos, "bf16", "exchange to the window op", "rows or columns received from spatial neighbours before a convolution or pooling"},
      {C::KvCache, "kv_cache_dtype", "the whole step", "prefill and decode: the keys and values of the step's sequences, preallocated to the model length or in the pages their tokens fill, divided over the model axis where it splits the key/value heads"},
  };
  // clang-format on
  return kTable;
}

}  // namespace tpusim
