#!/usr/bin/env bash
# Runs every libFuzzer target of a sanitizer build (TPUSIM_SANITIZE=ON, TPUSIM_FUZZ=ON; tools/test.sh
# makes one in build-san/) for SECONDS each, two at a time, seeded from the repository's own files
# (seeds() below: example traces, studies, sweeps, topologies, and tests/fuzz/corpus/NAME/ for the
# targets whose inputs no shipped file is: --set values, Chakra rank files) and from the grown
# corpus tests/fuzz/corpus/grown/NAME.tar.gz (inputs earlier fuzzing found that reach code the
# seeds do not; unpacked into BUILD/fuzz/corpus/NAME/), so that a short run starts where a long
# one ended.
# First every saved input of tests/fuzz/regressions/NAME/ is replayed: an input that once crashed
# a target stays a test. A crash lands in BUILD/fuzz/artifacts/; copy it into the regressions.
# Usage: tools/fuzz.sh [BUILD_DIR] [SECONDS] [TARGET...]  (defaults: build-san 15, every target;
#   the sanitizer build's ctest runs each target so: its test "fuzz: TARGET", tests/fuzz)
#        tools/fuzz.sh --grow [BUILD_DIR] [SECONDS]   (defaults: build-san 120) fuzzes each target
#   for SECONDS from the seeds and its grown corpus, then writes tests/fuzz/corpus/grown/NAME.tar.gz
#   anew: the smallest set of all those inputs that covers what they cover (libFuzzer's
#   -set_cover_merge), less the seeds the repository has anyway.
set -euo pipefail
cd "$(dirname "$0")/.."
grow=0
if [ "${1:-}" = "--grow" ]; then
  grow=1
  shift
fi
build=${1:-build-san}
seconds=${2:-$([ $grow -eq 1 ] && echo 120 || echo 15)}
shift $(($# < 2 ? $# : 2))
targets=${*:-$(cd "$build/bin" && ls fuzz_* 2>/dev/null || true)}
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

# The grown corpus as a reproducible archive: sorted names, no dates or owners.
pack() {  # directory archive
  tar -C "$1" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - . | gzip -9n >"$2"
}

run() {  # target
  local t=$1 name=${1#fuzz_}
  local corpus=$build/fuzz/corpus/$name regress=tests/fuzz/regressions/$name
  local grown=tests/fuzz/corpus/grown/$name.tar.gz
  mkdir -p "$corpus"
  [ -f "$grown" ] && tar -xzf "$grown" -C "$corpus"
  if [ -d "$regress" ] && [ -n "$(ls -A "$regress")" ]; then
    "$build/bin/$t" -runs=0 "$regress"/* >"$build/fuzz/$t.regress.log" 2>&1 ||
      { cat "$build/fuzz/$t.regress.log"; echo "fuzz.sh: $t fails on a saved regression input" >&2; return 1; }
  fi
  # -rss_limit_mb: an input that needs more memory than this is a finding (unbounded allocation).
  "$build/bin/$t" "$corpus" $(seeds "$name") -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$build/fuzz/artifacts/$t-" -print_final_stats=1 \
    >"$build/fuzz/$t.log" 2>&1 || { tail -n 60 "$build/fuzz/$t.log"; echo "fuzz.sh: $t found a failure" >&2; return 1; }
  local cov
  cov=$(grep -E '^#[0-9]+.*DONE' "$build/fuzz/$t.log" | grep -o 'cov: [0-9]*' || true)
  echo "$t: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/fuzz/$t.log" | grep -o '[0-9]*$') runs in ${seconds} s, ${cov:-cov: ?} edges, no failure"
  if [ $grow -eq 1 ]; then
    local merged=$build/fuzz/merged/$name
    rm -rf "$merged"
    mkdir -p "$merged" tests/fuzz/corpus/grown
    "$build/bin/$t" -set_cover_merge=1 "$merged" $(seeds "$name") "$corpus" \
      >"$build/fuzz/$t.merge.log" 2>&1 || { tail -n 20 "$build/fuzz/$t.merge.log"; return 1; }
    # The merged set is named by content (SHA-1): drop the seeds, the repository has them.
    local d f
    for d in $(seeds "$name"); do
      while IFS= read -r f; do rm -f "$merged/$(sha1sum "$f" | cut -d' ' -f1)"; done < <(find "$d" -type f)
    done
    pack "$merged" "$grown"
    echo "$t: $grown holds $(ls "$merged" | wc -l) inputs ($(du -k "$grown" | cut -f1) KiB)"
  fi
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
