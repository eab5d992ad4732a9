#!/usr/bin/env python3
"""Benchmark: the sweep's own CPU per point for keeping results.csv, at 10,000 points (issue 51:
it was 3.3 s a point when the file was rebuilt from every point file after each point; now a
row is appended). A 10,000-point sweep of a small BERT study (2x2 chips, one layer) is prepared
with every point finished but the last PENDING (their point files copied from one real point),
then resumed twice: once running the PENDING points, once with nothing left to run. The
difference of the sweep process's own CPU time (utime + stime of the parent, not of the
points' processes), over PENDING, is the cost of a point to the sweep at that size: its
bookkeeping, its process and its row of results.csv.

Usage: tools/bench_results_csv.py [BUILD_DIR] [POINTS] [PENDING]   (defaults: build 10000 20)
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent.parent


def own_cpu_s(args):
    """Runs `args`; returns (exit code, CPU seconds of that process itself, wall seconds)."""
    tick = os.sysconf("SC_CLK_TCK")
    start = time.monotonic()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=HERE)
    cpu = 0.0
    while proc.poll() is None:
        try:
            fields = pathlib.Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            cpu = (int(fields[11]) + int(fields[12])) / tick  # utime, stime: its own, not children's
        except (OSError, IndexError, ValueError):
            pass
        time.sleep(0.005)
    return proc.returncode, cpu, time.monotonic() - start


def main():
    build = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else HERE / "build")
    points = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
    pending = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    tpusim = str(build / "bin" / "tpusim")
    with tempfile.TemporaryDirectory(prefix="tpusim_bench_csv_") as tmp:
        sweep = pathlib.Path(tmp) / "sweep.json"
        sweep.write_text(json.dumps({
            "base": {"workload": {"model": "bert_large", "global_batch": 8, "layers": 1},
                     "topology": "2x2"},
            "axes": [{"path": "hardware.ici.bandwidth_GBps",
                      "values": [10 + k / 100 for k in range(points)]}]}))
        out = pathlib.Path(tmp) / "out"
        # One real point (shard 1 of POINTS holds point 0), then every other point but the last
        # PENDING finished as a copy of it.
        subprocess.run([tpusim, "sweep", str(sweep), "--out", str(out), "--shard",
                        f"1/{points}"], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, cwd=HERE)
        ids = [p["id"] for p in json.loads((out / "sweep.json").read_text())["points"]]
        assert len(ids) == points, f"sweep.json lists {len(ids)} points"
        first = out / "points" / f"{ids[0]}.json"
        for i in ids[1:points - pending]:
            shutil.copyfile(first, out / "points" / f"{i}.json")
        code, with_points, wall = own_cpu_s([tpusim, "sweep", str(sweep), "--out", str(out)])
        assert code == 0, f"the sweep exited with {code}"
        code, without, _ = own_cpu_s([tpusim, "sweep", str(sweep), "--out", str(out)])
        assert code == 0, f"the resumed sweep exited with {code}"
        rows = len((out / "results.csv").read_text().splitlines()) - 1
    print(f"bench_results_csv: {points} points ({rows} rows), {pending} run: the sweep's own CPU "
          f"{with_points:.2f} s with them, {without:.2f} s with nothing to run ({wall:.1f} s wall); "
          f"{(with_points - without) / pending * 1e3:.1f} ms of its own CPU per point")


if __name__ == "__main__":
    main()
