#!/usr/bin/env python3
"""Every shipped study simulated both ways (and three trained, two at other network levels): sim.symmetry=auto (one fundamental domain of the
torus where the machine and the program are symmetric) and sim.symmetry=off (every core). The
two reports must be identical in every figure (times, shares, memory, links, collectives), all
but what measures the simulation itself (wall time, kernel events, network work items, the
'simulation' line, the SystemC objects elaborated). The language-model studies run with 2 of their layers (the full simulation
of all 96 or 118 takes a minute each; the symmetry does not depend on the layer count).

usage: both_ways.py TPUSIM_BINARY SOURCE_DIR [STUDY ...]
(with STUDY names, e.g. bert_large_4x4096_v4, only those studies are run, each once with `run`)
"""
import concurrent.futures
import glob
import json
import os
import subprocess
import sys

# The other network levels on two studies: the projection is the same, the levels' arithmetic not.
OTHER_LEVELS = [("resnet50_256.json", "packet"), ("ssd_v06_128.json", "flow")]
# tpusim train (hosts feeding the cores: the domain then holds whole host blocks) on three.
TRAINED = ["ssd_v06_128.json", "maskrcnn_v06_16.json", "maskrcnn_512.json"]

IGNORED = {"wall_s", "kernel_events", "network_work_items", "simulation", "analysis_s", "systemc_objects"}


def differences(a, b, path=""):
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k in IGNORED:
                continue
            if k not in a or k not in b:
                out.append(f"{path}/{k} in one report only")
            else:
                out += differences(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} against {len(b)} entries"]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += differences(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [f"{path}: {a!r} against {b!r}"]


def run(binary, study, mode, level=None, command="run"):
    args = [binary, command, study, "--json", "--set", f"sim.symmetry={mode}"]
    if level:
        args += ["--set", f"network.fidelity={level}"]
    with open(study) as f:
        text = f.read()
    llm_markers = ("decoder_lm", "palm_", "gpt3_", "decoder_1b", "mixtral_", "deepseek_", "llama",
                   "gemma_", "gptj_")
    if any(m in text for m in llm_markers):
        # Two layers per pipeline stage (and repeat), so a pipelined study keeps its stages.
        par = json.loads(text).get("parallelism", {})
        stages = par.get("pipeline", 1) * max(1, par.get("pipeline_repeats", 1))
        # DeepSeek-V3's first 3 layers are dense: at least 4 layers keep one mixture-of-experts
        # layer (as many as the stages and repeats where those are more).
        layers = stages * -(-4 // stages) if "deepseek_" in text else 2 * stages
        args += ["--set", f"workload.layers={layers}"]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
    report = json.loads(p.stdout)
    report.pop("config", None)  # holds sim.symmetry itself
    if command == "train":  # the simulated loop's line
        report["simulation"] = report["simulated"].pop("simulation")
    return report


def check(binary, case):
    study, level, command = case
    auto = run(binary, study, "auto", level, command)
    full = run(binary, study, "off", level, command)
    name = os.path.basename(study) + (f" at the {level} level" if level else "")
    name = f"{command} {name}"
    return name, auto["simulation"], full["simulation"], differences(auto, full)


def main():
    binary, source, chosen = sys.argv[1], sys.argv[2], sys.argv[3:]
    studies = sorted(glob.glob(os.path.join(source, "configs", "studies", "*.json")))
    at = lambda name: os.path.join(source, "configs", "studies", name)
    if chosen:
        cases = [(at(name + ".json"), None, "run") for name in chosen]
    else:
        cases = [(s, None, "run") for s in studies]
        cases += [(at(s), lvl, "run") for s, lvl in OTHER_LEVELS]
        cases += [(at(s), None, "train") for s in TRAINED]
    failed = symmetric = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for name, mode, full_mode, diffs in pool.map(lambda c: check(binary, c), cases):
            if not full_mode.startswith("full: sim.symmetry=off"):
                print(f"FAIL {name}: sim.symmetry=off ran '{full_mode}'")
                failed += 1
            symmetric += mode.startswith("symmetric:")
            if diffs:
                failed += 1
                print(f"FAIL {name} ({mode}): {len(diffs)} figures differ: " + "; ".join(diffs[:5]))
            else:
                print(f"ok   {name}: {mode}")
    print(f"{len(cases)} runs, {symmetric} simulated symmetrically, {failed} failed")
    # The check means something only if most shipped studies do take the symmetric path.
    if not chosen and symmetric * 2 < len(cases):
        print("FAIL: fewer than half of the studies were simulated symmetrically")
        failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
