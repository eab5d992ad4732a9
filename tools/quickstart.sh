#!/usr/bin/env bash
# The README's main job: install what is missing, build Release, and simulate one training step
# of BERT-Large on the 4096-chip TPU-v3 Multipod. Extra arguments go to `tpusim run`.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target tpusim >/dev/null
exec build/bin/tpusim run configs/studies/bert_large_4096.json "$@"
