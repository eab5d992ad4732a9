#!/usr/bin/env python3
"""The figures the docs quote that are cheap to derive again (seconds, not the minutes of
tools/doc_figures.sh), checked against the tree: a drifted figure fails, naming the doc line.

  - the command line's tagline (`tpusim --help`, first line) names the chip generations of the
    chip presets in configs/ (vFIRST to vLAST), and every page that quotes it quotes it as it is;
  - the GPT-3 layout search of docs/getting-started.md, docs/llm.md and docs/plan.md: its count of
    layouts is the product of the documented command's --space values, doubled when the study
    runs megacore (plan adds hardware.megacore on and off, docs/plan.md); its funnel adds up
    (layouts = invalid + do not fit + same Program + skipped + simulated, the rejected rows sum to
    their classes); the three pages quote the same counts.

What it does not derive: figures that need simulations (the plan's winner and step times, the
tables tools/doc_figures.sh prints).

Usage: check_doc_figures.py TPUSIM ROOT   (exit 0 when all hold, 1 with one line per drift)
"""
import json
import math
import pathlib
import re
import subprocess
import sys


def lines_of(root, page):
    return (root / page).read_text().splitlines()


def tagline_drifts(tpusim, root):
    drifts = []
    out = subprocess.run([tpusim, "--help"], capture_output=True, text=True, timeout=30).stdout
    tagline = out.splitlines()[0]
    generations = sorted({int(m.group(1)) for p in (root / "configs").glob("tpu_v*.json")
                          if (m := re.match(r"tpu_v(\d+)", p.stem))})
    want = f"v{generations[0]} to v{generations[-1]}"
    if want not in tagline:
        cli = root / "tools" / "cli" / "cli.cpp"
        at = next((i for i, l in enumerate(cli.read_text().splitlines(), 1)
                   if "CLI::App app{" in l), 0)
        drifts.append(f"tools/cli/cli.cpp:{at}: the tagline '{tagline}' does not say '{want}', "
                      f"the generations of the chip presets in configs/")
    quoted = re.escape(tagline.split("(")[0].strip())
    for page in sorted(root.glob("docs/*.md")) + [root / "README.md"]:
        for i, line in enumerate(page.read_text().splitlines(), 1):
            if re.search(quoted, line) and tagline not in line:
                drifts.append(f"{page.relative_to(root)}:{i}: quotes the tagline otherwise than "
                              f"`tpusim --help` prints it: '{tagline}'")
    return drifts


SUMMARY = re.compile(r"(\d+) layouts: (\d+) invalid, (\d+) do not fit, (\d+) same Program as "
                     r"another, (\d+) skipped by bound, (\d+) simulated")


def plan_command(lines, start):
    """The `tpusim plan` command that begins at line index `start` (continued lines joined)."""
    text = ""
    for line in lines[start:]:
        text += line.strip().rstrip("\\") + " "
        if not line.rstrip().endswith("\\"):
            break
    return text.split()


def megacore(tpusim, root, study, sets):
    args = [tpusim, "validate", str(root / study), "--json"]
    for s in sets:
        args += ["--set", s]
    r = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise SystemExit(f"check_doc_figures: {' '.join(args[1:])}: {r.stderr.strip()}")
    return bool(json.loads(r.stdout)["config"]["hardware"].get("megacore", False))


def gpt3_plan_drifts(tpusim, root):
    drifts = []
    page = "docs/getting-started.md"
    lines = lines_of(root, page)
    start = next(i for i, l in enumerate(lines) if "tpusim plan configs/studies/gpt3" in l)
    words = plan_command(lines, start)
    spaces = [w.split("=", 1) for k, w in zip(words, words[1:]) if k == "--space"]
    values = [v.split(",") for _, v in spaces]
    # The study as the search sees it, at the first layout of the space (its own may not divide).
    sets = [w for k, w in zip(words, words[1:]) if k == "--set"]
    sets += [f"{path}={v.split(',')[0]}" for path, v in spaces]
    named = math.prod(len(v) for v in values)
    layouts = named * (2 if megacore(tpusim, root, words[2], sets) else 1)
    at, m = next((i, SUMMARY.search(l)) for i, l in enumerate(lines, 1) if SUMMARY.search(l))
    total, invalid, oom, same, skipped, simulated = (int(x) for x in m.groups())
    if total != layouts:
        drifts.append(f"{page}:{at}: {total} layouts, but the command's --space values make "
                      f"{named}, {layouts} with the megacore axis")
    if total != invalid + oom + same + skipped + simulated:
        drifts.append(f"{page}:{at}: {total} layouts do not add up to the classes "
                      f"({invalid} + {oom} + {same} + {skipped} + {simulated})")
    rows = {"invalid": 0, "fit": 0}
    for line in lines[at:]:
        r = re.match(r"\s+(\d+) (invalid|does not fit)", line)
        if r:
            rows["invalid" if r.group(2) == "invalid" else "fit"] += int(r.group(1))
        if line.startswith("Winner:"):
            break
    if (rows["invalid"], rows["fit"]) != (invalid, oom):
        drifts.append(f"{page}:{at}: the rejected rows below it count {rows['invalid']} invalid "
                      f"and {rows['fit']} that do not fit, the line {invalid} and {oom}")
    # The other pages quote the same search.
    for other, pattern in [
        ("docs/plan.md", r"GPT-3 175B on 1024 v4 chips \((\d+) layouts, (\d+) simulated\)"),
        ("docs/llm.md", r"searches (\d+) layouts: the (\d+) of the named axes")]:
        for i, line in enumerate(lines_of(root, other), 1):
            q = re.search(pattern, line)
            if not q:
                continue
            a, b = int(q.group(1)), int(q.group(2))
            want = (total, simulated) if other == "docs/plan.md" else (total, named)
            if (a, b) != want:
                drifts.append(f"{other}:{i}: quotes {a} and {b} where {page}:{at} and the "
                              f"command give {want[0]} and {want[1]}")
    return drifts


def main():
    tpusim, root = sys.argv[1], pathlib.Path(sys.argv[2])
    drifts = tagline_drifts(tpusim, root) + gpt3_plan_drifts(tpusim, root)
    for d in drifts:
        print(d)
    return 1 if drifts else 0


if __name__ == "__main__":
    sys.exit(main())
