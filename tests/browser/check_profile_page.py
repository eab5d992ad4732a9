#!/usr/bin/env python3
"""The op profile's page drawn by a real browser: `tpusim profile` writes profile.html, headless
Chromium (Debian's `chromium`, tools/install-deps.sh) runs its scripts and dumps the DOM, and the
DOM must hold what profile.json says: one roofline point per compute op with FLOPs and HBM bytes
(each naming its op), one table row per op and per layer, one bar per nonzero part of the step,
the bars' widths in proportion to the parts' times. A screenshot must not be blank.

usage: check_profile_page.py TPUSIM_BINARY SOURCE_DIR
Exit 77 (ctest: skipped) with the reason when no chromium is installed.
"""
import html.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zlib
import struct

STUDY = "configs/studies/bert_large_16.json"


class Dom(html.parser.HTMLParser):
    """The elements of the dumped DOM with their attributes, by class."""

    def __init__(self):
        super().__init__()
        self.by_class = {}
        self.body = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        for c in (a.get("class") or "").split():
            self.by_class.setdefault(c, []).append((tag, a))


def browser():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run_browser(chromium, args, timeout=120):
    # A fresh profile folder each time; no GPU, no sandbox (root in CI), no network needed.
    with tempfile.TemporaryDirectory() as home:
        cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--user-data-dir=" + home, "--virtual-time-budget=5000"] + args
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def png_nonblank(path):
    """True if the PNG has more than one distinct byte value in its decoded rows."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    raw = zlib.decompress(idat)
    return len(set(raw[1000:200000])) > 4


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    tpusim, source = sys.argv[1], sys.argv[2]
    chromium = browser()
    if chromium is None:
        print("skipped: no chromium on PATH (tools/install-deps.sh installs Debian's chromium)")
        return 77
    out = tempfile.mkdtemp(prefix="tpusim_profile_page_")
    try:
        subprocess.run([tpusim, "profile", STUDY, "--out", out, "--set", "workload.layers=2"],
                       cwd=source, check=True, capture_output=True, timeout=300)
        profile = json.load(open(os.path.join(out, "profile.json")))
        page = "file://" + os.path.join(out, "profile.html")
        r = run_browser(chromium, ["--dump-dom", page])
        if r.returncode != 0:
            print("chromium failed:", r.stderr[-2000:])
            return 1
        dom = Dom()
        dom.feed(r.stdout)
        failures = []

        def check(ok, what):
            if not ok:
                failures.append(what)

        check(dom.body.get("data-rendered") == "yes", "the page's script did not run to its end")
        compute = [o for o in profile["ops"] if o["type"] == "compute"]
        on_roofline = [o for o in compute if o["flops"] > 0 and o["hbm_bytes"] > 0]
        points = dom.by_class.get("roofline-point", [])
        check(len(on_roofline) > 0, "no op has FLOPs and bytes")
        check(len(points) == len(on_roofline) == profile["roofline_ops"],
              f"{len(points)} roofline points for {len(on_roofline)} ops with FLOPs and bytes")
        check(sorted(int(a["data-op"]) for _, a in points) == sorted(o["index"] for o in on_roofline),
              "the roofline's points are not the ops with FLOPs and bytes")
        check(all(t == "circle" for t, _ in points), "a roofline point is not an SVG circle")
        # The points lie in the plot: finite coordinates, a higher rate drawn higher.
        xy = {int(a["data-op"]): (float(a["cx"]), float(a["cy"])) for _, a in points}
        rate = {o["index"]: o["tflop_per_s"] for o in on_roofline}
        ordered = sorted(xy, key=lambda i: rate[i])
        check(all(xy[a][1] >= xy[b][1] - 1e-6 for a, b in zip(ordered, ordered[1:])),
              "a faster op is drawn below a slower one")
        check(len(dom.by_class.get("roof", [])) == 3, "not three roofs (peak, achievable, vector)")
        rows = dom.by_class.get("op-row", [])
        check(len(rows) == len(profile["ops"]), f"{len(rows)} op rows for {len(profile['ops'])} ops")
        layers = dom.by_class.get("layer-row", [])
        check(len(layers) == len(profile["layers"]),
              f"{len(layers)} layer rows for {len(profile['layers'])} layers")
        parts = [p for p in profile["step"]["parts"] if p["time_ms"] > 0]
        bars = dom.by_class.get("step-part", [])
        check([a["data-part"] for _, a in bars] == [p["part"] for p in parts],
              "the step's bars are not its nonzero parts in order")
        total = profile["step"]["step_time_ms"]
        for (_, a), p in zip(bars, parts):
            want = 900 * p["time_ms"] / total
            check(abs(float(a["width"]) - max(want, 0.5)) < 1e-3 * max(want, 1),
                  f"bar {p['part']}: width {a['width']}, expected {want}")
        shot = os.path.join(out, "shot.png")
        s = run_browser(chromium, ["--screenshot=" + shot, "--window-size=1000,1200", page])
        check(s.returncode == 0 and os.path.exists(shot), "no screenshot: " + s.stderr[-500:])
        if os.path.exists(shot):
            check(png_nonblank(shot), "the screenshot is blank")
        for f in failures:
            print("FAIL:", f)
        print(f"{len(points)} roofline points, {len(rows)} op rows, {len(layers)} layer rows, "
              f"{len(bars)} step bars in the DOM after the page's scripts ran")
        return 1 if failures else 0
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
