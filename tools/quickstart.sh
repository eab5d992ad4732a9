#!/usr/bin/env bash
# The README's main job: install what is missing, build Release (the tpusim command and the
# Python module), and simulate one training step of BERT-Large on the 4096-chip TPU-v3 Multipod.
# Extra arguments go to `tpusim run`.
# On a terminal the build shows one progress line (percent done, time so far, the time left
# estimated from the rate so far, the file being compiled); piped, it is quiet. A failed build
# prints the end of its log (build/quickstart-build.log).
# `tools/quickstart.sh --progress LOG` runs only the progress printer on its input (what the
# build's output goes through), for tests/python/test_quickstart_progress.py.
set -euo pipefail
cd "$(dirname "$0")/.."
log=build/quickstart-build.log

say() { [ -t 2 ] && printf '%s\n' "$*" >&2 || true; }

# Reads the build's output and keeps one line on stderr up to date: "[ 45%] 1m05s, about 1m20s
# left: tools/report/op_profile.cpp". The time left is elapsed x (100 - p) / p.
progress() {
  local start=$SECONDS pct=0 file="" line
  while IFS= read -r line; do
    printf '%s\n' "$line" >>"$log"
    # Make prints "[ 45%] Building CXX object CMakeFiles/X.dir/core/config.cpp.o", Ninja
    # "[12/170] Building CXX object ...".
    if [[ $line =~ ^\[[[:space:]]*([0-9]+)%\] ]]; then
      pct=${BASH_REMATCH[1]}
    elif [[ $line =~ ^\[([0-9]+)/([0-9]+)\] ]]; then
      pct=$((100 * BASH_REMATCH[1] / BASH_REMATCH[2]))
    else
      continue
    fi
    file=${line##* }
    file=${file#*.dir/}
    file=${file%.o}
    local el=$((SECONDS - start)) left="?"
    if [ "$pct" -gt 0 ]; then left=$((el * (100 - pct) / pct)); left="$((left / 60))m$(printf %02d $((left % 60)))s"; fi
    printf '\r\033[K[%3d%%] %dm%02ds, about %s left: %s' "$pct" $((el / 60)) $((el % 60)) "$left" \
      "${file:0:60}" >&2
  done
  printf '\r\033[K' >&2
}

# The build's output: through the progress line on a terminal, else to the log only.
show_progress() {
  if [ -t 2 ]; then progress; else cat >>"$log"; fi
}

if [ "${1:-}" = --progress ]; then
  log=${2:?--progress LOG}
  show_progress
  exit 0
fi

tools/install-deps.sh
jobs="$(nproc)"
mkdir -p build

say "quickstart: configuring the Release build (build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >"$log" 2>&1 || { tail -30 "$log" >&2; exit 1; }
say "quickstart: building tpusim and its Python module with $jobs jobs: a first build compiles" \
    "about 170 files (minutes on 2 cores; the line below estimates the rest), a rebuild only" \
    "what changed"
start=$SECONDS
status=0
cmake --build build -j"$jobs" --target tpusim tpusim_python 2>&1 | show_progress || status=$?
if [ "$status" -ne 0 ]; then
  echo "quickstart: the build failed; the end of $log:" >&2
  tail -30 "$log" >&2
  exit 1
fi
say "quickstart: built in $((SECONDS - start)) s: build/bin/tpusim, and the Python module" \
    "(PYTHONPATH=build/python python3 -c 'import tpusim')"
say "quickstart: simulating one step of BERT-Large on 4096 chips"
exec build/bin/tpusim run configs/studies/bert_large_4096.json "$@"
