"""Facts about the sources that a reader relies on and a compiler does not
check, each a ctest (tests/CMakeLists.txt; docs/development.md, "Where
tests go"):

    check_sources.py size REPO           no C++ source over 600 lines, but the
                                         named exceptions below, none longer
                                         than it is today
    check_sources.py long-comments REPO  every "Long (about N lines)" or
                                         "About N lines" comment above a
                                         function states its real length
    check_sources.py strategies REPO     semmap.Strategy (python/semmap/_strategy.py)
                                         and the type stub's list (python/semmap/_core.pyi)
                                         are SEMMAP_STRATEGIES of include/semmap/strategy.h
    check_sources.py tests REPO          every source of src/mapping/{core,steps,
                                         strategies} has its <name>_test.cc in
                                         the same folder of tests/mapping/ (but
                                         the parts of a split unit and the named
                                         exceptions below), every test there is
                                         named after a source, and each is listed
                                         in tests/CMakeLists.txt
    check_sources.py catches             each check above fails on a made-up
                                         tree that breaks its rule

Each prints what it checked and every disagreement, naming the file (and
the line), and exits 1 when there is one.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

# The C++ of the library, its public headers, the tools and the Python
# binding. Tests, benchmarks and fuzz targets are not held to it.
SIZE_ROOTS = ("src", "include", "tools", "python/src")
SIZE_SUFFIXES = (".cc", ".h")
MAX_LINES = 600
# Sources allowed over MAX_LINES for now, each with the length it may not
# exceed (its length when it was listed) and why. A file that shrinks to
# MAX_LINES or below must leave the list, so the list stays true.
SIZE_EXCEPTIONS = {}

# Stated lengths known to be wrong, in files with changes of their own under
# way: (file, stated) -> the function's real length when it was listed. The
# check holds each to that length, so the next change to the function must
# correct its comment and remove the entry (a corrected comment, or a
# function grown or shrunk, fails until it is removed).
STALE_LENGTHS = {}


# How close a stated length must be: "about" allows rounding.
def _tolerance(stated: int) -> int:
    return max(5, stated // 10)


def _sources(repo: Path, roots, suffixes):
    for root in roots:
        for path in sorted((repo / root).rglob("*")):
            if path.is_file() and path.suffix in suffixes:
                yield path


def check_size(repo: Path, exceptions=None) -> int:
    exceptions = SIZE_EXCEPTIONS if exceptions is None else exceptions
    failures = []
    longest = []
    for path in _sources(repo, SIZE_ROOTS, SIZE_SUFFIXES):
        rel = path.relative_to(repo).as_posix()
        lines = len(path.read_text(encoding="utf-8", errors="replace").splitlines())
        if rel in exceptions:
            ceiling, why = exceptions[rel]
            if lines > ceiling:
                failures.append(f"{rel}: {lines} lines, above its listed {ceiling} ({why})")
            elif lines <= MAX_LINES:
                failures.append(
                    f"{rel}: {lines} lines, within {MAX_LINES}: remove it from SIZE_EXCEPTIONS")
            continue
        longest.append((lines, rel))
        if lines > MAX_LINES:
            failures.append(f"{rel}: {lines} lines, above {MAX_LINES}")
    for rel in exceptions:
        if not (repo / rel).is_file():
            failures.append(f"{rel}: listed in SIZE_EXCEPTIONS but not found")
    longest.sort(reverse=True)
    print("longest sources within the rule:",
          ", ".join(f"{rel} ({n})" for n, rel in longest[:3]))
    print(f"exceptions: {len(exceptions)}" + (": " if exceptions else ""),
          ", ".join(f"{rel} (at most {c})" for rel, (c, _) in exceptions.items()))
    for failure in failures:
        print(failure)
    return 1 if failures else 0


# --- "Long (about N lines)" --------------------------------------------------

STATED = re.compile(r"\b[Aa]bout (\d+)\s+lines\b")
LONG_ROOTS = ("src", "include", "tools", "python/src")


def _code_only(text: str) -> str:
    """`text` with comments, string and character literals blanked (newlines
    kept), so that braces can be counted."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i + 2)
            delim = text[i + 2:open_paren]
            close = text.find(")" + delim + '"', open_paren)
            j = n if close < 0 else close + len(delim) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # digit separator 1'000
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _line_of(code: str, offset: int) -> int:
    return code.count("\n", 0, offset) + 1


