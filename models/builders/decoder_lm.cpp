// A decoder-only transformer language model (GPT-3, PaLM and their kin), sized by parameters:
// pre-layer-norm blocks, serial (attention then MLP) or parallel (both from one layer norm,
// summed: PaLM), multi-head, multi-query or grouped-query attention (workload.kv_heads), GELU or
// SwiGLU MLPs, rotary or learned positions, optional biases, tied or separate output embedding.
// Adam. docs/llm.md lists what is modelled and the closed forms the tests hold it to.
//
// Model-parallel splits ("model" axis, Megatron-style): Q and the MLP's first matmul split on
// output columns (heads, d_ff), the attention output and the MLP's second matmul on input rows
// (partial sums, all-reduced); K and V split on their heads when the model degree divides
// kv_heads, or, a multiple of grouped-query kv_heads, each core holding the one head its query
// heads share (a head replicated model / kv_heads times); else every model core computes them
// whole (multi-query attention as PaLM runs it).
// The vocabulary splits the embedding, the output projection and the loss.
#include <limits>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/hardware.hpp"
#include "core/mxu_rates.hpp"
#include "core/param_handle.hpp"
#include "core/params.hpp"
#include "models/builders/decoder_blocks.hpp"
#include "models/builders/decoder_params.hpp"
#include "models/model_builder.hpp"
#include "models/ops.hpp"
#include "models/parallelism/layout.hpp"
#include "models/parallelism/rules/expert_axis.hpp"
#include "models/training.hpp"

