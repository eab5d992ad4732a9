#!/usr/bin/env python3
"""Checks the shape of the source tree that docs/design.md promises.

  - every folder that docs/design.md's folder table names exists;
  - every folder of C++ sources holds at most 25 of them and has a README.md whose
    'For:' and 'May include:' lines say what it is for and what it may include;
  - no two C++ source files share a file name;
  - no function in the libraries and the command-line front end is longer than 80 lines
    (tests are held to the file count and the unique names only);
  - no Catch test name holds a ';': ctest's discovery cuts the name there, and the filter it
    runs then matches no test case, so the test would pass without running.

Usage: tools/check_structure.py [ROOT]   (exit 0 when all hold, 1 with one line per breach)
"""
import pathlib
import re
import sys

SOURCE_SUFFIXES = {".cpp", ".hpp", ".h", ".cc"}
LIBRARY_ROOTS = ("core", "topologies", "models", "compiler", "traces", "sim", "tools", "python")
TEST_ROOTS = ("tests",)
MAX_FILES = 25
MAX_FUNCTION_LINES = 80
TEST_NAME = re.compile(r'TEST_CASE\(\s*"((?:[^"\\]|\\.)*)"')
SKIPPED = {"build", ".git", "node_modules", "__pycache__"}


def source_folders(root):
    folders = {}
    for top in LIBRARY_ROOTS + TEST_ROOTS:
        base = root / top
        if not base.is_dir():
            continue
        for path in base.rglob("*"):
            if any(part in SKIPPED or part.startswith("build") for part in path.relative_to(root).parts):
                continue
            if path.is_file() and path.suffix in SOURCE_SUFFIXES:
                folders.setdefault(path.parent, []).append(path)
    return folders


def design_folders(root):
    """The folders named in the first column of docs/design.md's tables: | `name/` | ..."""
    text = (root / "docs" / "design.md").read_text(encoding="utf-8")
    return re.findall(r"^\|\s*`([A-Za-z0-9_./-]+/)`\s*\|", text, flags=re.M)


def strip_code(text):
    """Blanks comments, string and character literals, keeping the line breaks."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if m:
                end = ")" + m.group(1) + '"'
                j = text.find(end, i + m.end())
                j = n if j < 0 else j + len(end)
                out.append('""' + "\n" * text.count("\n", i, j))
                i = j
            else:
                out.append(c)
                i += 1
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


FUNCTION_HEAD = re.compile(r"\)\s*(const\s*)?(noexcept\s*)?(override\s*)?(final\s*)?(->\s*[\w:<>,\s*&]+)?$")
NOT_FUNCTIONS = re.compile(r"\b(if|for|while|switch|catch)\s*\(")


def long_functions(path):
    """(name line, length) of each function body (outside other functions) over the limit."""
    code = strip_code(path.read_text(encoding="utf-8", errors="replace"))
    found = []
    depth = 0
    function_depth = None
    start_line = 0
    line = 1
    head = ""
    for c in code:
        if c == "\n":
            line += 1
        if c == "{":
            if function_depth is None:
                stripped = head.rstrip()
                # a member-initialiser list or a plain parameter list ends in ')' or '}'
                if FUNCTION_HEAD.search(stripped) and not NOT_FUNCTIONS.search(stripped[-200:]):
                    function_depth = depth
                    start_line = line
            depth += 1
            head = ""
        elif c == "}":
            depth -= 1
            if function_depth is not None and depth == function_depth:
                length = line - start_line + 1
                if length > MAX_FUNCTION_LINES:
                    found.append((start_line, length))
                function_depth = None
            head = ""
        elif c == ";":
            head = ""
        else:
            head += c
            if len(head) > 2000:
                head = head[-1000:]
    return found


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    breaches = []
    for folder in design_folders(root):
        if not (root / folder).is_dir():
            breaches.append(f"docs/design.md names folder '{folder}', which does not exist")
    folders = source_folders(root)
    names = {}
    for folder, files in sorted(folders.items()):
        rel = folder.relative_to(root)
        if len(files) > MAX_FILES:
            breaches.append(f"{rel}/ holds {len(files)} C++ source files (at most {MAX_FILES})")
        readme = folder / "README.md"
        if not readme.is_file():
            breaches.append(f"{rel}/ has no README.md saying what it is for and what it may include")
        else:
            text = readme.read_text(encoding="utf-8")
            for label in ("For:", "May include:"):
                if not re.search(rf"^{re.escape(label)}\s+\S", text, flags=re.M):
                    breaches.append(f"{rel}/README.md has no '{label}' line")
        for f in files:
            names.setdefault(f.name, []).append(str(f.relative_to(root)))
        if rel.parts[0] in TEST_ROOTS:
            for f in files:
                text = f.read_text(encoding="utf-8")
                for m in TEST_NAME.finditer(text):
                    if ";" in m.group(1):
                        line = text.count("\n", 0, m.start()) + 1
                        breaches.append(f"{f.relative_to(root)}:{line}: a test name with ';' "
                                        "(ctest would run no test case for it)")
        if rel.parts[0] in LIBRARY_ROOTS:
            for f in files:
                for start, length in long_functions(f):
                    breaches.append(f"{f.relative_to(root)}:{start}: a function of {length} lines "
                                    f"(at most {MAX_FUNCTION_LINES})")
    for name, paths in sorted(names.items()):
        if len(paths) > 1:
            breaches.append(f"{len(paths)} source files are named {name}: {', '.join(sorted(paths))}")
    for b in breaches:
        print(b)
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
