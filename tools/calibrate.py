#!/usr/bin/env python3
"""Prints predicted against measured for the calibration points of
docs/reference.md, for the current configs (or with --set overrides).
Usage: tools/calibrate.py [--bin build/bin/tpusim] [--set path=value]... [--markdown]"""
import argparse, json, subprocess, sys, os

# (study, measured step ms, measured comm share or None, source)
POINTS = [
    ("bert_large_4096", 46.3, 0.273, "mlperf07 TF block markers; paper (share)"),
    ("resnet50_4096", 14.3, None, "mlperf07 block and eval spacing"),
    ("resnet50_16", 131.2, None, "mlperf06"),
    ("resnet50_64", 131.0, None, "mlperf06"),
    ("resnet50_128", 136.9, None, "mlperf06"),
    ("resnet50_256", 79.3, None, "mlperf06"),
    ("resnet50_512", 44.2, None, "mlperf06"),
    ("resnet50_1024", 25.2, None, "mlperf06"),
]

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin", "tpusim"))
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    root = os.path.join(os.path.dirname(__file__), "..")
    rows = []
    for study, ms, share, src in POINTS:
        if a.only and a.only not in study:
            continue
        cmd = [a.bin, "run", os.path.join(root, "configs", "studies", study + ".json"), "--json"]
        for s in a.set:
            cmd += ["--set", s]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{study}: failed: {out.stderr.strip()}", file=sys.stderr)
            continue
        j = json.loads(out.stdout)
        rows.append((study, j["chips"], ms, j["step_time_ms"], share, j["comm_share"], src, j))
    if a.markdown:
        print("| study | chips | measured step ms | predicted step ms | error | measured comm share | predicted comm share |")
        print("|---|---|---|---|---|---|---|")
    for study, chips, ms, pred, share, pshare, src, j in rows:
        err = (pred - ms) / ms * 100
        ms_share = f"{share*100:.1f} %" if share is not None else "-"
        if a.markdown:
            print(f"| {study} | {chips} | {ms:.1f} | {pred:.1f} | {err:+.1f} % | {ms_share} | {pshare*100:.1f} % |")
        else:
            print(f"{study:18s} {chips:5d} chips  measured {ms:7.1f} ms  predicted {pred:7.2f} ms  ({err:+6.1f} %)  "
                  f"share {ms_share:>7s} vs {pshare*100:5.1f} %  compute {j['compute_ms']:.2f} exposed {j['exposed_communication_ms']:.2f}")

if __name__ == "__main__":
    main()
