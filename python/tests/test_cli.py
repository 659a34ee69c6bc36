"""The command line: success writes both files, bad input exits non-zero and writes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, TINY_BERT

ENV = {**os.environ, "PYTHONPATH": str(REPO / "python")}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "semmap_manifest", *args], capture_output=True, text=True, env=ENV,
                          timeout=300)


def test_export_writes_manifest_and_model(tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = run("export", "--model-type", "bert", "--task", "sequence-classification",
            "--config", json.dumps({**TINY_BERT, "num_hidden_layers": 1}), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "model.onnx"]
    assert json.loads((out / "manifest.json").read_text())["model"]["class"] == "BertForSequenceClassification"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["manifest", "--model-type", "no-such-model"], "no-such-model"),
        (["manifest", "--model-type", "bert", "--config", '{"hidden_size": 30, "num_attention_heads": 4}'],
         "not a multiple"),
        (["export", "--model-type", "bert", "--config", json.dumps({**TINY_BERT, "num_hidden_layers": 1}),
          "--opset", "3"], "opset"),
        (["manifest", "--model-type", "bert", "--config", "[1, 2]"], "JSON object"),
    ],
    ids=["unknown-model-type", "config-fails", "exporter-fails", "config-not-object"],
)
def test_bad_input_fails_without_files(tmp_path: Path, args: list[str], message: str) -> None:
    out = tmp_path / "out"
    r = run(*args, "-o", str(out))
    assert r.returncode != 0
    assert message in r.stderr
    assert not out.exists() or list(out.iterdir()) == []