namespace tpusim {
namespace {
using T = ParamType;
const char* kDecoderLmModel = "decoder_lm";
}  // namespace

// The parameters decoder_params.hpp declares have external linkage; the others stay internal
// (const at namespace scope).

// Defaults: a model of about 1.1 B parameters (configs/models/decoder_1b.json), small enough to
// test quickly. One parameter per line reads as a table.
// clang-format off
const Param<std::int64_t> kDecoderLmLayers{{"workload.layers", T::Integer, "", 20, "decoder layers", 1, 1000, {}, "workload.model", kDecoderLmModel}};
const Param<std::int64_t> kDecoderLmDModel{{"workload.d_model", T::Integer, "", 2048, "model width", 1, 1e6, {}, "workload.model", kDecoderLmModel}};
const Param<std::int64_t> kDecoderLmHeads{{"workload.heads", T::Integer, "", 16, "query heads", 1, 1e4, {}, "workload.model", kDecoderLmModel}};
const Param<std::int64_t> kDecoderLmKvHeads{{"workload.kv_heads", T::Integer, "", 0, "key/value heads: 0 as many as workload.heads (multi-head), 1 multi-query, a divisor of the heads grouped-query", 0, 1e4, {}, "workload.model", kDecoderLmModel}};
const Param<std::int64_t> kDecoderLmHeadDim{{"workload.head_dim", T::Integer, "", 0, "width of one head; 0: d_model / heads", 0, 1e5, {}, "workload.model", kDecoderLmModel}};
const Param<std::int64_t> kDecoderLmDFf{{"workload.d_ff", T::Integer, "", 8192, "MLP inner width", 1, 1e7, {}, "workload.model", kDecoderLmModel}};
const Param<std::int64_t> kDecoderLmVocab{{"workload.vocab", T::Integer, "", 32768, "vocabulary (embedding rows, output classes)", 2, 1e8, {}, "workload.model", kDecoderLmModel}};
const Param<std::int64_t> kDecoderLmSeqLen{{"workload.seq_len", T::Integer, "tokens", 2048, "tokens per sequence", 1, 1e6, {}, "workload.model", kDecoderLmModel}};
const Param<std::string> kDecoderLmBlock{{"workload.block", T::String, "", "serial", "serial: MLP after attention, each with its own layer norm; parallel: attention and MLP from one layer norm, summed (PaLM)", -kInf, kInf, {"serial", "parallel"}, "workload.model", kDecoderLmModel}};
const Param<std::string> kDecoderLmMlp{{"workload.mlp", T::String, "", "gelu", "MLP: gelu (two matmuls) or swiglu (gate and up projections, then down: three d_model x d_ff matrices)", -kInf, kInf, {"gelu", "swiglu"}, "workload.model", kDecoderLmModel}};
const Param<std::string> kDecoderLmPositions{{"workload.positions", T::String, "", "learned", "learned (a seq_len x d_model table added to the embeddings) or rotary (queries and keys rotated in every layer)", -kInf, kInf, {"learned", "rotary"}, "workload.model", kDecoderLmModel}};
const Param<bool> kDecoderLmBiases{{"workload.biases", T::Boolean, "", true, "matmuls and layer norms have biases (GPT-3; PaLM has none)", -kInf, kInf, {}, "workload.model", kDecoderLmModel}};
const Param<bool> kDecoderLmTiedEmbeddings{{"workload.tied_embeddings", T::Boolean, "", true, "the output projection reuses the input embedding (false: a separate vocab x d_model matrix)", -kInf, kInf, {}, "workload.model", kDecoderLmModel}};
const Param<bool> kDecoderLmShardActivations{{"parallelism.shard_activations", T::Boolean, "", false, "shard the residual stream, layer norms and residual adds over the model axis too (GSPMD's and PaLM's layouts, Megatron's sequence parallelism): all-gathered before the column-split matmuls, partial sums reduce-scattered instead of all-reduced; 1/model of the activations and their vector work", -kInf, kInf, {}, "workload.model", kDecoderLmModel}};
const Param<std::string> kDecoderLmSequenceAttention{{"parallelism.sequence_attention", T::String, "", "gather", "attention with a sequence axis: gather (all-gather the keys and values of the whole sequence over 'sequence', kept for the backward; their gradients reduce-scattered) or all_to_all (reshard Q, K and V from sequence-split to head-split and the context back with all-to-alls, DeepSpeed-Ulysses; the heads per model core must divide by parallelism.sequence)", -kInf, kInf, {"gather", "all_to_all"}, "workload.model", kDecoderLmModel}};
const Param<std::int64_t> kDecoderLmKvLength{{"workload.kv_length", T::Integer, "tokens", 0, "workload.program = decode: tokens already in each sequence's KV cache, which the step's attention reads with the new token; prefill: a cached prefix the prompt's tokens attend to (a chunk of chunked prefill, a prefix-cache hit)", 0, 1e7, {}, "workload.model", kDecoderLmModel}};
const Param<std::string> kDecoderLmKvCacheDtype{{"workload.kv_cache_dtype", T::String, "", "bf16", "prefill and decode: the KV cache's elements (MaxText quantize_kvcache, vLLM --kv-cache-dtype): bf16, int8 or fp8 (one byte)", -kInf, kInf, {"bf16", "int8", "fp8"}, "workload.model", kDecoderLmModel}};
const Param<std::string> kDecoderLmKvCache{{"workload.kv_cache", T::String, "", "preallocated", "prefill and decode: the KV cache's memory: preallocated (JetStream-MaxText: every sequence holds workload.seq_len tokens) or paged (vLLM: blocks of workload.kv_page_tokens for the tokens a sequence has)", -kInf, kInf, {"preallocated", "paged"}, "workload.model", kDecoderLmModel}};
const Param<std::int64_t> kDecoderLmKvPageTokens{{"workload.kv_page_tokens", T::Integer, "tokens", 16, "workload.kv_cache = paged: tokens per KV cache block (vLLM block_size)", 1, 1e5, {}, "workload.model", kDecoderLmModel}};
// Multi-head latent attention (DeepSeek-V2/V3; MaxText's attention_type, q_lora_rank, ...).
const Param<std::string> kDecoderLmAttentionType{{"workload.attention_type", T::String, "", "global", "global: multi-head, grouped-query or multi-query attention (workload.heads, kv_heads, head_dim); mla: multi-head latent attention (DeepSeek-V2/V3: queries and keys/values from low-rank latents, workload.q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim)", -kInf, kInf, {"global", "mla"}, "workload.model", kDecoderLmModel}};
const Param<std::int64_t> kDecoderLmQLoraRank{{"workload.q_lora_rank", T::Integer, "", 0, "mla: rank of the queries' latent (0: queries straight from the residual stream)", 0, 1e6, {}, "workload.model", kDecoderLmModel}};
const Param<std::int64_t> kDecoderLmKvLoraRank{{"workload.kv_lora_rank", T::Integer, "", 512, "mla: rank of the keys' and values' latent", 1, 1e6, {}, "workload.model", kDecoderLmModel}};
const Param<std::int64_t> kDecoderLmQkNopeHeadDim{{"workload.qk_nope_head_dim", T::Integer, "", 128, "mla: width of a head's query and key without rotary positions", 1, 1e5, {}, "workload.model", kDecoderLmModel}};
const Param<std::int64_t> kDecoderLmQkRopeHeadDim{{"workload.qk_rope_head_dim", T::Integer, "", 64, "mla: width of a head's query part with rotary positions (and of the key part all heads share)", 2, 1e5, {}, "workload.model", kDecoderLmModel}};
const Param<std::int64_t> kDecoderLmVHeadDim{{"workload.v_head_dim", T::Integer, "", 128, "mla: width of a head's value", 1, 1e5, {}, "workload.model", kDecoderLmModel}};
// Mixture of experts (docs/experts.md: the MaxText key each one maps to).
const Param<std::int64_t> kDecoderLmExperts{{"workload.experts", T::Integer, "", 0, "routed experts of each mixture-of-experts layer (0: every MLP dense)", 0, 1e5, {}, "workload.model", kDecoderLmModel}};
const Param<std::int64_t> kDecoderLmExpertsPerToken{{"workload.experts_per_token", T::Integer, "", 1, "routed experts each token goes to (top-k)", 1, 1e5, {}, "workload.model", kDecoderLmModel}};
const Param<std::int64_t> kDecoderLmExpertDFf{{"workload.expert_d_ff", T::Integer, "", 0, "MLP inner width of one expert (routed or shared); 0: workload.d_ff", 0, 1e7, {}, "workload.model", kDecoderLmModel}};
const Param<std::int64_t> kDecoderLmSharedExperts{{"workload.shared_experts", T::Integer, "", 0, "experts every token goes to beside its routed ones (DeepSeek), one MLP of this many times workload.expert_d_ff", 0, 1e4, {}, "workload.model", kDecoderLmModel}};
const Param<std::int64_t> kDecoderLmFirstDenseLayers{{"workload.first_dense_layers", T::Integer, "", 0, "the first layers keep a dense MLP of workload.d_ff (DeepSeek-V3: 3); the others are mixture-of-experts layers", 0, 1000, {}, "workload.model", kDecoderLmModel}};
const Param<std::string> kDecoderLmMoeDispatch{{"workload.moe_dispatch", T::String, "", "dropless", "dropless: tokens sorted by expert and grouped matmuls over ragged groups (MaxText megablox), none dropped; capacity: one-hot dispatch and combine einsums, each expert padded to its capacity, tokens past it dropped (GShard)", -kInf, kInf, {"dropless", "capacity"}, "workload.model", kDecoderLmModel}};
const Param<double> kDecoderLmCapacityFactor{{"workload.capacity_factor", T::Number, "", 1.25, "moe_dispatch = capacity: tokens each expert takes, over tokens x experts_per_token / experts (> 0)", 0, 1e3, {}, "workload.model", kDecoderLmModel}};
const Param<double> kDecoderLmExpertImbalance{{"workload.expert_imbalance", T::Number, "", 1, "routing skew: the busiest expert's tokens over the mean (1: uniform); sets the busiest device's expert work (dropless) or the tokens dropped (capacity)", 1, 1e5, {}, "workload.model", kDecoderLmModel}};
const Param<std::string> kDecoderLmRemat{{"workload.remat", T::String, "", "none", "rematerialisation, MaxText's remat_policy names (docs/llm.md has what each keeps per layer; the rest of the layer is recomputed before its backward): none (keep every activation), full (keep each layer's input), minimal (Q, K, V, out_proj, mlpwi, mlpwo), minimal_with_context (and the context), save_dot_with_context_except_mlp, save_dot_except_mlpwi, save_dot_except_mlp, save_qkv_proj, save_out_proj, qkv_proj_offloaded and minimal_offloaded (as save_qkv_proj and minimal, the saved tensors in host memory over PCIe), save_dot_except_logits_ffn1, save_dot_except_logits (PAX's and the MLPerf runs'); attention (tpusim's earlier selective policy: recompute only the scores, softmax and context, Korthikanti et al. 2022)", -kInf, kInf, {"none", "full", "minimal", "minimal_with_context", "save_dot_with_context_except_mlp", "save_dot_except_mlpwi", "save_dot_except_mlp", "save_qkv_proj", "save_out_proj", "qkv_proj_offloaded", "minimal_offloaded", "save_dot_except_logits_ffn1", "save_dot_except_logits", "attention"}, "workload.model", kDecoderLmModel}};
const Param<std::string> kDecoderLmAttention{{"workload.attention", T::String, "", "dot_product", "attention kernel, MaxText's key: dot_product (XLA's einsums, the s x s scores through HBM) or flash (splash attention: query and key/value blocks in VMEM, no s x s tensor in HBM, causal blocks above the diagonal skipped, the scores recomputed blockwise in the backward pass)", -kInf, kInf, {"dot_product", "flash"}, "workload.model", kDecoderLmModel}};
const Param<std::int64_t> kDecoderLmFlashBlock{{"workload.flash_block", T::Integer, "tokens", 512, "flash attention's query and key/value block (MaxText's sa_block_q and sa_block_kv, 512 by default); a multiple of 128", 128, 65536, {}, "workload.model", kDecoderLmModel}};
const Param<std::string> kDecoderLmQuantization{{"workload.quantization", T::String, "", "none", "quantized training as MaxText's quantization key (AQT): none (bf16 matmuls), int8 or fp8: both operands of every layer matmul (Q/K/V, attention output, MLP) quantized with per-channel scales in the forward and both backward matmuls, run at hardware.mxu.int8_rate or fp8_rate, with the quantize and rescale vector work; their weights stored and FSDP-gathered in 8 bits; the attention einsums and the logits stay bf16. Prefill and decode (workload.program): int8 or fp8 weights (JetStream-MaxText quantization=int8): stored and read in 8 bits, the activations quantized each step, the products at that rate and rescaled", -kInf, kInf, {"none", "int8", "fp8"}, "workload.model", kDecoderLmModel}};
// clang-format on

namespace {

// workload.quantization: the chip must have a rate for the dtype.
DType read_quantization(const Config& cfg, ProblemList& problems) {
  const std::string q = kDecoderLmQuantization(cfg);
  if (q == "none") return DType::BF16;
  const auto& rate_param = q == "int8" ? kHwMxuInt8Rate : kHwMxuFp8Rate;
  const std::string& rate = rate_param.path();
  if (rate_param(cfg) <= 0)
    problems.add(kDecoderLmQuantization.path(),
                 q + " on " + kHwName(cfg) + ", whose " + rate + " is 0 (no published " + q +
                     " MXU rate); allowed: none, or a chip with " + rate + " above 0");
  return q == "int8" ? DType::I8 : DType::F8;
}

// All-to-all resharding splits each model core's heads (query and key/value) over "sequence".
void check_all_to_all(const DecoderDims& d, ProblemList& problems) {
  if (!d.sequence_all_to_all || d.heads % d.kv_heads != 0) return;
  if (!d.kv_split_by_model())
    return problems.add(
        "parallelism.sequence_attention",
        "all_to_all with " + std::to_string(d.kv_heads) +
            " key/value heads that parallelism.model = " + std::to_string(d.model_degree) +
            " does not divide: every model core holds them whole, so they "
            "cannot be resharded by heads; allowed: gather");
  const std::int64_t q = d.heads / d.model_degree, kv = d.split_kv_heads() / d.model_degree;
  for (auto [n, what] : {std::pair{q, "query"}, std::pair{kv, "key/value"}})
    if (n % d.sequence_degree != 0)
      return problems.add("parallelism.sequence",
                          std::to_string(d.sequence_degree) + " does not divide the " +
                              std::to_string(n) + " " + what +
                              " heads of a model core, which parallelism.sequence_attention = "
                              "all_to_all splits over it; allowed: a divisor of " +
                              std::to_string(n) + ", or parallelism.sequence_attention = gather");
}

// The layouts the latent attention and the experts are built for: data, fsdp, model (and expert).
void check_mesh_for(const char* what, const DecoderDims& d, ProblemList& problems) {
  auto refuse = [&](const char* path, const std::string& value, const char* allowed) {
    problems.add(path, value + " with " + what + " (not modelled together); allowed: " + allowed);
  };
  if (d.model2_degree > 1) refuse("parallelism.model2", std::to_string(d.model2_degree), "1");
  if (d.sequence_degree > 1) refuse("parallelism.sequence", std::to_string(d.sequence_degree), "1");
  if (d.shard_activations) refuse("parallelism.shard_activations", "true", "false");
}

void read_mla(const Config& cfg, DecoderDims& d, ProblemList& problems) {
  d.mla = kDecoderLmAttentionType(cfg) == "mla";
  if (!d.mla) return;
  d.q_lora_rank = kDecoderLmQLoraRank(cfg);
  d.kv_lora_rank = kDecoderLmKvLoraRank(cfg);
  d.qk_nope_head_dim = kDecoderLmQkNopeHeadDim(cfg);
  d.qk_rope_head_dim = kDecoderLmQkRopeHeadDim(cfg);
  d.v_head_dim = kDecoderLmVHeadDim(cfg);
  const char* what = "workload.attention_type = mla";
  check_mesh_for(what, d, problems);
  for (const char* path : {"workload.kv_heads", "workload.head_dim"})
    if (cfg.integer(path) != 0)
      problems.add(path, std::to_string(cfg.integer(path)) + " with " + what +
                             " (every head's key and value come from the latent; widths from "
                             "qk_nope_head_dim, qk_rope_head_dim, v_head_dim); allowed: 0");
  if (d.flash)
    problems.add(kDecoderLmAttention.path(),
                 std::string("flash with ") + what +
                     ": the splash kernel is built for global attention only (the latent "
                     "attention's scores go through HBM); allowed: dot_product");
  if (!d.rotary)
    problems.add("workload.positions", std::string("learned with ") + what +
                                           ", whose qk_rope_head_dim part is rotated; allowed: "
                                           "rotary");
  if (d.qk_rope_head_dim % 2 != 0)
    problems.add(kDecoderLmQkRopeHeadDim.path(),
                 std::to_string(d.qk_rope_head_dim) +
                     ": rotary positions rotate pairs of features; allowed: an even width");
}

void read_moe(const Config& cfg, DecoderDims& d, ProblemList& problems) {
  d.experts = kDecoderLmExperts(cfg);
  const std::int64_t dense = kDecoderLmFirstDenseLayers(cfg), shared = kDecoderLmSharedExperts(cfg);
  if (d.experts == 0) {
    for (auto [path, v] : {std::pair{"workload.first_dense_layers", dense},
                           std::pair{"workload.shared_experts", shared}})
      if (v != 0)
        problems.add(path, std::to_string(v) +
                               " with workload.experts = 0 (every MLP is dense); allowed: 0, or "
                               "set workload.experts");
    return;
  }
  d.experts_per_token = kDecoderLmExpertsPerToken(cfg);
  d.expert_d_ff = kDecoderLmExpertDFf(cfg) > 0 ? kDecoderLmExpertDFf(cfg) : d.d_ff;
  d.shared_experts = shared;
  d.expert_degree = kParallelismExpert(cfg);
  d.capacity_dispatch = kDecoderLmMoeDispatch(cfg) == "capacity";
  d.capacity_factor = kDecoderLmCapacityFactor(cfg);
  d.expert_imbalance = kDecoderLmExpertImbalance(cfg);
  check_mesh_for("workload.experts > 0", d, problems);
  const std::string e = std::to_string(d.experts);
  if (d.experts_per_token > d.experts)
    problems.add(kDecoderLmExpertsPerToken.path(),
                 std::to_string(d.experts_per_token) + " is more than the " + e +
                     " experts of workload.experts; allowed: 1 to " + e);
  else if (d.expert_imbalance > static_cast<double>(d.experts) / d.experts_per_token)
    problems.add(kDecoderLmExpertImbalance.path(),
                 std::to_string(d.expert_imbalance) +
                     ": the busiest expert would get more than every token (each token picks "
                     "an expert once); allowed: 1 to experts / experts_per_token = " +
                     std::to_string(static_cast<double>(d.experts) / d.experts_per_token));
  if (!(d.capacity_factor > 0))
    problems.add(kDecoderLmCapacityFactor.path(),
                 std::to_string(d.capacity_factor) + "; allowed: a number above 0");
  if (dense > kDecoderLmLayers(cfg))
    problems.add(kDecoderLmFirstDenseLayers.path(),
                 std::to_string(dense) + " is more than the " +
                     std::to_string(kDecoderLmLayers(cfg)) +
                     " layers of workload.layers; allowed: 0 to workload.layers");
}

DecoderDims read_dims(const Config& cfg, std::int64_t batch) {
  DecoderDims d;
  d.batch = batch;
  d.seq = kDecoderLmSeqLen(cfg);
  d.d_model = kDecoderLmDModel(cfg);
  d.heads = kDecoderLmHeads(cfg);
  d.kv_heads = kDecoderLmKvHeads(cfg);
  if (d.kv_heads == 0) d.kv_heads = d.heads;
  d.head_dim = kDecoderLmHeadDim(cfg);
  d.d_ff = kDecoderLmDFf(cfg);
  d.vocab = kDecoderLmVocab(cfg);
  d.parallel = kDecoderLmBlock(cfg) == "parallel";
  d.swiglu = kDecoderLmMlp(cfg) == "swiglu";
  d.rotary = kDecoderLmPositions(cfg) == "rotary";
  d.biases = kDecoderLmBiases(cfg);
  d.model_degree = kParallelismModel(cfg);
  d.shard_activations = kDecoderLmShardActivations(cfg);
  d.model2_degree = kParallelismModel2(cfg);
  d.sequence_degree = kParallelismSequence(cfg);
  d.sequence_all_to_all = d.sequence_degree > 1 && kDecoderLmSequenceAttention(cfg) == "all_to_all";
  ProblemList problems;
  d.quantization = read_quantization(cfg, problems);
  d.flash = kDecoderLmAttention(cfg) == "flash";
  d.flash_block = kDecoderLmFlashBlock(cfg);
  if (d.flash_block % 128 != 0)
    problems.add(kDecoderLmFlashBlock.path(), std::to_string(d.flash_block) +
                                                  " tokens; allowed: a multiple of 128 (the "
                                                  "MXU's and VMEM's tiles)");
  if (d.model2_degree > 1 && !d.shard_activations)
    problems.add("parallelism.model2",
                 std::to_string(d.model2_degree) +
                     " with parallelism.shard_activations = false: 2D weight-stationary sharding "
                     "moves the activations between the two model axes; allowed: 1, or set "
                     "parallelism.shard_activations=true");
  if (d.model2_degree > 1 && batch % d.model2_degree != 0)
    problems.add("parallelism.model2",
                 std::to_string(d.model2_degree) + " does not divide the " + std::to_string(batch) +
                     " sequences of a replica's microbatch (workload.global_batch / data "
                     "replicas / workload.microbatches), which the attention splits over it; "
                     "allowed: a divisor of " +
                     std::to_string(batch));
  if (d.head_dim == 0 && d.d_model % d.heads != 0)
    problems.add("workload.heads",
                 std::to_string(d.heads) +
                     " heads do not divide workload.d_model = " + std::to_string(d.d_model) +
                     "; allowed: a divisor of it, or set workload.head_dim");
  if (d.head_dim == 0) d.head_dim = d.d_model / d.heads;
  if (d.kv_heads > d.heads || d.heads % d.kv_heads != 0)
    problems.add("workload.kv_heads",
                 std::to_string(d.kv_heads) + " does not divide workload.heads = " +
                     std::to_string(d.heads) + "; allowed: 0, 1 or a divisor of the heads");
  if (kRematerialize(cfg))
    problems.add(
        kRematerialize.path(),
        "true: decoder_lm takes its policy from workload.remat (none, full, minimal, ...); "
        "allowed: false");
  read_mla(cfg, d, problems);
  read_moe(cfg, d, problems);
  // Rotary positions rotate pairs of a head's features: an odd head width leaves one unpaired.
  if (d.rotary && !d.mla && d.head_dim % 2 != 0)
    problems.add(kDecoderLmHeadDim(cfg) > 0 ? kDecoderLmHeadDim.path() : kDecoderLmHeads.path(),
                 "a head width of " + std::to_string(d.head_dim) +
                     " with workload.positions = rotary, which rotates pairs of features; "
                     "allowed: an even head width");
  check_all_to_all(d, problems);
  problems.throw_if_any();
  return d;
}

// workload.program = prefill or decode. Prefill: the prompt's tokens after kv_length cached ones
// up to workload.seq_len; decode: one token after kv_length, within the model length seq_len.
void read_serving_dims(const Config& cfg, bool decode, DecoderDims& d) {
  d.serving = true;
  d.max_len = d.seq;
  d.kv_len = kDecoderLmKvLength(cfg);
  d.kv_bytes = kDecoderLmKvCacheDtype(cfg) == "bf16" ? 2 : 1;
  ProblemList problems;
  if (d.sequence_degree > 1)
    problems.add("parallelism.sequence", std::to_string(d.sequence_degree) +
                                             " with workload.program = prefill or decode: "
                                             "sequence parallelism of serving steps is not "
                                             "modelled; allowed: 1");
  if (d.flash)
    problems.add(kDecoderLmAttention.path(),
                 "flash with workload.program = prefill or decode: a serving step's flash "
                 "attention is not modelled; allowed: dot_product");
  if (d.kv_len >= d.max_len)
    problems.add(kDecoderLmKvLength.path(),
                 std::to_string(d.kv_len) + " cached tokens leave no room for " +
                     (decode ? "the new token" : "a prompt token") +
                     " within workload.seq_len = " + std::to_string(d.max_len) +
                     "; allowed: at most " + std::to_string(d.max_len - 1));
  problems.throw_if_any();
  d.seq = decode ? 1 : d.max_len - d.kv_len;
}

// Per core, the KV cache of the step's sequences: preallocated to the model length, or the
// pages their tokens fill; divided over the model axis where it splits the key/value heads and
// over model2 by sequences. Latent attention caches each token's latent and shared rotary key,
// whole on every model core.
double kv_cache_bytes_per_core(const Config& cfg, const DecoderDims& d, std::int64_t layers) {
  std::int64_t tokens = d.max_len;
  if (kDecoderLmKvCache(cfg) == "paged") {
    const std::int64_t page = kDecoderLmKvPageTokens(cfg);
    tokens = (d.kv_len + d.seq + page - 1) / page * page;
  }
  const double per_token_layer = d.mla ? static_cast<double>(d.kv_lora_rank + d.qk_rope_head_dim)
                                       : 2.0 * d.split_kv_heads() * d.head_dim;
  double bytes = static_cast<double>(d.batch) * tokens * layers * per_token_layer * d.kv_bytes;
  if (!d.mla && d.kv_split_by_model()) bytes /= d.model_degree;
  return bytes / d.model2_degree;
}

// MaxText's remat policies by the checkpoint names each saves (decoders.py get_remat_policy;
// PAX's checkpoint_policy.py for the save_dot_except_logits pair); "qkv" stands for the
// projections' names (qkv_proj, or query_proj and kv_proj). Every other op of a layer is
// recomputed before its backward; `offload` puts the saved tensors in host memory.
struct NamedRemat {
  const char* name;
  std::vector<std::string> saved;
  bool offload = false;
};
const std::vector<NamedRemat>& named_remats() {
  static const std::vector<NamedRemat> k{
      {"minimal", {"qkv", "out_proj", "mlpwi", "mlpwo"}},
      {"minimal_with_context", {"qkv", "context", "out_proj", "mlpwi", "mlpwo"}},
      {"save_dot_with_context_except_mlp", {"qkv", "context", "out_proj"}},
      {"save_dot_except_mlpwi", {"qkv", "out_proj", "mlpwo"}},
      {"save_dot_except_mlp", {"qkv", "out_proj"}},
      {"save_qkv_proj", {"qkv"}},
      {"save_out_proj", {"out_proj"}},
      {"qkv_proj_offloaded", {"qkv"}, true},
      {"minimal_offloaded", {"qkv", "out_proj", "mlpwi", "mlpwo"}, true},
      {"save_dot_except_logits_ffn1", {"qkv", "context", "out_proj", "mlpwo"}},
      {"save_dot_except_logits", {"qkv", "context", "out_proj", "mlpwi", "mlpwo"}},
  };
  return k;
}

bool saves(const NamedRemat& r, const std::string& checkpoint) {
  if (checkpoint.empty()) return false;
  const bool qkv =
      checkpoint == "qkv_proj" || checkpoint == "query_proj" || checkpoint == "kv_proj";
  for (const auto& s : r.saved)
    if (s == checkpoint || (qkv && s == "qkv")) return true;
  return false;
}

// The policy of workload.remat; a MaxText policy marks every layer op of `g` first.
RematPolicy remat_policy(const Config& cfg, OpGraph& g) {
  const std::string r = kDecoderLmRemat(cfg);
  if (r == "full") return RematPolicy::Full;
  if (r == "attention") return RematPolicy::Attention;
  for (const NamedRemat& n : named_remats()) {
    if (r != n.name) continue;
    for (int v = 0; v < g.size(); ++v) {
      OpNode& op = g.node(v);
      if (op.layer < 0) continue;
      op.remat_action = !saves(n, op.checkpoint_name) ? RematAction::Recompute
                        : n.offload                   ? RematAction::Offload
                                                      : RematAction::Keep;
    }
    return RematPolicy::Named;
  }
  return RematPolicy::None;
}

class DecoderLm final : public ModelBuilder {
 public:
  bool supports_model_parallel() const override { return true; }

