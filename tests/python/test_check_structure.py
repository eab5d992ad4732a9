"""tools/check_structure.py against small trees built here: each rule is broken by one file more
(or one line more, one include more) than it allows, and holds at the limit."""
import pathlib
import shutil
import subprocess
import sys

import pytest

CHECKER = pathlib.Path(__file__).resolve().parents[2] / "tools" / "check_structure.py"
README = "For: what this folder is for.\nMay include: core/.\n"


def make_tree(tmp, files=2, body_lines=80, design_folders=("core/",), readme=README):
    (tmp / "docs").mkdir()
    rows = "".join(f"| `{f}` | a folder |\n" for f in design_folders)
    (tmp / "docs" / "design.md").write_text("| folder | what |\n|---|---|\n" + rows)
    core = tmp / "core"
    core.mkdir()
    if readme is not None:
        (core / "README.md").write_text(readme)
    for i in range(files):
        (core / f"f{i}.hpp").write_text("#pragma once\nint f%d();\n" % i)
    # a function whose body, from the line of its '{' to the line of its '}', has body_lines lines
    inner = "".join("  x += 1;  // a { in a comment does not count\n" for _ in range(body_lines - 3))
    (core / "long.cpp").write_text("int g(int x) {\n" + inner + "  return x;\n}\n")
    return tmp


def check(tree):
    r = subprocess.run([sys.executable, str(CHECKER), str(tree)], capture_output=True, text=True)
    return r.returncode, r.stdout.splitlines()


def test_a_tree_at_every_limit_holds(tmp_path):
    code, lines = check(make_tree(tmp_path, files=24, body_lines=80))
    assert (code, lines) == (0, [])


def test_one_file_over_the_folder_limit(tmp_path):
    code, lines = check(make_tree(tmp_path, files=25))
    assert code == 1 and lines == ["core/ holds 26 C++ source files (at most 25)"]


def test_one_line_over_the_function_limit(tmp_path):
    code, lines = check(make_tree(tmp_path, body_lines=81))
    assert code == 1 and lines == ["core/long.cpp:1: a function of 81 lines (at most 80)"]


def test_a_folder_design_md_names_must_exist(tmp_path):
    code, lines = check(make_tree(tmp_path, design_folders=("core/", "gone/")))
    assert code == 1 and lines == ["docs/design.md names folder 'gone/', which does not exist"]


def test_readme_lines_and_unique_names(tmp_path):
    tree = make_tree(tmp_path, readme="For: only the first line.\n", design_folders=("core/", "core/sub/"))
    (tree / "core" / "sub").mkdir()
    (tree / "core" / "sub" / "README.md").write_text(README)
    (tree / "core" / "sub" / "f0.hpp").write_text("#pragma once\n")
    code, lines = check(tree)
    assert code == 1
    assert lines == ["core/README.md has no 'May include:' line",
                     "2 source files are named f0.hpp: core/f0.hpp, core/sub/f0.hpp"]


LONG_FUNCTION = "int h() {\n" + "  h();\n" * 79 + "}\n"  # 81 lines


def add_folder(tree, name, may_include, files):
    """A folder `name` with a README whose 'May include:' line is `may_include`, a design.md row,
    and `files` ({file name: text})."""
    folder = tree / name
    folder.mkdir(parents=True)
    (folder / "README.md").write_text(f"For: a test folder.\nMay include: {may_include}\n")
    with open(tree / "docs" / "design.md", "a") as design:
        design.write(f"| `{name}/` | a folder |\n")
    for file_name, text in files.items():
        (folder / file_name).write_text(text)


