#!/usr/bin/env bash
# Reruns the commands whose figures the README and docs quote for the BERT-Large Multipod step
# (docs/network.md "Where the time goes", the README's calibration section) and prints the lines
# they quote, so a change that moves them shows what to update. Usage: tools/doc_figures.sh [BUILD]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build}/bin/tpusim
study=configs/studies/bert_large_4096.json
show() {  # title, then the --set options
  local title=$1
  shift
  echo "== $title: tpusim run $study $*"
  "$bin" run "$study" "$@" | grep -E 'step time|^  communication|in collectives'
}
show "default"
show "DMA traffic free" --set collectives.dma_hbm_traffic=false
show "five-pass reductions" --set collectives.reduce_on_arrival=false
show "the model before the core resources" --set collectives.dma_hbm_traffic=false \
  --set collectives.reduce_on_arrival=false
