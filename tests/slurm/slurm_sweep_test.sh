#!/usr/bin/env bash
# Runs the Slurm job-array sweep and merge exactly as docs/studies.md documents them, against a
# one-node Slurm cluster this script starts itself (munged, slurmctld, slurmd on localhost, from
# Debian's slurm-wlm and munge), then checks the merged results against an unsharded sweep.
# Every daemon it starts is stopped by its process id on exit. Exit codes: 0 passed, 1 failed,
# 77 skipped (the reason is printed), as ctest's SKIP_RETURN_CODE.
#
# usage: tests/slurm/slurm_sweep_test.sh BUILD_DIR [TIMEOUT_SECONDS]
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:?usage: $0 BUILD_DIR [TIMEOUT_SECONDS]}" && pwd)
LIMIT=${2:-240}
skip() { echo "SKIPPED: $*" >&2; exit 77; }
fail() { echo "FAILED: $*" >&2; exit 1; }

for cmd in munged slurmctld slurmd sbatch squeue scontrol; do
  command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] ||
    skip "$cmd not found (Debian packages slurm-wlm and munge; tools/install-deps.sh installs them)"
done
export PATH="$BUILD/bin:$PATH:/usr/sbin"
[ -x "$BUILD/bin/tpusim" ] || fail "$BUILD/bin/tpusim is not built"
[ "$(id -u)" -eq 0 ] || skip "not root: the test starts its own munged, slurmctld and slurmd (SlurmUser=root), which needs root"

WORK=$(mktemp -d /tmp/tpusim_slurm.XXXXXX)
chmod 755 "$WORK"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
  done
  [ -n "${KEEP_SLURM_WORK:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# A free TCP port on localhost (one for slurmctld, one for slurmd).
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# munged with its own socket, key and state in $WORK (the system's, if any, is left alone).
mkdir -p "$WORK/munge"
chmod 700 "$WORK/munge"
dd if=/dev/urandom of="$WORK/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$WORK/munge/munge.key"
SOCKET="$WORK/munge/munge.socket"
munged --foreground --force --socket="$SOCKET" --key-file="$WORK/munge/munge.key" \
  --log-file="$WORK/munge/munged.log" --seed-file="$WORK/munge/munged.seed" \
  --pid-file="$WORK/munge/munged.pid" >"$WORK/munge/stdout" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do [ -S "$SOCKET" ] && break; sleep 0.1; done
[ -S "$SOCKET" ] || skip "munged did not start: $(tail -3 "$WORK/munge/munged.log" "$WORK/munge/stdout" 2>/dev/null | tr '\n' ' ')"

CPUS=$(nproc)
HOST=$(hostname -s)
mkdir -p "$WORK/state" "$WORK/spool" "$WORK/log"
cat >"$WORK/slurm.conf" <<CONF
ClusterName=tpusimtest
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCKET
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
SlurmctldLogFile=$WORK/log/slurmctld.log
SlurmdLogFile=$WORK/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmdTimeout=60
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS State=UNKNOWN
PartitionName=tpusim Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$WORK/slurm.conf"

slurmctld -D -i -f "$SLURM_CONF" >"$WORK/log/slurmctld.out" 2>&1 &
PIDS+=($!)
slurmd -D -f "$SLURM_CONF" -N "$HOST" >"$WORK/log/slurmd.out" 2>&1 &
PIDS+=($!)
ready=""
for _ in $(seq 100); do
  state=$(sinfo -h -N -o '%t' 2>/dev/null | head -1)
  case "$state" in idle*|mix*|alloc*) ready=1; break ;; esac
  sleep 0.2
done
[ -n "$ready" ] || skip "the one-node Slurm did not come up (node state '${state:-none}'): $(tail -2 "$WORK/log/slurmctld.log" "$WORK/log/slurmd.log" "$WORK/log/slurmd.out" 2>/dev/null | tr '\n' ' ')"
echo "slurm: node $HOST up with $CPUS CPUs (slurm.conf in $WORK)"

# The two documented blocks, verbatim from docs/studies.md: the batch script, then the
# submission of the array and of the merge that waits for it.
/usr/bin/python3 - "$SRC/docs/studies.md" "$WORK" <<'PY' || fail "docs/studies.md: the sbatch blocks were not found"
import re, sys
text = open(sys.argv[1]).read()
blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
script = [b for b in blocks if "# sweep.sbatch" in b]
submit = [b for b in blocks if "sbatch --parsable" in b]
assert script and submit
open(sys.argv[2] + "/sweep.sbatch", "w").write(script[0])
open(sys.argv[2] + "/submit.sh", "w").write(submit[0])
PY
cd "$WORK" || fail "cd $WORK"
ln -s "$SRC/configs" configs
SWEEP=configs/studies/sweeps/bert_weak_scaling.json
echo "submitting (docs/studies.md):"
sed 's/^/  /' submit.sh
bash -e submit.sh >submit.out 2>&1 || fail "submitting failed: $(cat submit.out)"
deadline=$((SECONDS + LIMIT))
while [ -n "$(squeue -h 2>/dev/null)" ]; do
  [ $SECONDS -lt $deadline ] || { squeue; fail "jobs still queued or running after ${LIMIT}s"; }
  sleep 1
done
[ -f out/all/results.csv ] || fail "the merge job wrote no out/all/results.csv ($(cat slurm-*.out 2>/dev/null | tail -5 | tr '\n' ' '))"
ls shard_*.log >/dev/null 2>&1 || fail "no shard logs: the array tasks did not run"
[ -f out/plots/step_time.svg ] || fail "the plot after the merge wrote no out/plots/step_time.svg"

# The merged sweep must be the unsharded sweep: the same points, all ok, the same step times.
tpusim sweep "$SWEEP" -j 2 --out "$WORK/local" >/dev/null 2>&1 || fail "the local sweep failed"
/usr/bin/python3 - out/all/results.csv local/results.csv <<'PY' || fail "merged results differ from the unsharded sweep"
import csv, sys
merged = {r["point"]: r for r in csv.DictReader(open(sys.argv[1]))}
local = {r["point"]: r for r in csv.DictReader(open(sys.argv[2]))}
assert merged.keys() == local.keys(), (sorted(merged), sorted(local))
for p, r in local.items():
    assert merged[p]["status"] == "ok" == r["status"], (p, merged[p]["status"])
    assert merged[p]["step_time_ms"] == r["step_time_ms"], (p, merged[p]["step_time_ms"], r["step_time_ms"])
print(f"merged {len(merged)} points: all ok, step times equal to the unsharded sweep")
PY
echo "PASSED: 8-task job array + dependent merge and plot on a one-node Slurm"
