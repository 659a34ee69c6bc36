"""Shared fixtures for the tests of the installed `semmap` package."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
BERT = FIXTURES / "bert-seqcls.torchscript"


def recipe(name: str) -> str:
    """The README.md code block opening with '# recipe: NAME'."""
    readme = (REPO / "README.md").read_text()
    blocks = re.findall(r"```python\n(# recipe: ([\w-]+)\n.*?)```", readme, re.S)
    found = {n: code for code, n in blocks}
    assert name in found, f"README.md has no recipe {name!r} (has {sorted(found)})"
    return found[name]


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
