#!/usr/bin/env bash
# Reruns the commands behind the simulated figures README.md and docs/*.md quote and prints the
# lines they quote, section by section: each section names the page and the part of it it feeds,
# then each command and its lines. A change that moves them shows what to update.
#
#   tools/doc_figures.sh                      # build/bin/tpusim, every default section
#   tools/doc_figures.sh build network cnn    # BUILD, then only these sections
#   tools/doc_figures.sh --list               # the sections and what they feed
#
# The default sections take a few minutes of CPU together. Three run only when named: `slow`
# (BERT at packet level and async BERT with 2 DMA engines per core: minutes each), `plan`
# (tools/plan_docs.sh, which rewrites docs/plan.md's tables itself), `startplan` (the
# getting-started page's GPT-3 layout search) and `planbounds` (layout searches that prune
# nothing, each layout's step against its lower bound: about a quarter of an hour). Not here: the wall, CPU and
# memory columns of the Benchmarks table (README, docs/benchmarks.md; tools/bench.sh measures them) and
# docs/compiler.md's tables (tools/compiler_effects.py prints them); docs/hardening.md, section
# 10, lists what else is not.
# Progress goes to stderr when it is a terminal: a line redrawn in place ([3/12] section:
# command) when stdout goes elsewhere, one line per section when both are the terminal; nothing
# when stderr is piped.
# shellcheck disable=SC2317,SC2086 # the sections are called by name; study paths have no spaces
set -euo pipefail
cd "$(dirname "$0")/.."

default_sections=(quickstart calibration bert network collectives kernels mfu cnn detection train
  metric memory results chakra benchmarks start)
extra_sections=(slow plan startplan planbounds)
describe() {
  case $1 in
    quickstart) echo "README.md: Quick start (the report, shortened); docs/getting-started.md: the first report" ;;
    calibration) echo "README.md: Accuracy; docs/calibration.md (the predicted-against-measured table)" ;;
    bert) echo "docs/calibration.md: Reading it; What the same parameters say elsewhere; docs/network.md: Where the time in collectives goes, Core resources" ;;
    network) echo "docs/network.md: Core resources (the table of the three studies); docs/calibration.md and docs/network.md: SSD's batch-norm all-reduces" ;;
    collectives) echo "README.md and docs/benchmarks.md: the benchmark table (simulated column of the collective rows); docs/network.md: all-to-all, packet trains, degraded and failed links" ;;
    kernels) echo "docs/kernels.md: the measured kernels and collectives against tpusim (TPU v7 GEMM curve, v5e all-gathers at every level, v7 all-gather bus bandwidth), TPU v3 with the measured costs (the step and hop row)" ;;
    mfu) echo "docs/llm.md: MaxText's TPU v5p MFU table and TPU v5e table, PaLM; docs/kernels.md: One MXU efficiency from TPU v4 to v7 (MaxText's v4 rows, PaLM), What separates TPU v4 (the candidate terms, the v4 points audited); docs/llm.md: Auditing the PaLM study" ;;
    cnn) echo "docs/cnn.md: What it predicts (ResNet-50 table, spatial sweep, other studies, batch norm over groups), Gradient dtype (bf16 and f32 steps); docs/kernels.md: The old gaps, revisited (collectives without their fixed costs)" ;;
    detection) echo "docs/cnn.md: Detection: predicted against measured; docs/detection.md: Periods with evaluation, FLOPs and bytes by op class, the f32 precision" ;;
    train) echo "README.md: Five studies by task (time to train); docs/train.md: In short (the table); docs/train.md: Host input pipelines (what the studies' pipelines cost, training and eval), The hosts in the report (the infeed-thread example), Where the hosts become the limit (the host-cores sweep)" ;;
    metric) echo "docs/train.md: The evaluation metric on the host (What it changes, the v0.6 periods before and after, the distributed-evaluation what-ifs, the evaluation sweep); docs/train.md: In short (host evaluation column)" ;;
    memory) echo "docs/memory.md: the validate example, Out of memory, Rematerialization (lines and sweep), Checked against the facts" ;;
    results) echo "docs/results.md: the tpusim diff example" ;;
    chakra) echo "docs/chakra.md: Cost (the replay of the BERT 256-chip trace)" ;;
    benchmarks) echo "README.md and docs/benchmarks.md: the benchmark table (simulated column and kernel events of the run and replay rows)" ;;
    slow) echo "docs/network.md: Packet trains (BERT at packet level), Core resources (async BERT with 2 DMA engines per core); README.md and docs/benchmarks.md: the benchmark table (the packet row)" ;;
    plan) echo "docs/plan.md: the plan tables (runs tools/plan_docs.sh, which rewrites them)" ;;
    start) echo "docs/getting-started.md: tasks 1, 2, 4 to 9 (the quoted lines); README.md: Five studies by task" ;;
    startplan) echo "docs/getting-started.md: task 3 (plan for GPT-3 on 1024 v4 chips, seconds); docs/llm.md: Searching layouts" ;;
    planbounds) echo "docs/benchmarks.md: The bound counts the links routes arrive on (every simulated step against its lower bound, nothing pruned)" ;;
    *) return 1 ;;
  esac
}