def _matching_brace(code: str, open_at: int) -> int:
    depth = 0
    for k in range(open_at, len(code)):
        if code[k] == "{":
            depth += 1
        elif code[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return -1


def _function_after(code: str, start: int):
    """(first line, last line) of the function whose declaration begins at
    offset `start`: to the brace closing its body, and the handlers of a
    function-try-block."""
    paren = 0
    k = start
    while k < len(code):
        ch = code[k]
        if ch == "(":
            paren += 1
        elif ch == ")":
            paren -= 1
        elif ch == ";" and paren == 0:
            return None  # a declaration, not a definition
        elif ch == "{" and paren == 0:
            break
        k += 1
    else:
        return None
    end = _matching_brace(code, k)
    if end < 0:
        return None
    while True:
        rest = re.match(r"\s*catch\s*\(", code[end + 1:])
        if not rest:
            break
        handler = code.find("{", end + 1 + rest.end())
        end = _matching_brace(code, handler)
    return _line_of(code, start), _line_of(code, end)


def check_long_comments(repo: Path, stale=None) -> int:
    stale = STALE_LENGTHS if stale is None else stale
    failures = []
    checked = 0
    stale_seen = set()
    for path in _sources(repo, LONG_ROOTS, SIZE_SUFFIXES):
        rel = path.relative_to(repo).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        lines = text.splitlines(keepends=True)
        code = _code_only(text)
        offsets = [0]
        for line in lines:
            offsets.append(offsets[-1] + len(line))
        i = 0
        while i < len(lines):
            if not lines[i].lstrip().startswith("//"):
                i += 1
                continue
            first = i
            while i < len(lines) and lines[i].lstrip().startswith("//"):
                i += 1
            block = " ".join(l.strip()[2:].strip() for l in lines[first:i])
            stated = STATED.search(block)
            if not stated:
                continue
            where = f"{rel}:{first + 1}"
            span = _function_after(code, offsets[i]) if i < len(lines) else None
            if span is None:
                failures.append(f"{where}: states about {stated.group(1)} lines, but no "
                                "function definition follows the comment")
                continue
            n = int(stated.group(1))
            real = span[1] - span[0] + 1
            checked += 1
            if (rel, n) in stale:
                stale_seen.add((rel, n))
                if real != stale[(rel, n)]:
                    failures.append(f"{where}: states about {n} lines and has {real}, listed in "
                                    f"STALE_LENGTHS with {stale[(rel, n)]}: correct "
                                    "the comment and remove the entry")
                continue
            if abs(real - n) > _tolerance(n):
                failures.append(f"{where}: states about {n} lines; the function "
                                f"(lines {span[0]}-{span[1]}) has {real}")
    for rel, n in sorted(set(stale) - stale_seen):
        failures.append(f"{rel}: no comment states about {n} lines any more: remove its "
                        "STALE_LENGTHS entry")
    print(f"{checked} stated lengths checked (tolerance: the larger of 5 lines and a tenth), "
          f"{len(stale)} of them listed as stale")
    for failure in failures:
        print(failure)
    return 1 if failures else 0


# --- Strategy -----------------------------------------------------------------

ENTRY = re.compile(r'X\((k\w+),\s*(\d+),\s*"(\w+)"\)')


def _cpp_strategies(repo: Path):
    header = (repo / "include/semmap/strategy.h").read_text(encoding="utf-8")
    m = re.search(r"#define SEMMAP_STRATEGIES\(X\)((?:.*\\\n)*.*\n)", header)
    if not m:
        raise SystemExit("include/semmap/strategy.h: no #define SEMMAP_STRATEGIES(X)")
    return [(e, int(v), name) for e, v, name in ENTRY.findall(m.group(1))]


def _python_strategies(repo: Path):
    tree = ast.parse((repo / "python/semmap/_strategy.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Strategy":
            members = []
            for stmt in node.body:
                if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                        and isinstance(stmt.targets[0], ast.Name)
                        and isinstance(stmt.value, ast.Constant)):
                    members.append((stmt.targets[0].id, stmt.value.value))
            return members
    raise SystemExit("python/semmap/_strategy.py: no class Strategy")


def _stub_strategies(repo: Path):
    stub = (repo / "python/semmap/_core.pyi").read_text(encoding="utf-8")
    m = re.search(r"def strategy\(self\) -> semmap\._strategy\.Strategy:\s*\"\"\"(.*?)\"\"\"",
                  stub, re.S)
    if not m:
        raise SystemExit("python/semmap/_core.pyi: no Mapping.strategy property")
    listed = re.search(r"\(('[^)]*)\)", m.group(1))
    if not listed:
        raise SystemExit("python/semmap/_core.pyi: Mapping.strategy's docstring lists no names")
    return re.findall(r"'(\w+)'", listed.group(1))


def _snake(enumerator: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", enumerator[1:]).lower()


def check_strategies(repo: Path) -> int:
    failures = []
    cpp = _cpp_strategies(repo)
    if not cpp:
        failures.append("include/semmap/strategy.h: SEMMAP_STRATEGIES lists no X(...) entry")
    for index, (enumerator, value, name) in enumerate(cpp):
        if value != index:
            failures.append(f"strategy.h: {enumerator} is {value}, at position {index}")
        if _snake(enumerator) != name:
            failures.append(f"strategy.h: {enumerator} is named {name!r}, not {_snake(enumerator)!r}")
    names = [name for _, _, name in cpp]
    python = _python_strategies(repo)
    expected = [(name.upper(), name) for name in names]
    if python != expected:
        failures.append("python/semmap/_strategy.py: Strategy's members are\n  "
                        f"{python}\nnot, in SEMMAP_STRATEGIES' order,\n  {expected}")
    stub = _stub_strategies(repo)
    if stub != names[1:] + names[:1]:
        failures.append("python/semmap/_core.pyi: Mapping.strategy lists\n  "
                        f"{stub}\nnot the found strategies in order, then 'unmapped':\n  "
                        f"{names[1:] + names[:1]} (regenerate the stub: docs/python.md)")
    print(f"{len(names)} strategies: {', '.join(names)}")
    for failure in failures:
        print(failure)
    return 1 if failures else 0


# --- Tests beside their sources -------------------------------------------------

# The mapping's folders, whose units each have a test of their name.
TEST_FOLDERS = ("core", "steps", "strategies")
# Sources of those folders without a test of their own, each with why. A
# source that gains its test, or is removed, must leave the list.
TEST_EXCEPTIONS = {}


def _split_unit(name: str, sources, tests):
    """The unit `name` is a part of ("op_calls" for "op_calls_reads"): a
    source `<unit>.cc` beside it that has its test; None when there is none."""
    parts = name.split("_")
    for cut in range(len(parts) - 1, 0, -1):
        unit = "_".join(parts[:cut])
        if unit in sources and unit in tests:
            return unit
    return None


def check_tests(repo: Path, exceptions=None) -> int:
    exceptions = TEST_EXCEPTIONS if exceptions is None else exceptions
    failures = []
    listed_file = repo / "tests/CMakeLists.txt"
    listed = listed_file.read_text(encoding="utf-8") if listed_file.is_file() else ""
    counts = {"tested": 0, "parts": 0}
    for folder in TEST_FOLDERS:
        src = repo / "src/mapping" / folder
        test_dir = repo / "tests/mapping" / folder
        sources = {p.stem for p in src.glob("*.cc")} if src.is_dir() else set()
        tests = ({p.name[:-len("_test.cc")] for p in test_dir.glob("*_test.cc")}
                 if test_dir.is_dir() else set())
        for name in sorted(sources):
            rel = f"src/mapping/{folder}/{name}.cc"
            if name in tests:
                counts["tested"] += 1
                if rel in exceptions:
                    failures.append(f"{rel}: has tests/mapping/{folder}/{name}_test.cc: remove it "
                                    "from TEST_EXCEPTIONS")
                continue
            if rel in exceptions:
                continue
            unit = _split_unit(name, sources, tests)
            if unit is not None:
                counts["parts"] += 1
                continue
            failures.append(f"{rel}: no tests/mapping/{folder}/{name}_test.cc (nor a unit "
                            f"<unit>.cc with its test that {name}.cc is a part of)")
        for name in sorted(tests):
            rel = f"tests/mapping/{folder}/{name}_test.cc"
            if name not in sources:
                failures.append(f"{rel}: src/mapping/{folder}/{name}.cc does not exist: a "
                                "test here is named after the source it tests")
            if f"mapping/{folder}/{name}_test.cc" not in listed:
                failures.append(f"{rel}: not listed in tests/CMakeLists.txt (semmap_tests)")
    for rel in exceptions:
        if not (repo / rel).is_file():
            failures.append(f"{rel}: listed in TEST_EXCEPTIONS but not found")
    print(f"{counts['tested']} mapping sources with their test, {counts['parts']} parts of a "
          f"split unit, {len(exceptions)} exceptions"
          + ("".join(f"\n  {rel}: {why}" for rel, why in exceptions.items())))
    for failure in failures:
        print(failure)
    return 1 if failures else 0


def check_catches() -> int:
    """Each check, run on small trees that keep and break its rule."""
    import tempfile

    strategy_h = (
        "#define SEMMAP_STRATEGIES(X) \\\n"
        '  /* none */ X(kUnmapped, 0, "unmapped") \\\n'
        '  X(kExactScope, 1, "exact_scope")\n')
    strategy_py = ('class Strategy:\n    UNMAPPED = "unmapped"\n'
                   '    EXACT_SCOPE = "exact_scope"\n')
    stub = ('    def strategy(self) -> semmap._strategy.Strategy:\n        """\n'
            "        a name ('exact_scope' or 'unmapped').\n        \"\"\"\n")
    body = "".join(f"  f({i});\n" for i in range(40))
    long_fn = ("// Long (about {n} lines): a sweep.\n"
               "int F(int x) try {{\n  const char* s = \"}}\";\n" + body +
               "  return R\"(}})\"[0];\n}} catch (...) {{\n  return 0;\n}}\n")
    cases = [
        # (what, files, check, expected exit status)
        ("a 45-line function stated as 45", {"src/a.cc": long_fn.format(n=45)},
         check_long_comments, 0),
        ("a 45-line function stated as 30", {"src/a.cc": long_fn.format(n=30)},
         check_long_comments, 1),
        ("a stated length with no function after it",
         {"src/a.cc": "// About 10 lines: x.\nint F(int);\n"}, check_long_comments, 1),
        ("a source of 600 lines", {"src/a.cc": "\n" * MAX_LINES}, check_size, 0),
        ("a source of 601 lines", {"src/a.cc": "\n" * (MAX_LINES + 1)}, check_size, 1),
        ("the Python enum and the stub agree",
         {"include/semmap/strategy.h": strategy_h, "python/semmap/_strategy.py": strategy_py,
          "python/semmap/_core.pyi": stub}, check_strategies, 0),
        ("the Python enum misses a member",
         {"include/semmap/strategy.h": strategy_h,
          "python/semmap/_strategy.py": strategy_py.replace('    EXACT_SCOPE = "exact_scope"\n', ""),
          "python/semmap/_core.pyi": stub}, check_strategies, 1),
        ("the stub lists another order",
         {"include/semmap/strategy.h": strategy_h, "python/semmap/_strategy.py": strategy_py,
          "python/semmap/_core.pyi": stub.replace("'exact_scope' or 'unmapped'",
                                                  "'unmapped' or 'exact_scope'")},
         check_strategies, 1),
        ("a value out of order",
         {"include/semmap/strategy.h": strategy_h.replace("kExactScope, 1", "kExactScope, 2"),
          "python/semmap/_strategy.py": strategy_py, "python/semmap/_core.pyi": stub},
         check_strategies, 1),
    ]
    listed = "add_executable(semmap_tests\n  mapping/steps/a_test.cc\n  mapping/strategies/u_test.cc\n)\n"
    tested = {"src/mapping/steps/a.cc": "", "tests/mapping/steps/a_test.cc": "",
              "tests/CMakeLists.txt": listed}
    cases += [
        ("a source with its test", tested, check_tests, 0),
        ("a source without its test", {**tested, "src/mapping/steps/b.cc": ""}, check_tests, 1),
        ("the parts of a split unit beside its test",
         {**tested, "src/mapping/strategies/u.cc": "", "src/mapping/strategies/u_part_two.cc": "",
          "tests/mapping/strategies/u_test.cc": ""}, check_tests, 0),
        ("a part of no unit with a source",
         {**tested, "src/mapping/strategies/u_part.cc": "",
          "tests/mapping/strategies/u_test.cc": ""}, check_tests, 1),
        ("a test named after no source",
         {**tested, "tests/mapping/steps/gone_test.cc": "",
          "tests/CMakeLists.txt": listed + "mapping/steps/gone_test.cc\n"}, check_tests, 1),
        ("a test not listed in tests/CMakeLists.txt",
         {**tested, "src/mapping/core/c.cc": "", "tests/mapping/core/c_test.cc": ""},
         check_tests, 1),
        ("a source without its test, listed as an exception",
         {**tested, "src/mapping/core/thin.cc": ""}, "exception", 0),
        ("an exception that has its test now",
         {**tested, "src/mapping/core/thin.cc": "", "tests/mapping/core/thin_test.cc": "",
          "tests/CMakeLists.txt": listed + "mapping/core/thin_test.cc\n"}, "exception", 1),
    ]
    wrong = 0
    for what, files, check, expected in cases:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            for rel, text in files.items():
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_text(text, encoding="utf-8")
            if check is check_size:
                got = check_size(root, exceptions={})
            elif check is check_long_comments:
                got = check_long_comments(root, stale={})
            elif check is check_tests:
                got = check_tests(root, exceptions={})
            elif check == "exception":
                got = check_tests(root, exceptions={"src/mapping/core/thin.cc": "a thin struct"})
            else:
                got = check(root)
        status = "ok" if got == expected else "WRONG"
        print(f"{status}: {what}: exit {got}, expected {expected}")
        wrong += got != expected
    return 1 if wrong else 0


def main(argv) -> int:
    if len(argv) == 2 and argv[1] == "catches":
        return check_catches()
    if len(argv) != 3 or argv[1] not in ("size", "long-comments", "strategies", "tests"):
        print(__doc__)
        return 2
    repo = Path(argv[2])
    return {"size": check_size, "long-comments": check_long_comments,
            "strategies": check_strategies, "tests": check_tests}[argv[1]](repo)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
