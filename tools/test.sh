#!/usr/bin/env bash
# The README's test command (and CI's). A sequence of steps; each must pass, and the first that
# fails stops the run (exit status non-zero). Add a step as one more block below.
#   1. install what is missing (tools/install-deps.sh)
#   2. Release build (gcc) of the binary and the Python module, and the tests that need the
#      optimised binary users run: the regression goldens (the sweeps' and the Programs'),
#      pytest, Slurm, the parameter-effect, Multipod-scale and input-limit command tests, the
#      tree's structure
#   3. clang-format of every tracked C++ file
#   4. one clang build with AddressSanitizer + UndefinedBehaviorSanitizer that also holds the
#      libFuzzer targets: every test but the goldens, the parameter-effect and the Multipod-scale
#      tests (those two are not built there; the library
#      tests, tests/unit, sim and plan, and the command tests run here: once, under the
#      sanitizers), and in the same ctest run every fuzz target for TPUSIM_FUZZ_SECONDS (default
#      10) seconds from its corpus in tests/fuzz/corpus/ (ctest tests "fuzz: TARGET")
# Both builds use precompiled headers and unity batches, with ccache off (see below).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
# Both builds are clean on CI: precompiled headers and unity batches, not ccache. Where ccache is
# installed, CMakeLists.txt would route the compiles through it and turn both off, and a cold
# cache then costs the whole difference (CI took 1327 s so, against 814 to 886 s here with
# ccache off). So the test command turns ccache off and asks for both explicitly.
export CCACHE_DISABLE=1
clean_build="-DTPUSIM_PCH=ON -DTPUSIM_UNITY=ON"
tools/install-deps.sh
step() { echo "== $1 ($(date -u +%H:%M:%S), $SECONDS s so far)"; }

step "Release build"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTPUSIM_LIBRARY_TESTS=OFF -DTPUSIM_CLI_TESTS=OFF \
  $clean_build >/dev/null
cmake --build build -j"$jobs"
log=$(mktemp)
san_log=$(mktemp)
san_build_log=$(mktemp)

step "ASan + UBSan build (clang, with the fuzz targets) started, beside the Release tests"
# The Release tests leave cores idle (the Slurm test waits for its daemons, the last tests run
# alone): the sanitizer build fills them. Its output goes to a file, shown if it fails.
# -O1 without debug information: the build costs far less than -O2 -g, and 9 % less than with
# -gline-tables-only. A sanitizer report names the functions of its stack, not their lines; for
# file:line, rebuild build-san with -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only".
# One ctest process per test file, not per case, except the SystemC tests (TPUSIM_CTEST_PER_FILE,
# tests/CMakeLists.txt): an instrumented process costs about 0.2 s of CPU to start and exit.
# In its own process group (setsid), so that a failing step stops the whole build with it.
setsid bash -c 'CC=clang-14 CXX=clang++-14 cmake -S . -B build-san -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1" \
    -DTPUSIM_SANITIZE=ON -DTPUSIM_FUZZ=ON -DTPUSIM_LIBRARY_TESTS=ON -DTPUSIM_CLI_TESTS=ON \
    -DTPUSIM_CTEST_PER_FILE=ON \
    $2 >/dev/null && cmake --build build-san -j"$1"' san-build "$jobs" "$clean_build" \
  >"$san_build_log" 2>&1 &
san_build=$!
trap 'kill -- "-$san_build" 2>/dev/null || true' EXIT

step "Release tests"
(cd build && ctest --output-on-failure -j"$jobs" | tee "$log")

step "Python module (pytest) and Slurm job-array sweep: their results in the Release run"
# Both are ctest tests (labels python and slurm); the Slurm one skips, saying why, where munged
# or the Slurm daemons cannot start. Listed here so that a skip is seen.
grep -E "(python|slurm): " "$log" || echo "python/slurm tests not registered (TPUSIM_PYTHON=OFF?)"

step "clang-format"
files=$(git ls-files '*.cpp' '*.hpp')
clang-format --dry-run -Werror $files

step "ASan + UBSan build: the rest of it"
if ! wait "$san_build"; then
  tail -n 100 "$san_build_log"
  echo "tools/test.sh: the ASan + UBSan build failed" >&2
  exit 1
fi
trap - EXIT
tail -n 3 "$san_build_log"

step "ASan + UBSan tests and fuzz targets, ${TPUSIM_FUZZ_SECONDS:-10} s each"
# Goldens check outputs (the Release run has them), not memory. The fuzz targets are ctest tests
# of this build (tests/fuzz/CMakeLists.txt), run beside the others, longest first (COST).
(cd build-san && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
   ctest --output-on-failure -j"$jobs" -E "^golden:" | tee "$san_log")
# ctest keeps a passing test's output to itself: each fuzz target's inputs run, from its log.
for f in build-san/fuzz/fuzz_*.log; do
  case $f in *.regress.log | *.merge.log | *"*"*) continue ;; esac
  echo "$(basename "$f" .log): $(grep -o 'executed_units: *[0-9]*' "$f" | grep -o '[0-9]*$') inputs run"
done

step "done"
# The closing lines CI reads: the totals of the Release run and of the sanitizer run.
echo "Release: $(grep -E "tests passed|tests failed" "$log" | tail -n 1)"
echo "ASan + UBSan: $(grep -E "tests passed|tests failed" "$san_log" | tail -n 1)"
rm -f "$log" "$san_log" "$san_build_log"
