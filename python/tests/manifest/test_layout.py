"""The Python sources' layering: no import circle (counting imports inside
functions), and the distributed package never reaches the development-only
corpus builder."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

ROOTS = {"semmap": REPO / "python" / "semmap", "semmap_corpus": REPO / "tools" / "corpus" / "semmap_corpus"}


def _module_name(package: str, root: Path, path: Path) -> str:
    parts = [package, *path.relative_to(root).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(module: str, path: Path) -> set[str]:
    """Every project module `module` imports, at any depth of its code."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _graph() -> dict[str, set[str]]:
    files = {
        _module_name(pkg, root, p): p for pkg, root in ROOTS.items() for p in sorted(root.rglob("*.py"))
    }
    graph = {}
    for module, path in files.items():
        targets = {t for t in _imports(module, path) if t in files and t != module}
        # `import a.b` also runs a/__init__; a package's __init__ importing its own
        # submodules is not a circle through the package.
        graph[module] = {t for t in targets if not module.startswith(t + ".")}
    return graph


def test_the_graph_is_read():
    graph = _graph()
    assert "semmap.manifest._export" in graph["semmap.manifest._cli"]
    assert "semmap_corpus.store" in graph["semmap_corpus.variants"]
    assert len(graph) >= 25


def test_no_import_circle():
    graph = _graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                raise AssertionError("import circle: " + " -> ".join([*stack[stack.index(t):], t]))
            if t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_the_distribution_does_not_import_the_corpus_builder():
    for module, targets in _graph().items():
        if module.split(".")[0] == "semmap":
            assert not any(t.startswith("semmap_corpus") for t in targets), module