  OpGraph build(const Config& cfg, std::int64_t batch) const override {
    OpGraph g = forward(cfg, read_dims(cfg, batch));
    derive_training_graph(g, OptimizerKind::Adam, remat_policy(cfg, g));
    return g;
  }

  /// The evaluation step (MLPerf GPT-3's eval pass): the forward over full sequences and the
  /// loss, no backward and no optimizer.
  std::optional<OpGraph> build_eval(const Config& cfg, std::int64_t batch) const override {
    return forward(cfg, read_dims(cfg, batch));
  }

  /// MLPerf GPT-3's metric: the log perplexity (mean loss over the eval set), summed on the
  /// device with the loss; the host reads one number, so no host operations.
  void eval_metric(MetricBuilder& m, const Config& cfg, double examples) const override {
    m.metric().name = "log_perplexity";
  }

  /// Prefill: the prompts' forward writing their KV cache, the first token sampled. Decode:
  /// one token for every sequence, reading the weights once and each sequence's cache once.
  std::optional<OpGraph> build_serving(const Config& cfg, std::int64_t batch,
                                       bool decode) const override {
    DecoderDims d = read_dims(cfg, batch);
    read_serving_dims(cfg, decode, d);
    OpGraph g = forward(cfg, d);
    g.serving = true;
    // Program dtypes have no one-byte type: the buffer's name says the cache's dtype.
    g.resident_per_core.push_back(
        {"KV cache (" + kDecoderLmKvCacheDtype(cfg) + ", " + kDecoderLmKvCache(cfg) + ")",
         MemoryClass::KvCache, DType::BF16,
         kv_cache_bytes_per_core(cfg, d, kDecoderLmLayers(cfg))});
    return g;
  }

