#!/usr/bin/env bash
# Benchmark: the full weak-scaling sweep of the five models (45 points, 16 to 4096 chips) with
# -j2, into a fresh directory so nothing is resumed. Prints the wall time and the points' own
# simulation times. Usage: tools/bench_sweep.sh [BUILD_DIR] [JOBS]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
jobs=${2:-2}
tpusim=$build/bin/tpusim
sweep=$here/configs/studies/sweeps/scaling_five_models.json
[ -x "$tpusim" ] || { echo "bench_sweep: no $tpusim; build first (cmake --build $build)" >&2; exit 2; }
out=$(mktemp -d /tmp/tpusim_bench_sweep.XXXXXX)
trap 'rm -rf "$out"' EXIT

start=$(date +%s.%N)
set +e
"$tpusim" sweep "$sweep" -j "$jobs" --out "$out/run" >"$out/log" 2>&1
rc=$?
set -e
end=$(date +%s.%N)

points=$(($(wc -l <"$out/run/results.csv") - 1))
ok=$(awk -F, 'NR > 1 && $3 == "ok"' "$out/run/results.csv" | wc -l)
# wall_s of each point: the simulation's own time, without process start and study loading.
sim_s=$(python3 - "$out/run/results.csv" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["status"] == "ok"]
print(f"{sum(float(r['wall_s']) for r in rows):.1f}")
PY
)
printf 'bench_sweep: %d points (%d ok), -j%s: %.1f s wall; sum of per-point simulation wall_s %s s\n' \
  "$points" "$ok" "$jobs" "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" "$sim_s"
if [ "$rc" -ne 0 ]; then
  echo "bench_sweep: the sweep exited with $rc; failed points:" >&2
  grep FAILED "$out/log" | cut -c1-200 >&2 || true
fi
exit "$rc"