def test_every_folder_is_seen_but_top_level_build_directories(tmp_path):
    tree = make_tree(tmp_path)
    add_folder(tree, "models/builders", "core/.", {"b.cpp": LONG_FUNCTION})
    for skipped in ("build", "build-asan"):
        (tree / skipped / "gen").mkdir(parents=True)
        (tree / skipped / "gen" / "x.cpp").write_text(LONG_FUNCTION)
    code, lines = check(tree)
    assert code == 1 and lines == ["models/builders/b.cpp:1: a function of 81 lines (at most 80)"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_in_a_git_checkout_the_ignored_paths_are_skipped(tmp_path):
    tree = make_tree(tmp_path)
    (tree / ".gitignore").write_text("/out/\n")
    (tree / "out").mkdir()
    (tree / "out" / "gen.cpp").write_text(LONG_FUNCTION)
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    code, lines = check(tree)
    assert (code, lines) == (0, [])
    (tree / ".gitignore").write_text("")
    code, lines = check(tree)
    assert code == 1 and "out/gen.cpp:1: a function of 81 lines (at most 80)" in lines


def test_a_folder_without_a_design_row(tmp_path):
    tree = make_tree(tmp_path)
    (tree / "extra").mkdir()
    (tree / "extra" / "README.md").write_text(README)
    (tree / "extra" / "e.cpp").write_text('#include "core/f0.hpp"\n')
    code, lines = check(tree)
    assert code == 1 and lines == ["extra/ holds C++ sources but has no row in docs/design.md's folder tables"]


def test_includes_against_the_may_include_line(tmp_path):
    tree = make_tree(tmp_path)
    add_folder(tree, "sim/kernel", "core/ and SystemC; nothing else of sim/.", {"k.hpp": "#pragma once\n"})
    add_folder(tree, "sim/run", "core/, sim/kernel/ (the queue).",
               {"r.cpp": '#include "core/f1.hpp"\n#include "sim/kernel/k.hpp"\n#include <vector>\n'})
    add_folder(tree, "tools", "sim/kernel/k.hpp; nothing of sim/run/.",
               {"t.cpp": '#include "sim/kernel/k.hpp"\n#include "sim/run/r.cpp"\n'})
    code, lines = check(tree)
    assert code == 1 and lines == [
        "tools/t.cpp:2: includes sim/run/r.cpp, but tools/README.md's 'May include:' line does not name sim/run/"]


def test_a_may_include_line_naming_no_folder_of_the_tree(tmp_path):
    tree = make_tree(tmp_path)
    add_folder(tree, "sim", "core/, simm/.", {"s.cpp": '#include "core/f0.hpp"\n'})
    code, lines = check(tree)
    assert code == 1 and lines == ["sim/README.md: 'May include:' names simm/, which does not exist"]


def test_folders_that_include_each_other(tmp_path):
    tree = make_tree(tmp_path)
    add_folder(tree, "sim/core", "core/, sim/machine/.", {"c.cpp": '#include "sim/machine/m.hpp"\n',
                                                          "ports.hpp": "#pragma once\n"})
    add_folder(tree, "sim/machine", "core/, sim/core/.",
               {"m.hpp": '#pragma once\n#include "sim/core/ports.hpp"\n'})
    # a folder and the folders inside it are one room: these two may include each other
    add_folder(tree, "models", "core/, models/.", {"w.cpp": '#include "models/parallelism/p.hpp"\n',
                                                   "g.hpp": "#pragma once\n"})
    add_folder(tree, "models/parallelism", "models/.", {"p.hpp": '#pragma once\n#include "models/g.hpp"\n'})
    code, lines = check(tree)
    assert code == 1 and lines == [
        "folders include each other: sim/core/ -> sim/machine/ -> sim/core/ (sim/core/c.cpp:1 includes "
        "sim/machine/m.hpp; sim/machine/m.hpp:2 includes sim/core/ports.hpp)"]


def test_systemc_only_in_sim(tmp_path):
    tree = make_tree(tmp_path)
    add_folder(tree, "sim/kernel", "core/.", {"k.cpp": "#include <systemc>\n#include <tlm>\n"})
    add_folder(tree, "models", "core/.", {"g.cpp": "#include <vector>\n#include <systemc>\n"})
    code, lines = check(tree)
    assert code == 1 and lines == [
        "models/g.cpp:2: includes <systemc>; SystemC belongs in sim/, tests/sim/, tools/bench/ only"]


def test_a_parameter_read_by_its_path_string(tmp_path):
    tree = make_tree(tmp_path)
    add_folder(tree, "sim/machine", "core/.", {
        "host.cpp": ('const Param<std::int64_t> kCores{{"hardware.host.cpu_cores", T::Integer}};\n'
                     "int a(const Config& cfg) { return kCores(cfg); }\n"
                     'int b(const Config& cfg) { return cfg.integer("hardware.host.cpu_cores"); }\n'
                     'bool c(const Config& cfg) { return json_at(cfg.json(), "dcn.host_nics"); }\n')})
    add_folder(tree, "tests/unit", "core/.", {
        "test_host.cpp": 'int t(const Config& cfg) { return cfg.integer("hardware.host.cpu_cores"); }\n'})
    code, lines = check(tree)
    assert code == 1 and lines == [
        'sim/machine/host.cpp:3: reads the parameter "hardware.host.cpu_cores" by its path string; '
        "read it with its declaration's handle (Param<T>)",
        'sim/machine/host.cpp:4: reads the parameter "dcn.host_nics" by its path string; '
        "read it with its declaration's handle (Param<T>)"]
