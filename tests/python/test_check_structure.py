"""tools/check_structure.py against small trees built here: each rule is broken by one file more
(or one line more) than it allows, and holds at the limit."""
import pathlib
import subprocess
import sys

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
    tree = make_tree(tmp_path, readme="For: only the first line.\n")
    (tree / "core" / "sub").mkdir()
    (tree / "core" / "sub" / "README.md").write_text(README)
    (tree / "core" / "sub" / "f0.hpp").write_text("#pragma once\n")
    code, lines = check(tree)
    assert code == 1
    assert lines == ["core/README.md has no 'May include:' line",
                     "2 source files are named f0.hpp: core/f0.hpp, core/sub/f0.hpp"]
