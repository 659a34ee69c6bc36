"""Shared fixtures for the corpus builder's tests (the committed corpus in fixtures/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "fixtures"
SCHEMA = REPO / "schema" / "manifest.schema.json"


def fixture_dirs() -> list[Path]:
    """Every fixture directory of the corpus (those holding a model.onnx)."""
    return sorted(p.parent for p in FIXTURES.glob("*/model.onnx"))


@pytest.fixture(scope="session")
def index() -> dict:
    return json.loads((FIXTURES / "index.json").read_text())


@pytest.fixture(scope="session")
def schema() -> dict:
    return json.loads(SCHEMA.read_text())