 private:
  static OpGraph forward(const Config& cfg, const DecoderDims& d) {
    OpGraph g;
    g.model = kDecoderLmModel;
    g.replica_batch = d.batch;
    g.require_divisible({"model", "workload.heads", d.heads, "attention heads"});
    g.require_divisible({"model", "workload.d_ff", d.d_ff, "MLP width"});
    // FSDP shards every weight matrix along its d_model side.
    g.require_divisible(
        {"fsdp", "workload.d_model", d.d_model, "model width (FSDP weight shards)"});
    g.require_divisible({"model2", "workload.d_model", d.d_model, "model width (2D sharding)"});
    g.require_divisible({"sequence", "workload.seq_len", d.seq, "tokens per sequence"});
    if (d.experts > 0)
      g.require_divisible({"model",
                           kDecoderLmExpertDFf(cfg) > 0 ? "workload.expert_d_ff" : "workload.d_ff",
                           d.expert_d_ff, "expert MLP width"});
    const DecoderEmbeddings e = add_decoder_embeddings(g, d);
    int x = e.out;
    for (std::int64_t l = 0; l < kDecoderLmLayers(cfg); ++l) {
      g.begin_layer();
      const bool moe = d.experts > 0 && l >= kDecoderLmFirstDenseLayers(cfg);
      x = add_decoder_layer(g, "decoder." + std::to_string(l) + ".", x, d, moe);
      g.end_layer();
    }
    const int tied = kDecoderLmTiedEmbeddings(cfg) ? e.lookup : -1;
    if (d.serving)
      add_decoder_sampler(g, d, x, tied);
    else
      add_decoder_head(g, d, x, tied);
    // Infeed: the token ids and (training) the targets, i32.
    g.infeed_bytes_per_example =
        static_cast<double>((d.serving ? 1 : 2) * d.seq) * dtype_bytes(DType::I32);
    g.infeed_dtype = DType::I32;
    g.tokens_per_example = d.seq;
    return g;
  }
};

const ModelRegistrar kDecoderLmRegister{
    {kDecoderLmModel, 256, "sequences per training step over all replicas"},
    [] { return std::make_unique<DecoderLm>(); }};

}  // namespace
}  // namespace tpusim
