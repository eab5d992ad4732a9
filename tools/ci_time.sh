#!/usr/bin/env bash
# Times the test command as CI runs it: a clean clone of HEAD in a temporary folder, `.ci/run`
# under /usr/bin/time with CI=true (the test command itself turns ccache off).
# Prints each step's start (tools/test.sh's "==" lines), then wall, user and system time and the
# load average, since the wall figure holds only on an otherwise idle machine. After a run that
# passed, it writes tests/test_seconds.txt anew from the log: every test of 1 s or more, with its
# seconds (the COST by which ctest starts the longest first; tests/CMakeLists.txt).
# Usage: tools/ci_time.sh [LOG]     (the whole output of the run goes to LOG)
set -euo pipefail
cd "$(dirname "$0")/.."
log=${1:-/tmp/tpusim_ci_time.log}
clone=$(mktemp -d /tmp/tpusim_ci_time.XXXXXX)
trap 'rm -rf "$clone"' EXIT
git clone -q . "$clone"
echo "ci_time: $(git rev-parse --short HEAD) cloned into $clone; output in $log" >&2
status=0
(cd "$clone" && CI=true /usr/bin/time -f "wall %e s, user %U s, system %S s" \
  bash .ci/run) >"$log" 2>&1 || status=$?
grep -E '^== |^wall ' "$log"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); exit status $status"
if [ $status -eq 0 ]; then
  # "  3/210 Test  #7: NAME ......   Passed   12.34 sec" -> "12.34 NAME", longest first; a name in
  # both runs (structure:) keeps its longer time.
  { grep '^#' tests/test_seconds.txt
    sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: (.*[^. ]) \.+ +Passed +([0-9.]+) sec$/\2 \1/p' "$log" |
      sort -rn | awk '$1 >= 1 && !seen[substr($0, index($0, " ") + 1)]++'
  } >tests/test_seconds.txt.new
  mv tests/test_seconds.txt.new tests/test_seconds.txt
  echo "ci_time: tests/test_seconds.txt written from this run (commit it if the order changed)"
fi
exit $status
