"""Shared fixtures for the tests of semmap.manifest (the manifest writer and semmap-manifest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "fixtures"
SCHEMA = REPO / "schema" / "manifest.schema.json"


@pytest.fixture(scope="session")
def schema() -> dict:
    return json.loads(SCHEMA.read_text())


TINY_BERT = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "vocab_size": 100,
    "max_position_embeddings": 32,
}
