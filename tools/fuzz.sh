#!/usr/bin/env bash
# Builds the libFuzzer targets (separate clang build in build-fuzz/) and runs each for
# SECONDS_PER_TARGET seconds (default 300), one at a time, seeded from the example files.
# Usage: tools/fuzz.sh [SECONDS_PER_TARGET]   Crashes land in build-fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-300}
CC=${CC:-clang-14} CXX=${CXX:-clang++-14} cmake -S . -B build-fuzz -DTPUSIM_FUZZ=ON -DTPUSIM_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j2 --target fuzz_trace_reader fuzz_profile_import

run() {  # target, seed files...
  local target=$1
  shift
  local corpus=build-fuzz/corpus/$target
  mkdir -p "$corpus" build-fuzz/artifacts
  cp "$@" "$corpus/"
  build-fuzz/bin/$target "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix=build-fuzz/artifacts/$target- -print_final_stats=1
}
mkdir -p build-fuzz/seeds
gzip -nc traces/examples/small_data_model.trace.json >build-fuzz/seeds/small_data_model.trace.json.gz
run fuzz_trace_reader traces/examples/*.trace.json build-fuzz/seeds/small_data_model.trace.json.gz
run fuzz_profile_import traces/examples/profile_*.json traces/examples/profile_tpu_v3_8.json.gz
