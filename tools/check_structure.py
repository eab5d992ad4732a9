#!/usr/bin/env python3
"""Checks the shape of the source tree that docs/design.md promises.

It sees every folder of C++ sources that git tracks or would track (not ignored: build
directories are); outside a git checkout, every one but top-level build*/ and out/ directories.

  - every folder that docs/design.md's folder tables name exists, and every folder of C++
    sources has its row there;
  - every folder of C++ sources holds at most 25 of them and has a README.md whose
    'For:' and 'May include:' lines say what it is for and what it may include;
  - every quoted #include of another folder's file is named by the including folder's
    'May include:' line (a folder, with the folders inside it, or that one file; words in
    parentheses and after the first ';' are prose), and every name there exists;
  - no folders include each other, directly or around a loop (a folder and the folders
    inside it count as one);
  - SystemC and TLM headers are included only in sim/, tests/sim/ and tools/bench/;
  - no two C++ source files share a file name;
  - no function outside tests/ is longer than 80 lines (tests are held to the file count and
    the unique names only);
  - no Catch test name holds a ';': ctest's discovery cuts the name there, and the filter it
    runs then matches no test case, so the test would pass without running;
  - no code outside tests/ reads a parameter by a path string (cfg.integer("parallelism.model"),
    json_at(cfg.json(), "...")): a parameter's path is written once, in its declaration, and
    read through the typed handle the declaration returns (Param<T>, core/param_handle.hpp).

Usage: tools/check_structure.py [ROOT]   (exit 0 when all hold, 1 with one line per breach)
"""
import pathlib
import re
import subprocess
import sys

SOURCE_SUFFIXES = {".cpp", ".hpp", ".h", ".cc"}
TEST_ROOTS = ("tests",)
MAX_FILES = 25
MAX_FUNCTION_LINES = 80
TEST_NAME = re.compile(r'TEST_CASE\(\s*"((?:[^"\\]|\\.)*)"')


def skipped_without_git(rel):
    """Without git: a top-level build or output directory, or a hidden or cache directory."""
    top = rel.parts[0]
    return (top.startswith("build") or top == "out" or
            any(part.startswith(".") or part in {"node_modules", "__pycache__"} for part in rel.parts))


