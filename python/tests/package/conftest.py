"""Shared fixtures for the tests of the installed `semmap` package."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "fixtures"
BERT = FIXTURES / "bert-seqcls.torchscript"


# The documents whose Python recipes the tests run, as written.
RECIPE_DOCS = ("README.md", "docs/python.md")


def recipes() -> dict[str, tuple[str, str]]:
    """Every code block opening with '# recipe: NAME', by name: (document, code)."""
    found: dict[str, tuple[str, str]] = {}
    for doc in RECIPE_DOCS:
        text = (REPO / doc).read_text()
        for code, name in re.findall(r"```python\n(# recipe: ([\w-]+)\n.*?)```", text, re.S):
            assert name not in found, f"recipe {name!r} is in both {found[name][0]} and {doc}"
            found[name] = (doc, code)
    return found


def recipe(name: str) -> str:
    """The code of the recipe NAME, from README.md or docs/python.md."""
    found = recipes()
    assert name in found, f"no recipe {name!r} in {RECIPE_DOCS} (has {sorted(found)})"
    return found[name][1]


def fixture_dirs() -> list[Path]:
    """Every fixture directory holding a model.onnx (both toolchain slices)."""
    return sorted(
        p.parent for p in [*FIXTURES.glob("*/model.onnx"), *FIXTURES.glob("torch-2.15/*/model.onnx")]
    )


def fixture_id(d: Path) -> str:
    return str(d.relative_to(FIXTURES))


def manifest_of(d: Path) -> Path | None:
    m = d / "manifest.json"
    return m if m.exists() else None


@pytest.fixture(scope="session")
def semmap_tool() -> str:
    """The `semmap` console script the wheel installed next to this Python."""
    here = Path(os.path.realpath(sys.executable)).parent
    for candidate in (Path(sys.executable).parent / "semmap", here / "semmap"):
        if candidate.exists():
            return str(candidate)
    found = shutil.which("semmap")
    assert found, "the semmap console script is not installed"
    return found


@pytest.fixture(scope="session")
def bert():
    import semmap

    return semmap.load(BERT / "model.onnx", BERT / "manifest.json")


@pytest.fixture
def read_only_dir(tmp_path):
    """An empty directory this user cannot write into (not as root, which
    writes anywhere: skipped then); writable again afterwards."""
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only directories")
    path = tmp_path / "ro"
    path.mkdir()
    path.chmod(0o555)
    yield path
    path.chmod(0o755)
