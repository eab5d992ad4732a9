#!/usr/bin/env bash
# Times the test command as CI runs it: a clean clone of HEAD in a temporary folder, `.ci/run`
# under /usr/bin/time with CI=true (the test command itself turns ccache off).
# Prints each step's start (tools/test.sh's "==" lines), then wall, user and system time and the
# load average, since the wall figure holds only on an otherwise idle machine.
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
exit $status
