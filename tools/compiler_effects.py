#!/usr/bin/env python3
"""What each compiler mechanism moves (docs/compiler.md): the device step of every calibration
point and detection study with all mechanisms off (the model before the compiler stage), all on,
and each one off in turn. Usage: tools/compiler_effects.py [--bin build/bin/tpusim] [--only S]
[--set path=value]... Prints a Markdown table (step ms; error against the measured step where
there is one)."""
import argparse, json, os, subprocess, sys

# (study, measured step or period ms or None)
POINTS = [
    ("bert_large_4096", 46.3), ("resnet50_4096", 14.3), ("resnet50_16", 131.2),
    ("resnet50_64", 131.0), ("resnet50_128", 136.9), ("resnet50_256", 79.3),
    ("resnet50_512", 44.2), ("resnet50_1024", 25.2),
    ("ssd_v06_16", 117.5), ("ssd_v06_64", 35.5), ("ssd_v06_128", 25.0), ("ssd_v06_256", 24.5),
    ("ssd_v06_512", 17.2), ("ssd_v06_1024", 13.8),
    ("maskrcnn_v06_16", 453), ("maskrcnn_v06_64", 245), ("maskrcnn_v06_128", 149),
]
OFF = {
    "fusion": ["compiler.fusion=none"],
    "tiles": ["compiler.tiled_layouts=false"],
    "copies": ["compiler.spmd_copies=false"],
    "launch": ["hardware.calibration.collective_launch_ns=0"],
}
# The model before the compiler stage: every mechanism off and the MXU efficiency it was
# calibrated with (0.75; refitted to 0.62 on BERT with the compiler stage).
BEFORE = [s for v in OFF.values() for s in v] + ["hardware.calibration.mxu_efficiency=0.75"]


def step_ms(binary, study, sets):
    cmd = [binary, "run", study, "--json"]
    for s in sets:
        cmd += ["--set", s]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{study}: {out.stderr.strip()}")
    return json.loads(out.stdout)["step_time_ms"]


def main():
    ap = argparse.ArgumentParser()
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    ap.add_argument("--bin", default=os.path.join(root, "build", "bin", "tpusim"))
    ap.add_argument("--only", default="")
    ap.add_argument("--set", action="append", default=[])
    a = ap.parse_args()
    cols = ["before", "after"] + [f"{k} off" for k in OFF]
    print("| study | measured ms | " + " | ".join(cols) + " | error before | error after |")
    print("|---|---|" + "---|" * len(cols) + "---|---|")
    for name, measured in POINTS:
        if a.only and a.only not in name:
            continue
        study = os.path.join(root, "configs", "studies", name + ".json")
        before = step_ms(a.bin, study, a.set + BEFORE)
        after = step_ms(a.bin, study, a.set)
        offs = [step_ms(a.bin, study, a.set + OFF[k]) for k in OFF]
        err = lambda t: f"{(t - measured) / measured * 100:+.1f} %" if measured else "-"
        vals = " | ".join(f"{t:.2f}" for t in [before, after] + offs)
        print(f"| {name} | {measured} | {vals} | {err(before)} | {err(after)} |", flush=True)


if __name__ == "__main__":
    main()
