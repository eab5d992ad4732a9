#!/usr/bin/env bash
# Compares two tpusim binaries (for example a build with -DTPUSIM_JEMALLOC=OFF, or a copy of the
# binary before a change, against the current one): runs each command with both, alternating,
# RUNS times (default 5), and prints a Markdown row per command with the median CPU seconds (user
# + system) and the largest peak RSS of each, then whether the two --json reports agree but for
# wall times and the SystemC objects elaborated (which an older binary does not report). The
# README's allocator table and docs/network.md's event-queue table come from it.
# Usage: tools/bench_ab.sh OLD_BINARY NEW_BINARY [RUNS] [-- COMMAND ARGS...]
#   (without a command after --, the list below; a command is one `tpusim` argument list)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: tools/bench_ab.sh OLD_BINARY NEW_BINARY [RUNS] [-- ARGS...]" >&2; exit 2; }
old=$1 new=$2
shift 2
runs=5
if [ $# -gt 0 ] && [ "$1" != "--" ]; then runs=$1; shift; fi
for b in "$old" "$new"; do [ -x "$b" ] || { echo "bench_ab: $b: not an executable" >&2; exit 2; }; done
commands=()
if [ $# -gt 0 ] && [ "$1" = "--" ]; then
  shift
  commands+=("$*")
else
  commands+=("run configs/studies/bert_large_4096.json"
             "run configs/studies/bert_large_4096.json --set sim.symmetry=off"
             "run configs/studies/bert_large_4096.json --set network.fidelity=packet"
             "run configs/studies/ssd_4096.json"
             "run configs/studies/gpt3_175b_4096.json"
             "collective --op all-to-all --bytes 1MiB --topology tpu_v3_pod --set network.fidelity=packet"
             "train configs/studies/bert_large_4096.json"
             "train configs/studies/transformer_big_4096.json")
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| command (\`--json\`) | CPU s, old | CPU s, new | peak MiB, old | peak MiB, new | same report |"
echo "|---|---|---|---|---|---|"
for c in "${commands[@]}"; do
  read -r -a args <<<"$c"
  : >"$tmp/old.t"
  : >"$tmp/new.t"
  for _ in $(seq "$runs"); do
    /usr/bin/time -a -o "$tmp/old.t" -f "%U %S %M" "$old" "${args[@]}" --json >"$tmp/old.json"
    /usr/bin/time -a -o "$tmp/new.t" -f "%U %S %M" "$new" "${args[@]}" --json >"$tmp/new.json"
  done
  python3 - "$c" "$tmp" <<'PY'
import json, statistics, sys
c, tmp = sys.argv[1], sys.argv[2]
def times(name):
    rows = [l.split() for l in open(f"{tmp}/{name}.t") if l.strip()]
    return statistics.median_low(float(u) + float(s) for u, s, _ in rows), max(int(m) for *_, m in rows) / 1024
def report(name):
    def strip(o):
        if isinstance(o, dict):
            return {k: strip(v) for k, v in o.items() if k not in ("wall_s", "analysis_s", "systemc_objects")}
        if isinstance(o, list):
            return [strip(v) for v in o]
        return o
    return strip(json.load(open(f"{tmp}/{name}.json")))
(co, mo), (cn, mn) = times("old"), times("new")
same = "yes" if report("old") == report("new") else "**no**"
print(f"| `{c}` | {co:.2f} | {cn:.2f} | {mo:.0f} | {mn:.0f} | {same} |")
PY
done
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); machine: $(nproc) cores, $(date -u +%Y-%m-%d)"
