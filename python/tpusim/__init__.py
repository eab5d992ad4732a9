"""tpusim from Python: run studies, validate them, time collectives, run sweeps.

Every simulation runs in its own ``tpusim`` process, as the command line does (SystemC elaborates
one design per process): ``run``, ``validate``, ``collective``, ``replay``, ``params`` and
``sweep`` start the binary and decode its JSON output. Reading results tables and traces happens
in this process (the ``_tpusim`` extension, C++ through pybind11). See docs/python.md.
"""
import json
import os
import shutil
import subprocess
import tempfile

try:
    from . import _tpusim
except ImportError as _e:  # the pure-Python part without its compiled half
    raise ImportError(
        "tpusim: the compiled part of the module (_tpusim) is missing or does not load in "
        f"{os.path.dirname(os.path.abspath(__file__))} ({_e}); build it with "
        "`cmake --build build --target tpusim_python` (tools/quickstart.sh does) and import "
        "tpusim with PYTHONPATH=build/python") from _e

__all__ = ["run", "validate", "collective", "replay", "params", "sweep", "results",
           "trace_info", "binary", "version", "TpusimError", "ConfigError", "RunFailed",
           "RunTimeout"]

__version__ = _tpusim.version()


class TpusimError(Exception):
    """A tpusim command failed. ``exit_code`` and ``stderr`` are the process's; ``problems`` has
    one line per problem (without the "tpusim: error: " prefix)."""

    def __init__(self, message, exit_code=None, stderr="", problems=None, report=None):
        super().__init__(message)
        self.exit_code = exit_code
        self.stderr = stderr
        self.problems = problems or [message]
        self.report = report  # the JSON the command printed before failing, if any


class ConfigError(TpusimError, ValueError):
    """Bad input (exit code 2): each problem names the JSON path, option or file position."""


class RunFailed(TpusimError):
    """A run that failed (exit code 1): a stuck simulation, a program that does not fit the HBM
    (``report`` then holds what the command printed), or a sweep's failed points."""


class RunTimeout(TpusimError):
    """A command that did not finish within its ``timeout`` (seconds); the process is killed."""


def version():
    """The tpusim version of the extension (and of the binary built with it)."""
    return _tpusim.version()


def binary():
    """The tpusim executable: $TPUSIM_BINARY, else the one built next to this package
    (build/bin/tpusim for build/python/tpusim), else ``tpusim`` on PATH."""
    env = os.environ.get("TPUSIM_BINARY")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    built = os.path.normpath(os.path.join(here, "..", "..", "bin", "tpusim"))
    if os.access(built, os.X_OK):
        return built
    found = shutil.which("tpusim")
    if found:
        return found
    raise TpusimError("cannot find the tpusim executable: set TPUSIM_BINARY, or install tpusim "
                      "(cmake --install) so that it is on PATH")


def _set_args(sets):
    """--set options from a dict {"path.to.key": value} or a list of "path=value" strings."""
    if sets is None:
        return []
    if isinstance(sets, dict):
        items = [f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in sets.items()]
    elif isinstance(sets, (list, tuple)):
        items = list(sets)
    else:
        raise TypeError("sets must be a dict {path: value} or a list of 'path=value' strings")
    args = []
    for item in items:
        args += ["--set", item]
    return args