build=build
if [[ $# -gt 0 && $1 == --list ]]; then
  for s in "${default_sections[@]}" "${extra_sections[@]}"; do printf '%-12s %s\n' "$s" "$(describe "$s")"; done
  exit 0
fi
if [[ $# -gt 0 ]] && ! describe "$1" >/dev/null; then
  build=$1
  shift
fi
[[ -x $build/bin/tpusim ]] || { echo "tools/doc_figures.sh: no $build/bin/tpusim (build first, or name the build folder)" >&2; exit 2; }
bin=$(cd "$build" && pwd)/bin/tpusim
sections=("$@")
[[ ${#sections[@]} -gt 0 ]] || sections=("${default_sections[@]}")
for s in "${sections[@]}"; do
  describe "$s" >/dev/null || { echo "tools/doc_figures.sh: unknown section '$s' (--list names them)" >&2; exit 2; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tty=false inplace=false
[[ -t 2 ]] && tty=true
[[ -t 2 && ! -t 1 ]] && inplace=true
index=0
current=
progress() {  # the command being run, on a terminal only
  local what="$*"
  $inplace && printf '\r\033[K[%d/%d] %s: %s' "$index" "${#sections[@]}" "$current" "${what:0:100}" >&2
  return 0
}
heading() {
  if $tty && ! $inplace; then echo "[$index/${#sections[@]}] $current" >&2; fi
  echo
  echo "=== [$current] $(describe "$current")"
}
# tps ARGS...: print the command (on fd 3, the script's stdout, past the caller's pipe), run it
exec 3>&1
tps() {
  echo "\$ tpusim $*" >&3
  progress "tpusim $*"
  "$bin" "$@"
}
# q FILTER ARGS...: run `tpusim ARGS --json` quietly and print the jq FILTER of its report
q() {
  local filter=$1
  shift
  progress "tpusim $*"
  "$bin" "$@" --json | jq -r "$filter"
}
step_share='"\(.step_time_ms * 1000 | round / 1000) ms, share \(.comm_share * 1000 | round / 10) %"'
study=configs/studies/bert_large_4096.json

sec_quickstart() {
  tps run $study
}

sec_calibration() {
  echo "\$ tools/calibrate.py --bin $bin --markdown"
  progress "tools/calibrate.py --markdown"
  /usr/bin/python3 tools/calibrate.py --bin "$bin" --markdown
}

async_report='"step \(.step_time_ms * 100 | round / 100) ms, compute \(.compute_ms * 100 | round / 100) ms, compute slowed \(.compute_slowdown_by_communication_ms * 100 | round / 100) ms, share \(.comm_share * 1000 | round / 10) %, DMA streams in flight at most \(.core_resources.dma_peak_in_flight), waiting for an engine \(.core_resources.dma_waiting_ms * 100 | round / 100) ms"'

sec_bert() {
  local variant
  for variant in "" "--set collectives.dma_hbm_traffic=false" "--set collectives.reduce_on_arrival=false" \
    "--set collectives.dma_hbm_traffic=false --set collectives.reduce_on_arrival=false"; do
    # shellcheck disable=SC2086 # the options are words
    tps run $study $variant | grep -E 'step time|^  communication|in collectives'
  done
  tps run configs/studies/bert_large_4096_no_wus.json | grep -E 'step time|^  communication'
  tps run $study --set hardware.dma.engines_per_core=1 | grep -E 'step time'
  echo "async (tpusim run $study --set hardware.async_collectives=true --json, with the --sets named):"
  for variant in "" "--set collectives.dma_hbm_traffic=false" \
    "--set collectives.dma_hbm_traffic=false --set collectives.reduction_compute=false" \
    "--set hardware.dma.engines_per_core=8" "--set hardware.dma.engines_per_core=4"; do
    echo "${variant:-(no other --set)}: $(q "$async_report" run $study --set hardware.async_collectives=true $variant)"
  done
}

# The measured kernel and collective points of docs/kernels.md: measured, tpusim, error (docs/kernels.md).
sec_kernels() {
  local n m t ag
  echo "TPU v7 GEMM, square bf16, one device (tpusim kernel --op matmul --shape N,N,N --preset tpu_v7):"
  for n in 128:2.6 256:18.3 512:105 1024:350 2048:679 4096:893 16384:950 32768:956; do
    m=${n#*:} n=${n%%:*}
    t=$(q '.tflops' kernel --op matmul --shape "$n,$n,$n" --preset tpu_v7)
    awk -v n="$n" -v m="$m" -v t="$t" 'BEGIN { printf "  %5d: measured %6.1f TF/s, tpusim %6.1f, %+5.1f %%\n", n, m, t, (t / m - 1) * 100 }'
  done
  ag=(collective --op all-gather --topology "4x8:wrap=0,0" --mesh "y=8,x=4" --axes x --preset tpu_v5e)
  echo "TPU v5e all-gather over the 4-chip open axis of an 8x4 slice (tpusim ${ag[*]} --bytes B):"
  for n in 32MiB:680 128KiB:8; do
    m=${n#*:} n=${n%%:*}
    t=$(q '.collective_time_ns / 1000' "${ag[@]}" --bytes "$n")
    awk -v n="$n" -v m="$m" -v t="$t" 'BEGIN { printf "  %7s gathered per chip: measured %5.1f us, tpusim %6.1f us, %+5.1f %%\n", n, m, t, (t / m - 1) * 100 }'
  done
  echo "TPU v7 all-gather bus bandwidth, 2x2x1, f32, 8 devices (tpusim collective --op all-gather --topology 2x2x1 --preset tpu_v7 --dtype f32 --bytes 8S):"
  for n in 256:71.8 1024:129.2 4096:161.9 16384:174.8 65536:178.8; do
    m=${n#*:} n=${n%%:*}
    t=$(q '.collective_time_ns' collective --op all-gather --topology 2x2x1 --preset tpu_v7 --dtype f32 --bytes "$((8 * n))KiB")
    awk -v s="$n" -v m="$m" -v t="$t" 'BEGIN { b = s * 1024 * 6; printf "  shard %5d KiB (%6.1f MB moved): measured %5.1f GB/s, tpusim %5.1f, %+5.1f %%\n", s, b / 1e6, m, b / t, (b / t / m - 1) * 100 }'
  done
  echo "The v5e all-gathers at the other network levels (--set network.fidelity=F), us:"
  for f in flow packet; do
    echo "  $f: $(for n in 32MiB 128KiB; do printf '%s ' "$(q '.collective_time_ns / 10 | round / 100' "${ag[@]}" --bytes "$n" --set network.fidelity=$f)"; done)"
  done
  local o l
  o=$(jq '.hardware.calibration.collective_step_overhead_ns' configs/tpu_v5e.json)
  l=$(jq '.hardware.ici.latency_ns' configs/tpu_v5e.json)
  echo "TPU v3 with v5e's and v7's collective costs (tpusim run STUDY --set hardware.calibration.collective_step_overhead_ns=$o --set hardware.ici.latency_ns=$l; step ms, share):"
  for s in bert_large_4096 resnet50_16 resnet50_256 resnet50_1024 resnet50_4096; do
    echo "  $s: $(q "$step_share" run configs/studies/$s.json --set hardware.calibration.collective_step_overhead_ns=$o --set hardware.ici.latency_ns=$l)"
  done
}

# published_mfu RESULTS_CSV ID: the point's published_mfu column, empty if the sweep has none
published_mfu() {
  grep -v '^#' "$1" | awk -F, -v id="$2" 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == "published_mfu") c = i; next }
    c && $2 == id { print $c }'
}
sec_mfu() {  # every point of the MaxText sweeps, run with --allow-oom (the memory model refuses some)
  local sw id out pub
  for sw in maxtext_v5p_mfu maxtext_v5p_2slices maxtext_v4_mfu maxtext_v5e_16b maxtext_v5e_32b maxtext_v5e_64b maxtext_v5e_128b; do
    out=$tmp/$sw
    progress "tpusim sweep configs/studies/sweeps/$sw.json"
    "$bin" sweep "configs/studies/sweeps/$sw.json" -j 2 --out "$out" >/dev/null 2>&1 || true
    echo "$sw (tpusim run POINT --json --allow-oom of each point of tpusim sweep configs/studies/sweeps/$sw.json):"
    for id in $(grep -v '^#' "$out/results.csv" | tail -n +2 | cut -d, -f2); do
      pub=$(published_mfu "$out/results.csv" "$id")
      q '"  \(.layout) on \(.chips) chips: MFU \(.mfu * 1000 | round / 10) %, HFU \(.hfu * 1000 | round / 10) %, exposed communication \(.exposed_comm_share * 1000 | round / 10) % of the step" + (if '"${pub:-null}"' == null then "" else ", published \('"${pub:-0}"' * 1000 | round / 10) %, error \((.mfu / '"${pub:-1}"' - 1) * 1000 | round / 10) %" end)' \
        run "$out/points/$id.study.json" --allow-oom | tee -a "$tmp/mfu_rows_$sw"
    done
  done
  # MaxText's 40 rows: v5p on one and two slices, v5e on 1 to 32 slices (not the two v4 rows:
  # docs/kernels.md)
  grep -ho 'error [-0-9.]* %' "$tmp"/mfu_rows_maxtext_v5* | awk '{ print $2 < 0 ? -$2 : $2 }' | sort -g | awk '{ a[NR] = $1; w += $1 <= 10 }
    END { m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
      printf "MaxText rows: %d of %d within 10 %% of the published MFU, median |error| %.1f %%\n", w, NR, m }'
  echo "PaLM 540B (tpusim run configs/studies/palm_540b_6144.json):"
  q '"  MFU \(.mfu * 1000 | round / 10) % (paper 46.2), HFU \(.hfu * 1000 | round / 10) % (paper 57.8)"' run configs/studies/palm_540b_6144.json
  # docs/kernels.md, What separates TPU v4: each candidate term as a --set, on PaLM, MaxText's two
  # v4 rows, the v5p 32B row and the v5e 16B row on one slice
  local v4 v5p v5e set f
  v4=$(grep -v '^#' "$tmp/maxtext_v4_mfu/results.csv" | tail -n +2 | cut -d, -f2)
  v5p=$(grep -v '^#' "$tmp/maxtext_v5p_mfu/results.csv" | sed -n 2p | cut -d, -f2)
  v5e=$(grep -v '^#' "$tmp/maxtext_v5e_16b/results.csv" | sed -n 2p | cut -d, -f2)
  echo "Candidate terms (--set): MFU of PaLM (46.2) / v4 22B (56.7) / v4 52B (56.0) / v5p 32B (71.47) / v5e 16B x1 (61.10), PaLM's HFU (57.8):"
  for set in none hardware.vpu.sublanes=4 collectives.dma_hbm_traffic=false hardware.calibration.exposed_block_MiB=10 \
    hardware.calibration.ici_efficiency=0.75 hardware.async_collectives=false; do
    local args=() line
    [[ $set == none ]] || args=(--set "$set")
    line="  $set:"
    for f in configs/studies/palm_540b_6144.json $(for i in $v4; do echo "$tmp/maxtext_v4_mfu/points/$i.study.json"; done) \
      "$tmp/maxtext_v5p_mfu/points/$v5p.study.json" "$tmp/maxtext_v5e_16b/points/$v5e.study.json"; do
      line+=" $(q '.mfu * 1000 | round / 10' run "$f" --allow-oom "${args[@]}")"
    done
    echo "$line, HFU $(q '.hfu * 1000 | round / 10' run configs/studies/palm_540b_6144.json "${args[@]}")"
  done
  # docs/llm.md, Auditing the PaLM study; docs/kernels.md, The v4 points audited
  local palm=configs/studies/palm_540b_6144.json row='"\(.step_time_ms / 10 | round / 100) s, MFU \(.mfu * 10000 | round / 100) %, HFU \(.hfu * 10000 | round / 100) %, DCN \(.communication_dcn_ms * 10 | round / 10) ms"'
  echo "PaLM audit (tpusim run $palm --json --set ...):"
  for set in workload.global_batch=512 workload.global_batch=1024 dcn.host_nics=1 hardware.ici.bandwidth_GBps=50 \
    hardware.cmem.MiB_per_chip=0; do
    echo "  $set: $(q "$row" run $palm --set "$set")"
  done
  echo "MaxText v4 rows audit (tpusim run POINT --json --allow-oom --set ...; 22B then 52B):"
  for set in workload.attention=dot_product hardware.cmem.MiB_per_chip=0; do
    for f in $(for i in $v4; do echo "$tmp/maxtext_v4_mfu/points/$i.study.json"; done); do
      echo "  $set: $(q '"MFU \(.mfu * 10000 | round / 100) %, peak \(.memory.peak_bytes / 1073741824 * 10 | round / 10) GiB"' \
        run "$f" --allow-oom --set "$set")"
    done
  done
  f=$tmp/maxtext_v4_mfu/points/$(echo $v4 | cut -d' ' -f1).study.json
  echo "  22B on 8 slices: $(q "$row" run "$f" --allow-oom --set topology.slices=8 --set parallelism.slices=8 \
    --set workload.global_batch=7680)"
}
sec_network() {
  local s a b c
  echo "| study | now | dma_hbm_traffic=false reduce_on_arrival=false | reduce_on_arrival=false |"
  for s in bert_large_4096 resnet50_4096 ssd_4096; do
    a=$(q '.step_time_ms' run configs/studies/$s.json)
    b=$(q '.step_time_ms' run configs/studies/$s.json --set collectives.dma_hbm_traffic=false \
      --set collectives.reduce_on_arrival=false)
    c=$(q '.step_time_ms' run configs/studies/$s.json --set collectives.reduce_on_arrival=false)
    printf '| %s | %.2f ms | %.2f ms | %.2f ms |\n' "$s" "$a" "$b" "$c"
  done
  echo "(each: tpusim run configs/studies/STUDY.json --json with the column's --sets)"
  tps run configs/studies/ssd_4096.json | grep -E 'step time|^  communication'
  tps run configs/studies/ssd_4096.json --set collectives.algorithm=per_dimension | grep -E 'step time'
}

sec_collectives() {
  local t='"\(.collective_time_ns / 1000 * 10 | round / 10) us, \(.algorithm), \(.steps) steps, \(.events) kernel events, \(.network_work_items) network work items"'
  local a
  while IFS= read -r a; do
    echo "\$ tpusim collective $a"
    # shellcheck disable=SC2086 # the options are words
    q "$t" collective $a 2>&1 || echo "(exit code $?)"
  done <<'EOF'
--op all-reduce --bytes 64MiB --topology tpu_v3_pod
--op all-reduce --bytes 64MiB --topology tpu_v3_multipod
--op all-reduce --bytes 64MiB --topology tpu_v3_multipod --set network.fidelity=flow
--op all-reduce --bytes 64MiB --topology tpu_v3_multipod --set network.fidelity=packet
--op all-reduce --bytes 64MiB --topology 8x8
--op all-reduce --bytes 64MiB --topology 8x8 --set network.fidelity=flow
--op all-reduce --bytes 64MiB --topology 8x8 --set network.fidelity=packet
--op all-to-all --bytes 64KiB --topology tpu_v3_pod
--op all-to-all --bytes 64KiB --topology tpu_v3_pod --set collectives.all_to_all_algorithm=direct
--op all-reduce --bytes 512 --topology 4x2 --mesh a=16
--op all-reduce --bytes 512 --topology 4x2 --mesh a=16 --algorithm per_dimension
--op all-reduce --bytes 64MiB --topology 8x8 --set network.degraded_links=multipod.chip(0,0).ici.x+=0.5
--op all-reduce --bytes 64MiB --topology 4x4
--op all-reduce --bytes 64MiB --topology 4x4 --set network.failed_links=multipod.chip(0,0).ici.x+
EOF
}

sec_cnn() {
  local s r
  echo "ResNet-50 (tpusim run configs/studies/resnet50_CHIPS.json --json; period: tpusim train, time to train / steps):"
  echo "| chips | batch | predicted ms/step | img/s/chip | comm share | period ms |"
  for s in 16 64 128 256 512 1024 4096; do
    echo "$(q '"| \(.chips) | \(.global_batch) | \(.step_time_ms * 10 | round / 10) | \(.examples_per_s_per_chip | round) | \(.comm_share * 1000 | round / 10) % |"' \
      run configs/studies/resnet50_$s.json) $(q '"\(.time_to_train_s / .schedule.target_steps * 10000 | round / 10) |"' \
      train configs/studies/resnet50_$s.json)"
  done
  echo "Spatial sweep (tpusim run configs/studies/{ssd,maskrcnn}_spatial_S.json --json; efficiency = T(1) / (S x T(S))):"
  echo "| S | SSD step | SSD efficiency | Mask R-CNN step | Mask R-CNN efficiency |"
  local s1 m1 ts tm
  for s in 1 2 4 8; do
    ts=$(q '.step_time_ms' run configs/studies/ssd_spatial_$s.json)
    tm=$(q '.step_time_ms' run configs/studies/maskrcnn_spatial_$s.json)
    [[ $s == 1 ]] && { s1=$ts; m1=$tm; }
    r=$(/usr/bin/python3 -c "print(f'| $s | {$ts:.2f} | {$s1/($s*$ts):.2g} | {$tm:.2f} | {$m1/($s*$tm):.2g} |')")
    echo "$r"
  done
  echo "Other studies:"
  for s in ssd_4096 ssd_2048 maskrcnn_512; do
    echo "$s: $(q "$step_share" run configs/studies/$s.json)"
  done
  echo "Gradient dtype (step ms with --set parallelism.grad_dtype=bf16, then as shipped, f32):"
  for s in resnet50_16 resnet50_64 resnet50_128 resnet50_256 resnet50_512 resnet50_1024 \
    resnet50_4096 ssd_v06_16 ssd_v06_64 ssd_v06_128 ssd_v06_256 ssd_v06_512 ssd_v06_1024 ssd_4096; do
    echo "| $s | $(q '.step_time_ms * 100 | round / 100' run configs/studies/$s.json \
      --set parallelism.grad_dtype=bf16) | $(q '.step_time_ms * 100 | round / 100' run \
      configs/studies/$s.json) |"
  done
  echo "Batch norm over groups of cores (step ms with --set parallelism.bn_group_cores=0, 2, 4, 8):"
  for s in 256 512 1024; do
    echo "| resnet50_$s | $(for g in 0 2 4 8; do printf '%s ' "$(q '.step_time_ms * 100 | round / 100' run \
      configs/studies/resnet50_$s.json --set parallelism.bn_group_cores=$g)"; done)|"
  done
  echo "Collectives without their fixed costs (step ms, share; --set hardware.calibration.collective_step_overhead_ns=0 hardware.ici.latency_ns=0 hardware.calibration.collective_launch_ns=0):"
  for s in bert_large_4096 resnet50_256 resnet50_512 resnet50_1024 resnet50_4096; do
    echo "  $s: $(q "$step_share" run configs/studies/$s.json --set hardware.calibration.collective_step_overhead_ns=0 \
      --set hardware.ici.latency_ns=0 --set hardware.calibration.collective_launch_ns=0)"
  done
}

sec_detection() {
  local s n m tr ev per ttt steps
  echo "v0.6 studies (train: tpusim run STUDY --json; eval: --set workload.program=eval; period: tpusim train STUDY --json, time to train / N):"
  echo "| study | train ms | eval step ms | loop N + M | period ms |"
  for s in ssd_v06_16 ssd_v06_64 ssd_v06_128 ssd_v06_256 ssd_v06_512 ssd_v06_1024 maskrcnn_v06_16 \
    maskrcnn_v06_64 maskrcnn_v06_128; do
    tr=$(q '.step_time_ms' run configs/studies/$s.json)
    ev=$(q '.step_time_ms' run configs/studies/$s.json --set workload.program=eval)
    q '"\(.schedule.steps_per_loop) \(.schedule.eval_steps_per_evaluation) \(.time_to_train_s) \(.schedule.target_steps)"' \
      train configs/studies/$s.json >"$tmp/train"
    read -r n m ttt steps <"$tmp/train"
    per=$(/usr/bin/python3 -c "print(f'{1000 * $ttt / $steps:.1f}')")
    printf '| %s | %.2f | %.1f | %s + %s | %s |\n' "$s" "$tr" "$ev" "$n" "$m" "$per"
  done
  echo "(period = time to train / target steps; maskrcnn_v06_16's time to train: $(q '.time_to_train_s * 100 | round / 100' train configs/studies/maskrcnn_v06_16.json) s)"
  tps train configs/studies/ssd_4096.json --set train.target_steps=145 --set train.eval_every_steps=145 \
    --set train.eval_steps=2 --set train.eval_examples=5000 | grep -E 'time to train|training step'
  tps train configs/studies/maskrcnn_512.json --set train.target_steps=462 --set train.eval_every_steps=462 \
    --set train.eval_steps=11 --set train.eval_examples=5000 --set workload.eval_batch=512 |
    grep -E 'time to train|training step'
  local classes='"\(.step_time_ms * 100 | round / 100) ms", (.op_classes[] | "  \(.class) \(.ops) ops, \(.gflop_per_core * 10 | round / 10) GFLOP, \(.hbm_bytes_per_core / 1048576 * 10 | round / 10) MiB, \(.time_ms * 100 | round / 100) ms")'
  echo "\$ tpusim run configs/studies/maskrcnn_512.json --top 0 --json (op_classes)"
  q "$classes" run configs/studies/maskrcnn_512.json --top 0
  echo "\$ tpusim run configs/studies/maskrcnn_512.json --set workload.program=eval --set workload.eval_batch=512 --top 0 --json"
  q "$classes" run configs/studies/maskrcnn_512.json --set workload.program=eval --set workload.eval_batch=512 --top 0
  echo "\$ tpusim run configs/studies/ssd_4096.json --top 0 --json"
  q "$classes" run configs/studies/ssd_4096.json --top 0
  echo "\$ tpusim run configs/studies/ssd_4096.json --set workload.program=eval --top 0 --json"
  q "$classes" run configs/studies/ssd_4096.json --set workload.program=eval --top 0
  echo "f32 precision (tpusim run STUDY --set workload.f32_matmul_precision=P --json --allow-oom; ms, peak GiB per core):"
  local p
  for s in maskrcnn_v06_16 maskrcnn_v06_64 maskrcnn_v06_128; do
    r="| $s |"
    for p in default high highest; do
      r="$r $(q '"\(.step_time_ms | round) (\(.memory.peak_bytes / 1073741824 * 10 | round / 10) GiB)"' run \
        configs/studies/$s.json --set workload.f32_matmul_precision=$p --allow-oom) |"
    done
    echo "$r"
  done
}

sec_train() {
  local s
  echo "| study | time to train | training steps | evaluation | input stalls | host CPU per example, per batch, busy |"
  for s in bert_large_4096 resnet50_4096 transformer_big_4096 ssd_4096 maskrcnn_512; do
    echo "\$ tpusim train configs/studies/$s.json --json"
    q '"| \(.study | sub(".*/"; "") | sub(".json"; "")) | \(.time_to_train_s * 10 | round / 10) s | \(.breakdown.training_s * 100 | round / 100) s (\(.schedule.target_steps) x \(.per_step.train_step_ms * 100 | round / 100) ms) | \(.breakdown.evaluation_s * 100 | round / 100) s (\(.schedule.evaluations) x \(.schedule.eval_steps_per_evaluation) x \(.per_step.eval_step_ms * 100 | round / 100) ms) | \(.breakdown.input_stall_s) | \(.host.cpu_us_per_example * 10 | round / 10) us, \(.host.train_batch_cpu_ms * 1000 | round / 1000) ms, \(.host.cpu_utilisation_train * 1000 | round / 10) % |"' \
      train configs/studies/$s.json
    q '"eval pipeline: \(.host.eval_cpu_us_per_example * 10 | round / 10) us per example (\([.host.eval_pipeline[].op] | join(", ")))"' \
      train configs/studies/$s.json
  done
  local t
  for t in 8 1; do
    echo "\$ tpusim train configs/studies/maskrcnn_v06_16.json --set hardware.host.infeed_threads=$t --json"
    q '"PCIe copies \(.host.train_batch_pcie_ms * 100 | round / 100) ms per batch, first batch \(.breakdown.first_batch_s * 1000 | round / 1000) s, input stall \(.breakdown.input_stall_s) s, time to train \(.time_to_train_s * 1000 | round / 1000) s"' \
      train configs/studies/maskrcnn_v06_16.json --set hardware.host.infeed_threads=$t
  done
  echo "\$ tpusim sweep configs/studies/sweeps/resnet50_host_cores.json -j 2"
  progress "tpusim sweep resnet50_host_cores"
  "$bin" sweep configs/studies/sweeps/resnet50_host_cores.json -j 2 --out "$tmp/cores_sweep" >/dev/null 2>&1
  /usr/bin/python3 -c "import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r['hardware.host.cpu_cores'], 'cores:', round(float(r['step_time_ms']), 2), 'ms,', round(float(r['time_to_train_s']), 2), 's')" \
    "$tmp/cores_sweep/results.csv"
}

sec_metric() {
  local s a
  local row='"| \(.study | sub(".*/"; "") | sub(".json"; "")) | \(.time_to_train_s * 1000 | round / 1000) s | \(.breakdown.host_eval_s * 10000 | round / 10000) s | \(.eval_metric.metric_s * 10000 | round / 10000) s (\(.eval_metric.busiest_host_cpu_s * 100 | round / 100) s CPU) | \(.eval_metric.overlapped_cost_s * 10000 | round / 10000) s | host CPU excess \(.eval_metric.host_cpu_excess_s * 1000 | round / 1000) s | \(.bound_by) | \(.time_to_train_s / .schedule.target_steps * 100000 | round / 100) ms per step |"'
  echo "(tpusim train configs/studies/STUDY.json --json; before: --set train.eval_metric_on=device)"
  echo "| study | time to train | host_eval_s | metric X (CPU) | overlapped cost | excess | bound_by | per step |"
  for s in bert_large_4096 resnet50_4096 ssd_4096 maskrcnn_512 transformer_big_4096 \
    ssd_v06_16 ssd_v06_64 ssd_v06_128 ssd_v06_256 ssd_v06_512 ssd_v06_1024 \
    maskrcnn_v06_16 maskrcnn_v06_64 maskrcnn_v06_128; do
    echo "before $(q "$row" train configs/studies/$s.json --set train.eval_metric_on=device)"
    echo "after  $(q "$row" train configs/studies/$s.json)"
  done
  echo "What-ifs (tpusim train STUDY --json --set ...):"
  while IFS= read -r a; do
    # shellcheck disable=SC2086 # the options are words
    echo "$a: $(q "$row" train $a)"
  done <<EOF
configs/studies/maskrcnn_512.json --set train.eval_metric_on=all_hosts
configs/studies/maskrcnn_512.json --set hardware.host.metric_threads=96
configs/studies/maskrcnn_512.json --set hardware.host.cpu_cores=4
configs/studies/maskrcnn_512.json --set hardware.host.cpu_cores=4 --set train.eval_metric_on=all_hosts
configs/studies/ssd_4096.json --set train.eval_metric_on=all_hosts
EOF
  echo "\$ tpusim sweep configs/studies/sweeps/maskrcnn_eval_metric.json -j 2"
  progress "tpusim sweep maskrcnn_eval_metric"
  "$bin" sweep configs/studies/sweeps/maskrcnn_eval_metric.json -j 2 --out "$tmp/eval_sweep" >/dev/null 2>&1
  /usr/bin/python3 -c "import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r['train.eval_metric_on'], r['hardware.host.cpu_cores'], 'cores:', round(float(r['time_to_train_s']), 1), 's')" \
    "$tmp/eval_sweep/results.csv"
}

sec_memory() {
  local b16=configs/studies/bert_large_16.json v
  tps validate $b16 --set workload.global_batch=448 --set parallelism.weight_update_sharding=false |
    head -n 16
  tps run configs/studies/resnet50_16.json --set hardware.hbm.GiB_per_core=0.01 2>&1 || true
  while IFS= read -r v; do
    tps validate $v 2>&1 | grep -E '^  memory per core' || true  # exit 1: does not fit
  done <<EOF
$b16 --set workload.global_batch=8192
$b16 --set workload.global_batch=8192 --set workload.rematerialize=true
$b16 --set workload.global_batch=448
$b16 --set workload.global_batch=512 --set parallelism.weight_update_sharding=false
$study
configs/studies/resnet50_16.json
configs/studies/resnet50_128.json
configs/studies/transformer_big_256.json --set workload.global_batch=8192 --set parallelism.model=1
EOF
  echo "every shipped study (tpusim validate configs/studies/*.json --json), smallest and largest peak per core:"
  # exit 1 where a study does not fit: serve_llama2_7b_disaggregated's own decode step (its
  # sequences preallocated to the model length), which `tpusim serve` never holds at once
  for v in configs/studies/*.json; do
    q '"\(.memory.peak_bytes / 1073741824 * 100 | round / 100) GiB of \(.memory.capacity_bytes / 1073741824) GiB \(.study)"' validate "$v" || true
  done | sort -g | sed -n '1p;$p'
  echo "\$ tpusim sweep configs/studies/sweeps/bert_rematerialize.json -j 1 --out DIR"
  progress "tpusim sweep configs/studies/sweeps/bert_rematerialize.json -j 1"
  "$bin" sweep configs/studies/sweeps/bert_rematerialize.json -j 1 --out "$tmp/remat" >/dev/null 2>&1 || true
  /usr/bin/python3 - "$tmp/remat/results.csv" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    step = f'{float(r["step_time_ms"]):.0f} ms' if r.get("step_time_ms") else ""
    peak = f'{float(r["peak_memory_GiB"]):.3g} GiB' if r.get("peak_memory_GiB") else ""
    print(r["topology"], "remat" if r["workload.rematerialize"] == "true" else "kept", r["status"], peak, step)
PY
}

sec_results() {
  echo "\$ tpusim run $study --json > a.json"
  progress "tpusim run $study --json"
  "$bin" run $study --json >"$tmp/a.json"
  echo "\$ tpusim run $study --json --set hardware.ici.bandwidth_GBps=82 > b.json"
  progress "tpusim run $study --json --set hardware.ici.bandwidth_GBps=82"
  "$bin" run $study --json --set hardware.ici.bandwidth_GBps=82 >"$tmp/b.json"
  echo "\$ tpusim diff a.json b.json"
  (cd "$tmp" && "$bin" diff a.json b.json) | grep -E 'numbers differ|busiest_utilization|step_time_ms'
}

sec_chakra() {
  tps run configs/studies/bert_large_256.json --record-trace "$tmp/bert256.trace" | grep 'step time'
  tps trace export "$tmp/bert256.trace" --format chakra --out "$tmp/chakra" | tail -n 1
  tps trace import "$tmp/chakra" --format chakra --out "$tmp/back.trace" | tail -n 1
  tps replay "$tmp/back.trace" | grep 'step time'
}

sec_benchmarks() {
  local kv='"\(.step_time_ms * 100 | round / 100) ms step, \(.kernel_events) kernel events, \(.network_work_items) network work items"'
  local s
  for s in bert_large_4096 transformer_big_4096 resnet50_4096 ssd_4096 ssd_2048 maskrcnn_512; do
    echo "\$ tpusim run configs/studies/$s.json --json"
    q "$kv" run configs/studies/$s.json
  done
  echo "\$ tpusim run $study --set network.fidelity=flow --json"
  q "$kv" run $study --set network.fidelity=flow
  "$bin" run $study --record-trace "$tmp/bert.trace" >/dev/null
  echo "\$ tpusim run $study --record-trace bert.trace; tpusim replay bert.trace --json"
  q "$kv" replay "$tmp/bert.trace"
}

sec_slow() {
  tps run $study --set network.fidelity=packet | grep -E 'step time|^  communication|kernel events'
  echo "--set hardware.dma.engines_per_core=2: $(q "$async_report" run $study --set hardware.async_collectives=true \
    --set hardware.dma.engines_per_core=2)"
}

# start: the getting-started tasks, each command as the page writes it (outputs into $tmp)
sec_start() {
  tps run $study --set topology=tpu_v3_2048 --set workload.global_batch=4096 | grep -E 'on 2048|step time|examples|simulation:'
  echo "\$ tpusim sweep configs/studies/sweeps/bert_weak_scaling.json -j2 --out out/bert"
  progress "tpusim sweep bert_weak_scaling"
  "$bin" sweep configs/studies/sweeps/bert_weak_scaling.json -j2 --out "$tmp/bert" 2>&1 | grep -E '^\[(1|9)/9\]|points ok'
  /usr/bin/python3 -c "import csv, sys
r = list(csv.DictReader(open(sys.argv[1])))[-1]
print('scaling efficiency at', r['chips'], 'chips:', round(100 * float(r['scaling_efficiency']), 1), '%')" "$tmp/bert/results.csv"
  tps train $study | grep -E 'time to train|training steps|bound by'
  tps run configs/studies/palm_540b_6144.json | grep -E 'step time|utilisation|tokens per second|data-center|simulation:'
  tps run configs/studies/bert_large_16.json --record-trace "$tmp/bert.json" | grep 'step time'
  tps trace export "$tmp/bert.json" --format chakra --out "$tmp/bert_et" | sed "s|$tmp/||g"
  tps trace import "$tmp/bert_et" --format chakra --out "$tmp/bert_back.json" | sed "s|$tmp/||g"
  tps replay "$tmp/bert_back.json" | grep 'step time'
  tps run configs/studies/bert_large_4x4096_v4.json | grep -E 'on 16384|step time|over ICI|simulation:'
  echo "\$ tpusim sweep configs/studies/sweeps/bert_multislice.json -j2 --out out/ms"
  progress "tpusim sweep bert_multislice"
  "$bin" sweep configs/studies/sweeps/bert_multislice.json -j2 --out "$tmp/ms" 2>&1 | grep -E '^\['
  local a
  for a in "--set parallelism.modle=2" "--set topology=tpu_v3_multipd" "--set workload.global_batch=1000" \
    "--set hardware.ici.bandwidth_GBps=-1"; do
    tps run $study $a 2>&1 || true
  done
  tps run configs/studies/bert_large_16.json --set workload.global_batch=8192 2>&1 || true
}

# startplan: getting-started task 3 (minutes of CPU)
sec_startplan() {
  tps plan configs/studies/gpt3_175b_4096.json --set topology=tpu_v4_1024 \
    --space parallelism.model=8,16,32 --space parallelism.fsdp=16,32,64,128 \
    --space workload.remat=full,attention --space workload.microbatches=1,2,4 \
    --space workload.attention=dot_product,flash \
    --space parallelism.weight_update_sharding=false --space parallelism.grad_bucket_MiB=32 \
    --space parallelism.grad_dtype=bf16 -j 2 --out "$tmp/plan" | sed '/^Pareto front/,/^$/d'
}

# planbounds: `plan --top 1000` simulates every layout that fits (up to 1000 ranked, so nothing
# is pruned below that); per search, the simulated steps against their bounds.
sec_planbounds() {
  local n=0 study args
  while read -r study args; do
    n=$((n + 1))
    echo "\$ tpusim plan configs/studies/$study.json $args -j 2 --top 1000 --json"
    progress "tpusim plan $study $args"
    # shellcheck disable=SC2086 # the options are words
    "$bin" plan "configs/studies/$study.json" $args -j 2 --top 1000 --json --out "$tmp/bounds$n" </dev/null \
      2>/dev/null | /usr/bin/python3 -c '
import json, statistics, sys
a = json.load(sys.stdin)
c = [x for x in a["candidates"].values() if x["bound_ms"] > 0]
r = sorted(x["bound_ms"] / x["step_time_ms"] for x in c)
sim, pruned = a["counts"]["simulated"], a["counts"]["pruned"]
median, loosest, closest = (100 * v for v in (statistics.median(r), r[0], r[-1]))
print(f"  {sim} simulated, {pruned} skipped by bound; bound / step: median {median:.1f} %,",
      f"loosest {loosest:.1f} %, closest {closest:.2f} %; steps below their bound:",
      sum(v > 1 for v in r))'
  done <<'LIST'
gpt3_175b_4096 --set topology=tpu_v4_1024
gpt3_175b_4096 --set topology=tpu_v4_1024 --set network.fidelity=flow --space workload.remat=full --space workload.attention=flash
mixtral_8x7b_v5p_256
deepseek_v3_v5p_256
gpt3_175b_v5e_16x256
decoder_1b_16
decoder_1b_16 --set network.fidelity=flow
decoder_1b_16 --set network.fidelity=packet
decoder_1b_16 --set network.contention=false
decoder_1b_16 --set workload.layers=4 --set workload.global_batch=128 --set topology={"dims":[4,4,8],"wrap":[false,false,false]}
decoder_1b_16 --set workload.layers=4 --set workload.global_batch=128 --set topology={"dims":[8,8],"wrap":[true,false]}
decoder_1b_16 --set workload.layers=4 --set workload.global_batch=128 --set topology={"dims":[4,4,8],"wrap":[true,true,true],"twist":true}
ssd_256
bert_large_256
transformer_big_256
LIST
}

sec_plan() {
  echo "\$ TPUSIM=$bin JOBS=1 tools/plan_docs.sh"
  progress "tools/plan_docs.sh"
  TPUSIM=$bin JOBS=1 sh tools/plan_docs.sh
  grep -E '^\|.*\(MLPerf layout\)' docs/plan.md
}

for current in "${sections[@]}"; do
  index=$((index + 1))
  heading
  "sec_$current"
done
$inplace && printf '\r\033[K' >&2
exit 0