def source_files(root):
    """Every C++ source git tracks or would track (not ignored); outside a git checkout, every
    one below the root but in skipped_without_git's directories."""
    try:
        listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
                                 "--exclude-standard"], capture_output=True, check=True).stdout
        paths = [root / p for p in listed.decode("utf-8").split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        paths = [p for p in root.rglob("*") if not skipped_without_git(p.relative_to(root))]
    return sorted(p for p in paths if p.suffix in SOURCE_SUFFIXES and p.is_file())


def source_folders(root):
    folders = {}
    for path in source_files(root):
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


INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(["<])([^">]+)[">]', flags=re.M)
SYSTEMC_HEADER = re.compile(r"^(systemc|systemc\.h|tlm|tlm\.h|tlm_utils/.*|sysc/.*|tlm_core/.*)$")
SYSTEMC_FOLDERS = ("sim", "tests/sim", "tools/bench")
PATH_TOKEN = re.compile(r"(?<![\w./-])[A-Za-z0-9_][\w.-]*(?:/[A-Za-z0-9_][\w.-]*)*/?")


def includes(root, path):
    """(line, '"' or '<', the path written, the included file's resolved path or None) of each
    #include. A quoted path is looked up beside the file first, then from the root; an angle
    bracket one is a system or third-party header (no path)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    found = []
    for m in INCLUDE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        written = m.group(2)
        target = None
        if m.group(1) == '"':
            beside = path.parent / written
            target = (beside if beside.is_file() else root / written).resolve()
        found.append((line, m.group(1), written, target))
    return found


def include_edges(root, folders):
    """{(from folder, to folder): [(file:line, included path)]} over the quoted #include lines
    that name a file of another folder of the tree (relative folder names)."""
    edges = {}
    real_root = root.resolve()
    for folder, files in folders.items():
        src = folder.relative_to(root)
        for f in files:
            for line, kind, written, target in includes(root, f):
                if kind != '"' or not target.parent.is_dir():
                    continue
                try:
                    dst = target.parent.relative_to(real_root)
                except ValueError:
                    continue
                if dst != src:
                    edges.setdefault((src, dst), []).append(
                        (f"{f.relative_to(root)}:{line}", str(target.relative_to(real_root))))
    return edges


def is_within(inner, outer):
    return inner == outer or outer in inner.parents


def may_include_names(text):
    """The folders and files a README's 'May include:' line names. Words in parentheses and
    after the first ';' say how or what not, so they name nothing: 'models/ (program.hpp)',
    'core/ and SystemC; nothing else of sim/'. A name ending in '/' is that folder and the
    folders inside it; a name with a '.' in its last part is that one file."""
    m = re.search(r"^May include:(.*)$", text, flags=re.M)
    if not m:
        return []
    line = m.group(1)
    while re.search(r"\([^()]*\)", line):
        line = re.sub(r"\([^()]*\)", "", line)
    line = line.split(";")[0]
    return [t.rstrip(".") for t in PATH_TOKEN.findall(line) if "/" in t]


def check_may_include(root, folders, edges):
    breaches = []
    allowed = {}
    for folder in folders:
        rel = folder.relative_to(root)
        readme = folder / "README.md"
        names = may_include_names(readme.read_text(encoding="utf-8")) if readme.is_file() else []
        allowed[rel] = names
        for name in names:
            if not (root / name).exists():
                breaches.append(f"{rel}/README.md: 'May include:' names {name}, which does not exist")
    for (src, dst), sites in sorted(edges.items()):
        names = allowed.get(src, [])
        folders_named = [pathlib.Path(n.rstrip("/")) for n in names if not is_file_name(n)]
        if any(is_within(dst, n) for n in folders_named):
            continue
        for site, target in sites:
            if target not in names:
                breaches.append(f"{site}: includes {target}, but {src}/README.md's "
                                f"'May include:' line does not name {dst}/")
    return breaches


def is_file_name(name):
    return not name.endswith("/") and "." in name.rsplit("/", 1)[-1]


def find_cycle(start, members, successors):
    """A shortest path start -> ... -> start through `members` (breadth first)."""
    previous = {start: None}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(successors.get(node, ())):
            if nxt == start:
                path = [node]
                while previous[path[-1]] is not None:
                    path.append(previous[path[-1]])
                return list(reversed(path)) + [start]
            if nxt in members and nxt not in previous:
                previous[nxt] = node
                queue.append(nxt)
    return None


def check_cycles(edges):
    """Folders that include each other, directly or around a loop. A folder and the folders
    inside it are one room (models/ and models/parallelism/), so edges between them do not
    count; every other loop is a breach, named by one shortest cycle and the lines that close it."""
    successors = {}
    for src, dst in edges:
        if not is_within(src, dst) and not is_within(dst, src):
            successors.setdefault(src, set()).add(dst)
    reach = {}
    for node in successors:
        seen, stack = set(), [node]
        while stack:
            for nxt in successors.get(stack.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        reach[node] = seen
    breaches, reported = [], set()
    for node in sorted(successors):
        if node not in reach[node] or node in reported:
            continue
        members = {n for n in reach[node] if node in reach.get(n, ())}
        reported |= members
        cycle = find_cycle(node, members, successors)
        hops = "; ".join(f"{edges[(a, b)][0][0]} includes {edges[(a, b)][0][1]}"
                         for a, b in zip(cycle, cycle[1:]))
        breaches.append(f"folders include each other: {' -> '.join(f'{c}/' for c in cycle)} ({hops})")
    return breaches


def check_systemc(root, folders):
    """SystemC and TLM headers only in sim/ and the code that tests or measures the kernel."""
    breaches = []
    for folder, files in sorted(folders.items()):
        rel = folder.relative_to(root)
        if any(is_within(rel, pathlib.Path(s)) for s in SYSTEMC_FOLDERS):
            continue
        for f in files:
            for line, kind, written, _ in includes(root, f):
                if kind == "<" and SYSTEMC_HEADER.match(written):
                    breaches.append(f"{f.relative_to(root)}:{line}: includes <{written}>; SystemC "
                                    f"belongs in {', '.join(s + '/' for s in SYSTEMC_FOLDERS)} only")
    return breaches


def check_design(root, folders):
    """docs/design.md's folder tables against the tree: each named folder exists, and each
    folder of sources has its row."""
    named = design_folders(root)
    breaches = [f"docs/design.md names folder '{f}', which does not exist"
                for f in named if not (root / f).is_dir()]
    for folder in sorted(folders):
        rel = f"{folder.relative_to(root)}/"
        if rel not in named:
            breaches.append(f"{rel} holds C++ sources but has no row in docs/design.md's folder tables")
    return breaches


def check_folder(root, folder, files):
    """The rules of one folder: its size, its README, its tests' names or its functions' length."""
    rel = folder.relative_to(root)
    breaches = []
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
    if rel.parts[:1] and rel.parts[0] in TEST_ROOTS:
        for f in files:
            text = f.read_text(encoding="utf-8")
            for m in TEST_NAME.finditer(text):
                if ";" in m.group(1):
                    line = text.count("\n", 0, m.start()) + 1
                    breaches.append(f"{f.relative_to(root)}:{line}: a test name with ';' "
                                    "(ctest would run no test case for it)")
    else:
        for f in files:
            for start, length in long_functions(f):
                breaches.append(f"{f.relative_to(root)}:{start}: a function of {length} lines "
                                f"(at most {MAX_FUNCTION_LINES})")
    return breaches


# A Config reader or json_at given a dotted path literal: a parameter read by its path string.
PATH_READ = re.compile(
    r'(?:\.(?:has|number|integer|boolean|string|integers|booleans|GBps|ns|at)\(\s*'
    r'|\bjson_at\([^,()]*(?:\([^()]*\))?[^,()]*,\s*)"([a-z_]+(?:\.[A-Za-z0-9_]+)+)"')
# Reads by path string waiting to be converted to handles, each naming the handle that will
# replace it (empty: every read goes through a handle).
PATH_READ_PENDING = {
}


def check_param_reads(root, folders):
    breaches = []
    for folder, files in sorted(folders.items()):
        for f in files:
            rel = str(f.relative_to(root))
            if rel.split("/")[0] in TEST_ROOTS:
                continue
            text = f.read_text(errors="replace")
            for m in PATH_READ.finditer(text):
                if (rel, m.group(1)) in PATH_READ_PENDING:
                    continue
                line = text.count("\n", 0, m.start()) + 1
                breaches.append(f"{rel}:{line}: reads the parameter \"{m.group(1)}\" by its path "
                                "string; read it with its declaration's handle (Param<T>)")
    return breaches


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    folders = source_folders(root)
    breaches = check_design(root, folders)
    names = {}
    for folder, files in sorted(folders.items()):
        breaches += check_folder(root, folder, files)
        for f in files:
            names.setdefault(f.name, []).append(str(f.relative_to(root)))
    for name, paths in sorted(names.items()):
        if len(paths) > 1:
            breaches.append(f"{len(paths)} source files are named {name}: {', '.join(sorted(paths))}")
    edges = include_edges(root, folders)
    breaches += check_may_include(root, folders, edges)
    breaches += check_cycles(edges)
    breaches += check_systemc(root, folders)
    breaches += check_param_reads(root, folders)
    for b in breaches:
        print(b)
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