def _invoke(args, timeout=None):
    """Runs tpusim with args; returns stdout. Exit 2 -> ConfigError, 1 -> RunFailed, other
    non-zero -> TpusimError."""
    exe = binary()
    try:
        proc = subprocess.run([exe] + [str(a) for a in args], capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise RunTimeout(f"tpusim {args[0]} did not finish within {timeout} s (timeout); the "
                         "process was stopped") from None
    except OSError as e:
        raise TpusimError(f"cannot run the tpusim executable {exe!r}: {e.strerror or e}; set "
                          "TPUSIM_BINARY to the built binary (build/bin/tpusim)") from None
    if proc.returncode == 0:
        return proc.stdout
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    problems = [l.split(": error: ", 1)[1] if ": error: " in l else l
                for l in lines if "error:" in l or "stuck" in l] or lines
    message = "; ".join(problems) if problems else f"tpusim exited with {proc.returncode}"
    kind = {2: ConfigError, 1: RunFailed}.get(proc.returncode, TpusimError)
    try:
        report = json.loads(proc.stdout) if proc.stdout.strip() else None
    except ValueError:
        report = None
    raise kind(message, proc.returncode, proc.stderr, problems, report)


def _json(text, what):
    """The JSON object a command printed; anything else is a TpusimError saying so."""
    try:
        return json.loads(text)
    except ValueError:
        first = text.strip().splitlines()[0] if text.strip() else "(nothing)"
        raise TpusimError(f"tpusim {what} printed no JSON report (it printed: {first[:120]})") \
            from None


def _positional(value, what):
    """A file or filter given to a command: one that starts with '-' would be read as an option
    (tpusim.run('-h') printed the help), so it is refused."""
    text = os.fspath(value)
    if text.startswith("-"):
        message = f"{what} {text!r}: starts with '-', which the command line reads as an option; " \
                  "give a path (./" + text + ") or name"
        raise ConfigError(message, 2, "", [message])
    return text


class _StudyFile:
    """A study (or sweep) given as a path, or as a dict written to a temporary file."""

    def __init__(self, study):
        self._tmp = None
        if isinstance(study, dict):
            fd, self.path = tempfile.mkstemp(prefix="tpusim_study_", suffix=".json")
            with os.fdopen(fd, "w") as f:
                json.dump(study, f)
            self._tmp = self.path
        elif isinstance(study, (str, os.PathLike)):
            self.path = _positional(study, "study")
        else:
            raise TypeError("study must be a file path or a dict")

    def __enter__(self):
        return self.path

    def __exit__(self, *exc):
        if self._tmp:
            os.unlink(self._tmp)


def run(study, sets=None, timeline=None, record_trace=None, top=None, timeout=None):
    """Simulates one training step of ``study`` (a path or a dict) and returns the report
    (the dict ``tpusim run --json`` prints: step_time_ms, comm_share, collectives, ...)."""
    with _StudyFile(study) as path:
        args = ["run", path, "--json"] + _set_args(sets)
        if timeline:
            args += ["--timeline", os.fspath(timeline)]
        if record_trace:
            args += ["--record-trace", os.fspath(record_trace)]
        if top is not None:
            args += ["--top", str(top)]
        return _json(_invoke(args, timeout), "run")


def validate(study, sets=None):
    """Every check of ``run`` without simulating; returns what was checked (model, topology,
    chips, cores, layout, ops, collectives, fits_memory, memory, the resolved config), also for
    a program that does not fit the HBM (fits_memory False). Raises ConfigError."""
    with _StudyFile(study) as path:
        try:
            return _json(_invoke(["validate", path, "--json"] + _set_args(sets)), "validate")
        except RunFailed as e:
            if isinstance(e.report, dict) and e.report.get("fits_memory") is False:
                return e.report
            raise


def collective(op, bytes, topology=None, algorithm=None, mesh=None, axes=None, sets=None):
    """One collective (``op``: all-reduce, reduce-scatter, all-gather, all-to-all,
    collective-permute) of ``bytes`` (a number or a size such as "64MiB") per core; returns the
    report of ``tpusim collective --json`` (collective_time_ns, algbw_GBps, busbw_GBps, ...)."""
    args = ["collective", "--op", op, "--bytes", str(bytes), "--json"]
    for flag, value in (("--topology", topology), ("--algorithm", algorithm),
                        ("--mesh", mesh), ("--axes", axes)):
        if value is not None:
            args += [flag, str(value)]
    return _json(_invoke(args + _set_args(sets)), "collective")


def replay(trace, topology=None, mesh=None, durations=None, sets=None):
    """Replays a trace file; returns the report (as ``run``, plus a ``trace`` object)."""
    args = ["replay", _positional(trace, "trace"), "--json"]
    for flag, value in (("--topology", topology), ("--mesh", mesh), ("--durations", durations)):
        if value is not None:
            args += [flag, str(value)]
    return _json(_invoke(args + _set_args(sets)), "replay")


def params(filter=None):
    """Every declared parameter (path, type, unit, default, meaning, ...) as a list of dicts."""
    args = ["params", "--json"] + ([_positional(filter, "filter")] if filter else [])
    return _json(_invoke(args), "params")


def _table(rows):
    try:
        import pandas
    except ImportError:
        return rows
    return pandas.DataFrame(rows)


def _native_path(path):
    """A path for the extension, which reads it as a C string: a NUL byte would cut it there, so
    it is refused (ConfigError) rather than read as another file."""
    text = os.fspath(path)
    if "\0" in text:
        message = "%r: a path with a NUL byte; file names cannot hold one" % text
        raise ConfigError(message, 2, "", [message])
    return text


def _native(call, path):
    """Calls the extension on a path; its bad-input errors are ConfigError with .problems."""
    try:
        return call(_native_path(path))
    except _tpusim.NativeConfigError as e:
        raise ConfigError(str(e).strip(), 2, "", str(e).strip().splitlines()) from None


def results(csv_path, as_dataframe=None):
    """A sweep's results.csv as a list of dicts (numbers as numbers, empty cells as None), or a
    pandas DataFrame when pandas is installed (``as_dataframe=False`` forces the list). A file
    that is not a results table raises ConfigError."""
    rows = json.loads(_native(_tpusim.results_json, csv_path))
    return rows if as_dataframe is False else _table(rows)


def sweep(sweep_file, out=None, jobs=1, sets=None, shard=None, as_dataframe=None,
          timeout=None):
    """Runs a sweep (a sweep file path or a dict; see docs/studies.md), each point in its own
    process, and returns its results: one row per point as in results.csv, a list of dicts or a
    pandas DataFrame. ``out`` keeps the sweep directory (rerunning resumes it); without it a
    temporary directory is used and removed. Failed points are rows with status "failed"; bad
    input raises ConfigError."""
    own = out is None
    out_dir = tempfile.mkdtemp(prefix="tpusim_sweep_") if own else os.fspath(out)
    try:
        with _StudyFile(sweep_file) as path:
            args = ["sweep", path, "--out", out_dir, "-j", str(jobs)] + _set_args(sets)
            if shard is not None:  # shard=0 is refused by the command, not taken as no shard
                args += ["--shard", str(shard)]
            try:
                _invoke(args, timeout)
            except RunFailed:
                pass  # failed points are in results.csv with their error
        return results(os.path.join(out_dir, "results.csv"), as_dataframe)
    finally:
        if own:
            shutil.rmtree(out_dir, ignore_errors=True)


def trace_info(trace):
    """What ``tpusim trace info --json`` says about a trace file (read in this process)."""
    return json.loads(_native(_tpusim.trace_info_json, trace))
