"""The Python module against the command it drives: the same numbers as `tpusim ... --json`,
overrides that take effect, errors that name what is wrong. Run with
PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python (ctest does)."""
import json
import os
import subprocess

import pytest

import tpusim

SRC = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
STUDY = os.path.join(SRC, "configs", "studies", "bert_large_16.json")


def cli_json(*args):
    out = subprocess.run([tpusim.binary(), *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_run_returns_the_command_report():
    report = tpusim.run(STUDY)
    cli = cli_json("run", STUDY, "--json")
    assert report["step_time_ms"] == cli["step_time_ms"]
    assert report["chips"] == 16 and report["cores"] == 32
    # examples per second is the global batch over the step time
    assert report["examples_per_s"] == pytest.approx(
        report["global_batch"] / (report["step_time_ms"] / 1e3), rel=1e-9)


def test_sets_from_a_dict_reach_the_study_and_less_bandwidth_is_never_faster():
    base = tpusim.run(STUDY)
    slow = tpusim.run(STUDY, sets={"hardware.ici.bandwidth_GBps": 25})
    assert slow["config"]["hardware"]["ici"]["bandwidth_GBps"] == 25
    assert slow["step_time_ms"] >= base["step_time_ms"]
    assert slow["communication_ms"] > base["communication_ms"]


def test_a_study_given_as_a_dict_runs_like_the_file():
    with open(STUDY) as f:
        doc = json.load(f)
    assert tpusim.run(doc)["step_time_ms"] == tpusim.run(STUDY)["step_time_ms"]


def test_validate_reports_what_it_checked_and_raises_config_error_on_bad_input():
    v = tpusim.validate(STUDY)
    assert v["model"] == "bert_large" and v["chips"] == 16 and v["cores"] == 32
    assert v["ops"] > v["collectives"] > 0
    assert v["fits_memory"] is True
    with pytest.raises(tpusim.ConfigError) as e:
        tpusim.validate(STUDY, sets=["workload.global_batch=-1"])
    assert e.value.exit_code == 2
    assert len(e.value.problems) == 1
    assert e.value.problems[0].startswith("workload.global_batch: -1")


def test_collective_matches_the_ring_bound():
    # An all-reduce of S bytes over G cores moves at least 2(G-1)/G * S per core; the bus
    # bandwidth tpusim reports is that amount over the time.
    r = tpusim.collective("all-reduce", "4MiB", topology="2x2")
    size, cores = 4 * 2**20, 8
    assert r["bytes"] == size and r["cores"] == cores
    moved = 2 * (cores - 1) / cores * size
    assert r["busbw_GBps"] == pytest.approx(moved / r["collective_time_ns"], rel=1e-6)


def test_params_lists_declared_parameters_with_units():
    ici = {p["path"]: p for p in tpusim.params("hardware.ici")}
    assert ici["hardware.ici.bandwidth_GBps"]["unit"] == "GB/s"


def test_sweep_rows_are_the_points_runs(tmp_path):
    spec = {"base": STUDY,
            "axes": [{"path": "hardware.ici.bandwidth_GBps", "values": [50, 100]}]}
    rows = tpusim.sweep(spec, out=tmp_path / "sw", jobs=2, as_dataframe=False)
    assert [r["status"] for r in rows] == ["ok", "ok"]
    assert all(isinstance(r["id"], str) and len(r["id"]) == 16 for r in rows)
    for row in rows:
        point = tpusim.run(STUDY, sets={"hardware.ici.bandwidth_GBps": row["hardware.ici.bandwidth_GBps"]})
        # results.csv keeps 9 significant digits
        assert row["step_time_ms"] == pytest.approx(point["step_time_ms"], rel=1e-8)
    assert (tmp_path / "sw" / "results.csv").exists()
    assert rows == tpusim.results(tmp_path / "sw" / "results.csv", as_dataframe=False)


def test_sweep_returns_a_dataframe_when_pandas_is_installed(tmp_path):
    pandas = pytest.importorskip("pandas")
    spec = {"base": STUDY, "axes": [{"path": "hardware.ici.bandwidth_GBps", "values": [100]}]}
    df = tpusim.sweep(spec)
    assert isinstance(df, pandas.DataFrame) and len(df) == 1


def test_bad_sweep_raises_config_error_naming_the_path():
    with pytest.raises(tpusim.ConfigError) as e:
        tpusim.sweep({"base": STUDY, "axes": []})
    assert any("axes" in p for p in e.value.problems)


def test_trace_info_reads_a_recorded_trace_in_process(tmp_path):
    trace = tmp_path / "t.json"
    report = tpusim.run(STUDY, record_trace=trace)
    info = tpusim.trace_info(trace)
    assert info == cli_json("trace", "info", str(trace), "--json")
    assert info["recorded_on"]["source"] == "tpusim run"
    assert tpusim.replay(trace)["step_time_ms"] == report["step_time_ms"]
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(tpusim.ConfigError) as e:
        tpusim.trace_info(bad)
    assert "malformed JSON" in str(e.value)


def test_the_version_is_the_binarys():
    assert tpusim.version() == tpusim.__version__
    out = subprocess.run([tpusim.binary(), "run", STUDY, "--json"], capture_output=True,
                         text=True, check=True)
    assert json.loads(out.stdout)["tpusim_version"] == tpusim.version()


def test_a_program_that_does_not_fit_the_hbm():
    tiny = {"hardware.hbm.GiB_per_core": 0.5}
    v = tpusim.validate(STUDY, sets=tiny)
    assert v["fits_memory"] is False
    with pytest.raises(tpusim.RunFailed) as e:
        tpusim.run(STUDY, sets=tiny)
    assert e.value.exit_code == 1
    assert "out of memory" in e.value.problems[0]
    assert isinstance(e.value.report, dict)


def test_results_of_a_bad_table_raises_config_error_with_problems(tmp_path):
    bad = tmp_path / "x.csv"
    bad.write_text('a,b\n1,2,3\n')
    with pytest.raises(tpusim.ConfigError) as e:
        tpusim.results(bad)
    assert e.value.problems and str(bad) in e.value.problems[0]
    with pytest.raises(tpusim.ConfigError):
        tpusim.results(tmp_path / "missing.csv")


def test_a_path_with_a_nul_byte_is_refused_not_cut(tmp_path):
    real = tmp_path / "r.csv"
    real.write_text("status\nok\n")
    for call in (tpusim.results, tpusim.trace_info):
        with pytest.raises(tpusim.ConfigError) as e:
            call(str(real) + "\0.ignored")
        assert "NUL byte" in e.value.problems[0]


def test_a_module_without_its_compiled_part_says_which_target_to_build(tmp_path):
    # The pure-Python part alone (as in python/ of the source tree, or a build that made only
    # the tpusim target): the import names the missing piece and the target that builds it.
    pkg = tmp_path / "tpusim"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(open(os.path.join(SRC, "python", "tpusim", "__init__.py")).read())
    r = subprocess.run(["/usr/bin/python3", "-c", "import tpusim"], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert r.returncode == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: tpusim: the compiled part of the module (_tpusim)")
    assert "cmake --build build --target tpusim_python" in last
    assert str(pkg) in last


# Issue 51, item 32: the module raises its own errors, never an exception of the machinery
# underneath (json.JSONDecodeError, subprocess.TimeoutExpired, FileNotFoundError).

def test_an_option_given_as_a_study_or_filter_is_a_config_error_not_a_json_error():
    for call in (lambda: tpusim.run("-h"), lambda: tpusim.params("--help"),
                 lambda: tpusim.validate("--version")):
        with pytest.raises(tpusim.ConfigError) as e:
            call()
        assert "starts with '-'" in str(e.value)


def test_a_timeout_is_run_timeout_a_tpusim_error():
    with pytest.raises(tpusim.RunTimeout) as e:
        tpusim.run(STUDY, timeout=0.001)
    assert isinstance(e.value, tpusim.TpusimError)
    assert "0.001 s" in str(e.value)


def test_a_missing_binary_is_a_tpusim_error_naming_it(monkeypatch):
    monkeypatch.setenv("TPUSIM_BINARY", "/nonexistent/tpusim")
    with pytest.raises(tpusim.TpusimError) as e:
        tpusim.run(STUDY)
    assert "/nonexistent/tpusim" in str(e.value)
    assert not isinstance(e.value, FileNotFoundError)


def test_shard_zero_is_refused_not_taken_as_no_shard(tmp_path):
    sweep = {"base": STUDY, "axes": [{"path": "hardware.ici.bandwidth_GBps", "values": [50]}]}
    with pytest.raises(tpusim.ConfigError) as e:
        tpusim.sweep(sweep, out=tmp_path / "s", shard=0)
    assert "--shard 0" in str(e.value)


def test_results_refuse_a_cell_that_is_not_a_finite_number(tmp_path):
    for bad in ("inf", "nan", "-inf", "1e999"):
        csv = tmp_path / "results.csv"
        csv.write_text("point,id,status,x,series,chips,step_time_ms\n"
                       "0,a,ok,1,s,16,1.5\n1,b,ok,2,s,16,%s\n" % bad)
        with pytest.raises(tpusim.ConfigError) as e:
            tpusim.results(csv, as_dataframe=False)
        assert "step_time_ms" in str(e.value) and bad in str(e.value)
