#!/usr/bin/env bash
# Runs every libFuzzer target of a sanitizer build (TPUSIM_SANITIZE=ON, TPUSIM_FUZZ=ON; tools/test.sh
# makes one in build-san/) for SECONDS each, two at a time, seeded from the repository's own files
# (seeds() below: example traces, studies, sweeps, topologies, and tests/fuzz/corpus/NAME/ for the
# targets whose inputs no shipped file is: --set values, Chakra rank files).
# First every saved input of tests/fuzz/regressions/NAME/ is replayed: an input that once crashed
# a target stays a test. A crash lands in BUILD/fuzz/artifacts/; copy it into the regressions.
# Usage: tools/fuzz.sh [BUILD_DIR] [SECONDS]      (defaults: build-san 30)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-san}
seconds=${2:-30}
targets=$(cd "$build/bin" && ls fuzz_* 2>/dev/null || true)
if [ -z "$targets" ]; then
  echo "fuzz.sh: no fuzz_* targets in $build/bin (configure with -DTPUSIM_SANITIZE=ON -DTPUSIM_FUZZ=ON)" >&2
  exit 2
fi
mkdir -p "$build/fuzz/artifacts"

seeds() {  # target name -> seed directories
  case $1 in
    trace_reader | profile_import) echo traces/examples ;;
    study_config) echo configs/studies configs/topologies ;;
    sweep_spec) echo configs/studies/sweeps ;;
    topology_mesh) echo configs/topologies tests/data ;;
    set_value) echo tests/fuzz/corpus/set_value ;;
    chakra_reader) echo tests/fuzz/corpus/chakra_reader ;;
    *) echo tests/data ;;
  esac
}

run() {  # target
  local t=$1 name=${1#fuzz_}
  local corpus=$build/fuzz/corpus/$name regress=tests/fuzz/regressions/$name
  mkdir -p "$corpus"
  if [ -d "$regress" ] && [ -n "$(ls -A "$regress")" ]; then
    "$build/bin/$t" -runs=0 "$regress"/* >"$build/fuzz/$t.regress.log" 2>&1 ||
      { cat "$build/fuzz/$t.regress.log"; echo "fuzz.sh: $t fails on a saved regression input" >&2; return 1; }
  fi
  # -rss_limit_mb: an input that needs more memory than this is a finding (unbounded allocation).
  "$build/bin/$t" "$corpus" $(seeds "$name") -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$build/fuzz/artifacts/$t-" -print_final_stats=1 \
    >"$build/fuzz/$t.log" 2>&1 || { tail -n 60 "$build/fuzz/$t.log"; echo "fuzz.sh: $t found a failure" >&2; return 1; }
  echo "$t: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/fuzz/$t.log" | grep -o '[0-9]*$') runs in ${seconds} s, no failure"
}

status=0
pids=()
for t in $targets; do
  run "$t" &
  pids+=($!)
  if [ ${#pids[@]} -ge 2 ]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
