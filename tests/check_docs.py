"""The documents' examples are tests: every fenced block of README.md and
docs/*.md carries a marker on the line above it saying how it is checked,
and the blocks marked `run` are run here as written.

    check_docs.py lint REPO [TOOL_DIR]   markers, versions, synopses (TOOL_DIR: `--help`)
    check_docs.py run REPO TOOL_DIR      run every `run` block, compare its output

The markers (docs/development.md, "Examples in the documents"):

    <!-- doctest: run [numbers] -->   run; a transcript ("$ command" lines,
                                      each followed by its output) or plain commands
    <!-- doctest: output -->          the output of the one command of the run block above
    <!-- doctest: synopsis -->        usage lines: every option is in the command's --help
    <!-- doctest: recipe -->          a Python recipe, run by python/tests/package/test_recipes.py
    <!-- doctest: same-as PATH -->    the block is the end of the file PATH
    <!-- doctest: tested-by PATH -->  the script or test PATH reads this block from the document
    <!-- doctest: skip REASON -->     not run, for the reason given

Output is compared line by line after removing trailing spaces; a line
holding only `...` stands for any number of lines, a line ending in " ..."
for every line that starts with the text before it, and with `numbers` every
number (times, counts that depend on the ONNX Runtime version) matches any
number and runs of spaces match any run of spaces. A command ending in `# exit N` must exit with N, any other with 0.
Each document's commands run in order in one temporary directory holding
links to the repository's fixtures/, scripts/ and .venv, with TOOL_DIR and
then .venv/bin (`python` has onnx and onnxruntime) first on PATH; a line
`NAME=value` sets a variable for the commands after it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

MARKER = re.compile(r"^<!-- doctest: (\S+)(?: (.*?))? -->$")
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
KINDS = {"run", "output", "synopsis", "recipe", "same-as", "tested-by", "skip"}
NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?(?![\w])")
HISTORY_WORDS = {"since", "before", "after", "until", "from"}


@dataclass
class Block:
    doc: str
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    kind: str = ""
    args: str = ""

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


@dataclass
class Command:
    text: str
    expected: list[str] = field(default_factory=list)
    exit_code: int = 0


def documents(repo: Path) -> list[Path]:
    return [repo / "README.md", *sorted((repo / "docs").glob("*.md"))]


def blocks(repo: Path, path: Path) -> list[Block]:
    """Every fenced block of the document, with the marker above it."""
    lines = path.read_text().split("\n")
    found = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.groups()
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        body = [line[len(indent):] if line.startswith(indent) else line for line in lines[i + 1:end]]
        block = Block(str(path.relative_to(repo)), i + 1, lang, "\n".join(body) + "\n")
        marker = MARKER.match(lines[i - 1].strip()) if i > 0 else None
        if marker:
            block.kind, block.args = marker.group(1), (marker.group(2) or "").strip()
        found.append(block)
        i = end + 1
    return found


def all_blocks(repo: Path) -> list[Block]:
    return [b for doc in documents(repo) for b in blocks(repo, doc)]


# ---------------------------------------------------------------- lint


def project_version(repo: Path) -> str:
    m = re.search(r"^project\(semmap VERSION (\d+\.\d+\.\d+)", (repo / "CMakeLists.txt").read_text(), re.M)
    assert m, "CMakeLists.txt: no project(semmap VERSION X.Y.Z)"
    return m.group(1)


def version_errors(repo: Path) -> list[str]:
    """The version is CMakeLists.txt's; the Python package's two copies and
    every document that names a version agree with it. History ("since
    semmap 1.1", "before semmap 1.2") and find_package's minimum are exempt."""
    version = project_version(repo)
    errors = []
    copies = {
        "pyproject.toml": r'^version = "([^"]+)"',
        "python/semmap/_version.py": r'^__version__ = "([^"]+)"',
    }
    for name, pattern in copies.items():
        m = re.search(pattern, (repo / name).read_text(), re.M)
        if not m or m.group(1) != version:
            errors.append(f"{name}: version {m.group(1) if m else '(none)'}, CMakeLists.txt says {version}")
    texts = [*documents(repo), repo / "python" / "README.md", repo / "python" / "README-semmap.md"]
    for path in texts:
        for n, line in enumerate(path.read_text().split("\n"), 1):
            for m in re.finditer(r"(\w+\s+|\()?\bsemmap[- ](\d+\.\d+(?:\.\d+)?)\b", line):
                before, named = (m.group(1) or "").strip(), m.group(2)
                if before.lower() in HISTORY_WORDS or before == "(" and "find_package" in line:
                    continue
                if not (version == named or version.startswith(named + ".")):
                    errors.append(f"{path.relative_to(repo)}:{n}: names semmap {named}; the version is {version}")
    return errors


def help_text(tool_dir: Path, command: list[str]) -> str:
    program = tool_dir / command[0]
    out = subprocess.run([str(program), *command[1:], "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"{' '.join(command)} --help exited {out.returncode}: {out.stderr}"
    return out.stdout


def synopsis_errors(block: Block, tool_dir: Path) -> list[str]:
    """Each usage line names a command whose --help lists every option shown."""
    errors = []
    usages: list[str] = []
    for line in block.text.splitlines():
        if re.match(r"semmap(-\w+)?\s", line):
            usages.append(line)
        elif usages and line.startswith(" "):
            usages[-1] += " " + line
    if not usages:
        return [f"{block.where}: synopsis block without a usage line"]
    for usage in usages:
        words = usage.split()
        command = words[:1] if words[0] != "semmap" else words[:2]
        try:
            shown = help_text(tool_dir, command)
        except AssertionError as e:
            errors.append(f"{block.where}: {e}")
            continue
        for option in sorted(set(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", usage))):
            if not re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", shown):
                errors.append(f"{block.where}: {' '.join(command)}: {option} is not in its --help")
    return errors


def lint(repo: Path, tool_dir: Path | None) -> list[str]:
    errors = version_errors(repo)
    previous: Block | None = None
    for block in all_blocks(repo):
        if block.kind not in KINDS:
            errors.append(
                f"{block.where}: a ``` block needs a marker on the line above it, "
                f"<!-- doctest: {' | '.join(sorted(KINDS))} ... --> (docs/development.md)"
                if not block.kind else f"{block.where}: unknown doctest kind {block.kind!r}")
        elif block.kind == "skip" and not block.args:
            errors.append(f"{block.where}: `skip` needs the reason beside it")
        elif block.kind == "output" and (previous is None or previous.kind != "run"
                                          or len(commands(previous)) != 1):
            errors.append(f"{block.where}: `output` must follow a run block of one command")
        elif block.kind == "recipe" and not block.text.startswith("# recipe: "):
            errors.append(f"{block.where}: a recipe opens with '# recipe: NAME'")
        elif block.kind == "same-as":
            target = repo / block.args
            if not target.is_file() or not target.read_text().endswith(block.text):
                errors.append(f"{block.where}: differs from the end of {block.args}")
        elif block.kind == "tested-by":
            target = repo / block.args
            if not target.is_file() or block.doc not in target.read_text():
                errors.append(f"{block.where}: {block.args} does not read {block.doc}")
        elif block.kind == "synopsis" and tool_dir is not None:
            errors.extend(synopsis_errors(block, tool_dir))
        elif block.kind == "run":
            for command in commands(block):
                if command.text.startswith(("cd ", "sudo ")):
                    errors.append(f"{block.where}: a run block may not leave its directory: {command.text}")
        previous = block
    return errors


# ---------------------------------------------------------------- run


def commands(block: Block) -> list[Command]:
    """A transcript's commands with their expected output, or plain commands."""
    lines = block.text.rstrip("\n").split("\n")
    transcript = any(line.startswith("$ ") for line in lines)
    found: list[Command] = []
    continued = False
    for line in lines:
        if continued:
            found[-1].text += "\n" + line
        elif transcript and line.startswith("$ "):
            found.append(Command(line[2:]))
        elif transcript:
            if found:
                found[-1].expected.append(line.rstrip())
        elif line.strip() and not line.lstrip().startswith("#"):
            found.append(Command(line))
        continued = bool(found) and found[-1].text.endswith("\\")
        if found and not continued:
            m = re.search(r"\s#\s*exit (\d+)\s*$", found[-1].text)
            if m:
                found[-1].exit_code = int(m.group(1))
    if not transcript:
        for command in found:
            command.expected = ["..."]
    return found


def normalise(line: str, numbers: bool) -> str:
    line = line.rstrip()
    # Numbers of other widths move the columns of a table: spaces count as one.
    return re.sub(r"\s+", " ", NUMBER.sub("<N>", line)) if numbers else line


def matches(expected: list[str], actual: list[str], numbers: bool) -> bool:
    """`...` lines match any number of lines; the rest must match in order."""
    while expected and not expected[-1].strip():
        expected = expected[:-1]  # the blank line before the next command
    while actual and not actual[-1].strip():
        actual = actual[:-1]
    def line_pattern(line: str) -> str:
        if line.strip() == "...":
            return r"(?:[^\n]*\n)*?"
        line = normalise(line, numbers)
        if line.endswith(" ..."):  # a line cut short: the rest is left out
            return re.escape(line[:-3]) + r"[^\n]*\n"
        return re.escape(line + "\n")

    pattern = "".join(line_pattern(line) for line in expected)
    text = "".join(normalise(line, numbers) + "\n" for line in actual)
    return re.fullmatch(pattern, text) is not None


def run_document(doc: str, doc_blocks: list[Block], repo: Path, tool_dir: Path) -> list[str]:
    errors = []
    with tempfile.TemporaryDirectory(prefix="semmap-doc-") as work:
        for name in ("fixtures", "scripts", ".venv"):
            if (repo / name).exists():
                os.symlink(repo / name, Path(work) / name)
        python_dir = repo / ".venv" / "bin"
        env = dict(os.environ, PATH=os.pathsep.join([str(tool_dir), str(python_dir), os.environ["PATH"]]))
        env.pop("LD_LIBRARY_PATH", None)
        assignments: list[str] = []
        last: tuple[Command, str] | None = None
        for block in doc_blocks:
            if block.kind == "output" and last is not None:
                command, output = last
                if not matches(block.text.rstrip("\n").split("\n"), output.splitlines(), False):
                    errors.append(f"{block.where}: `{command.text}` printed:\n{output}")
                continue
            if block.kind != "run":
                continue
            numbers = "numbers" in block.args.split()
            for command in commands(block):
                if re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S+", command.text):
                    assignments.append(command.text)
                    continue
                script = "set -o pipefail\n" + "".join(f"{a}\n" for a in assignments) + command.text
                start = time.monotonic()
                out = subprocess.run(["bash", "-c", script], cwd=work, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, timeout=300)
                seconds = time.monotonic() - start
                print(f"{block.where}: {seconds:5.1f} s  {command.text.splitlines()[0][:90]}")
                last = (command, out.stdout)
                if out.returncode != command.exit_code:
                    errors.append(f"{block.where}: `{command.text}` exited {out.returncode}, "
                                  f"not {command.exit_code}:\n{out.stdout}")
                elif not matches(command.expected, out.stdout.splitlines(), numbers):
                    errors.append(f"{block.where}: `{command.text}` printed:\n{out.stdout}"
                                  f"the document shows:\n" + "\n".join(command.expected))
    return errors


def run(repo: Path, tool_dir: Path, only: str | None = None) -> list[str]:
    errors = []
    by_doc: dict[str, list[Block]] = {}
    for block in all_blocks(repo):
        by_doc.setdefault(block.doc, []).append(block)
    for doc, doc_blocks in by_doc.items():
        if only and doc != only:
            continue
        if any(b.kind in ("run", "output") for b in doc_blocks):
            errors.extend(run_document(doc, doc_blocks, repo, tool_dir))
    return errors


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("lint", "run") or argv[0] == "run" and len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    repo = Path(argv[1]).resolve()
    tool_dir = Path(argv[2]).resolve() if len(argv) > 2 else None
    if argv[0] == "lint":
        errors = lint(repo, tool_dir)
    else:
        assert shutil.which("bash")
        errors = run(repo, tool_dir, argv[3] if len(argv) > 3 else None)
    for e in errors:
        print(f"check_docs: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
