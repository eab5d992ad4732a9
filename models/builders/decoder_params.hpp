#pragma once
// The decoder language model's parameters that readers outside its builder take (tpusim serve:
// the model length, the KV cache's layout, the weights' quantization; plan: the remat policy),
// declared in decoder_lm.cpp.
#include <cstdint>
#include <string>

#include "core/param_handle.hpp"

namespace tpusim {
extern const Param<std::int64_t> kDecoderLmSeqLen;        ///< workload.seq_len
extern const Param<std::string> kDecoderLmKvCache;        ///< workload.kv_cache
extern const Param<std::int64_t> kDecoderLmKvPageTokens;  ///< workload.kv_page_tokens
extern const Param<std::string> kDecoderLmKvCacheDtype;   ///< workload.kv_cache_dtype
extern const Param<std::string> kDecoderLmQuantization;   ///< workload.quantization
/// workload.remat: its presence marks a language model; plan searches its choices.
extern const Param<std::string> kDecoderLmRemat;
}  // namespace tpusim
