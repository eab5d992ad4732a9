#pragma once
// The "serving" object of a study (tpusim serve, tools/serve/serving_config.hpp reads it),
// declared here, in the base layer, so that every reader of a study (the libraries, the Python
// module, the tests) knows its keys. docs/serving.md.
#include <cstdint>
#include <string>

#include "core/param_handle.hpp"

namespace tpusim {
extern const Param<std::int64_t> kServeCount;
extern const Param<double> kServeInputTokens;
extern const Param<std::string> kServeInputDist;
extern const Param<double> kServeInputSpread;
extern const Param<double> kServeOutputTokens;
extern const Param<std::string> kServeOutputDist;
extern const Param<double> kServeOutputSpread;
extern const Param<std::int64_t> kServeSeed;
extern const Param<std::string> kServeArrival;
extern const Param<double> kServeRate;
extern const Param<std::string> kServeTrace;
extern const Param<std::int64_t> kServeMaxSeqs;
extern const Param<std::int64_t> kServeMaxBatched;
extern const Param<std::int64_t> kServeMaxModelLen;
extern const Param<std::string> kServeScheduler;
extern const Param<std::string> kServeKvTransfer;
extern const Param<double> kServeTtftLimit;
extern const Param<double> kServeTpotLimit;
extern const Param<std::int64_t> kServePrefixTokens;
extern const Param<std::int64_t> kServePrefixes;
extern const Param<bool> kServePrefixCaching;
extern const Param<std::int64_t> kServeKvCacheBlocks;
}  // namespace tpusim
