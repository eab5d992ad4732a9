"""tools/quickstart.sh's build progress (issue 51): on a terminal one line that shows the step
(percent done, the file) and the time left, estimated as elapsed x (100 - p) / p; piped, nothing.
The printer runs on the build's output as quickstart.sh feeds it (`--progress LOG`), here fed
with lines as Make prints them."""
import os
import pathlib
import pty
import re
import subprocess
import time

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "tools" / "quickstart.sh"
LINES = ["-- Configuring done",
         "[ 25%] Building CXX object CMakeFiles/tpusim_core.dir/core/config.cpp.o",
         "[ 50%] Building CXX object CMakeFiles/tpusim_sim.dir/sim/run/simulation.cpp.o"]


def feed(proc, pause_s):
    """Writes LINES to the printer, `pause_s` seconds before each line that has a percent."""
    for line in LINES:
        if line.startswith("["):
            time.sleep(pause_s)
        proc.stdin.write((line + "\n").encode())
        proc.stdin.flush()
    proc.stdin.close()


def test_on_a_terminal_it_shows_the_step_and_the_time_left(tmp_path):
    log = tmp_path / "build.log"
    leader, follower = pty.openpty()
    proc = subprocess.Popen(["bash", str(SCRIPT), "--progress", str(log)], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    feed(proc, 1.1)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal is closed once the printer exits
            break
        if not chunk:
            break
        out += chunk
    assert proc.wait(timeout=10) == 0
    os.close(leader)
    text = out.decode()
    shown = re.findall(r"\[ *(\d+)%\] (\d+)m(\d\d)s, about (\d+)m(\d\d)s left: (\S+)", text)
    assert [(p, f) for p, _, _, _, _, f in shown] == [
        ("25", "core/config.cpp"), ("50", "sim/run/simulation.cpp")]
    for pct, em, es, lm, ls, _ in shown:
        elapsed, left = int(em) * 60 + int(es), int(lm) * 60 + int(ls)
        assert elapsed >= 1
        assert left == elapsed * (100 - int(pct)) // int(pct)
    # The line is redrawn in place and cleared at the end; the log holds every line.
    assert "\r\x1b[K" in text and text.endswith("\r\x1b[K")
    assert log.read_text().splitlines() == LINES


def test_piped_it_is_quiet_and_logs_everything(tmp_path):
    log = tmp_path / "build.log"
    proc = subprocess.Popen(["bash", str(SCRIPT), "--progress", str(log)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    feed(proc, 0)
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.wait(timeout=10)
    assert proc.returncode == 0
    assert (out, err) == (b"", b"")
    assert log.read_text().splitlines() == LINES
