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
    return subprocess.run([sys.executable, "-m", "semmap.manifest", *args], capture_output=True, text=True, env=ENV,
                          timeout=300)


def test_export_writes_manifest_and_model(tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = run("export", "--model-type", "bert", "--task", "sequence-classification",
            "--config", json.dumps({**TINY_BERT, "num_hidden_layers": 1}), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "model.onnx"]
    # says what it wrote, file by file
    assert f"{out / 'manifest.json'}: manifest of BertForSequenceClassification, " in r.stderr
    assert f"{out / 'model.onnx'}: ONNX export (" in r.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["model"]["class"] == "BertForSequenceClassification"
    # the export's example inputs ran once: forward signatures, schema version 2
    assert manifest["schema_version"] == 2
    by_path = {m["path"]: m for m in manifest["modules"]}
    assert by_path["classifier"]["forward"] == [{"op": "linear", "reads": ["weight", "bias"]}]


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


def test_manifest_on_meta_device_equals_allocated(tmp_path: Path) -> None:
    config = json.dumps({**TINY_BERT, "num_hidden_layers": 1})
    base = ["manifest", "--model-type", "bert", "--task", "sequence-classification", "--config", config]
    meta = run(*base, "-o", str(tmp_path / "meta"))
    allocated = run(*base, "--allocate-weights", "-o", str(tmp_path / "allocated"))
    assert meta.returncode == 0, meta.stderr
    assert allocated.returncode == 0, allocated.stderr
    assert (tmp_path / "meta" / "manifest.json").read_bytes() == (tmp_path / "allocated" / "manifest.json").read_bytes()
    # the pass on meta example inputs records what the export's pass records
    assert "schema version 2" in meta.stderr
    exported = run(*(["export"] + base[1:]), "-o", str(tmp_path / "export"))
    assert exported.returncode == 0, exported.stderr
    assert (tmp_path / "meta" / "manifest.json").read_bytes() == (tmp_path / "export" / "manifest.json").read_bytes()
    without = run(*base, "--no-forward", "-o", str(tmp_path / "without"))
    assert without.returncode == 0, without.stderr
    manifest = json.loads((tmp_path / "without" / "manifest.json").read_text())
    assert manifest["schema_version"] == 1
    assert not any("forward" in m for m in manifest["modules"])


def test_model_id_directory_reads_only_config(tmp_path: Path) -> None:
    from test_meta import save_model

    import torch

    saved = tmp_path / "saved"
    save_model(saved, "bert", "sequence-classification", {**TINY_BERT, "num_hidden_layers": 1}, torch.float32)
    (saved / "model.safetensors").write_bytes(b"not a safetensors file")
    r = run("manifest", "--model-id", str(saved), "--task", "sequence-classification", "-o", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["model"]["class"] == "BertForSequenceClassification"
    # an export needs the weights, and reads them
    r = run("export", "--model-id", str(saved), "--task", "sequence-classification", "-o", str(tmp_path / "export"))
    assert r.returncode == 1 and "SafetensorError" in r.stderr
    assert not (tmp_path / "export").exists() or list((tmp_path / "export").iterdir()) == []


def test_model_id_without_config_names_the_file(tmp_path: Path) -> None:
    r = run("manifest", "--model-id", str(tmp_path), "-o", str(tmp_path / "out"))
    assert r.returncode == 1
    assert f"{tmp_path / 'config.json'}: not found" in r.stderr


def test_vmap_free_masks_without_optimum(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    import transformers

    from semmap.manifest._cli import main

    for name in [m for m in sys.modules if m == "optimum" or m.startswith("optimum.")] + ["optimum"]:
        monkeypatch.setitem(sys.modules, name, None)  # import optimum now raises ImportError
    out = tmp_path / "out"
    status = main(["export", "--model-type", "bert", "--task", "sequence-classification",
                   "--config", json.dumps({**TINY_BERT, "num_hidden_layers": 1}), "--vmap-free-masks", "-o", str(out)])
    err = capsys.readouterr().err
    if int(transformers.__version__.split(".")[0]) >= 5:
        assert status == 0 and "not needed" in err
    else:
        assert status == 1
        assert "semmap[masks]" in err and "transformers >= 5" in err
        assert not out.exists()


def test_task_auto_builds_the_class_config_json_names(tmp_path: Path) -> None:
    from test_meta import save_model

    import torch

    from semmap.manifest._models import build_model

    saved = tmp_path / "saved"
    save_model(saved, "bert", "sequence-classification", {**TINY_BERT, "num_hidden_layers": 1}, torch.float32)
    assert json.loads((saved / "config.json").read_text())["architectures"] == ["BertForSequenceClassification"]
    # --task auto, on the meta device and with the weights read (in a subprocess:
    # from_pretrained leaves state in transformers 5.x that test_meta must not see)
    for extra in ([], ["--allocate-weights"]):
        out = tmp_path / f"out{len(extra)}"
        r = run("manifest", "--model-id", str(saved), *extra, "-o", str(out))
        assert r.returncode == 0, r.stderr
        assert json.loads((out / "manifest.json").read_text())["model"]["class"] == "BertForSequenceClassification"
    # without architectures (a config built from a model type), auto is AutoModel
    assert type(build_model(model_type="bert", config=TINY_BERT)).__name__ == "BertModel"


def test_causal_lm_manifest_on_meta_device_equals_export(tmp_path: Path) -> None:
    """A rotary, mask-building decoder: its base model's forward is wrapped (use_cache put into the
    keyword arguments), its rotary embedding opens an autocast region on the input's device (meta
    here), and under transformers 4.x its export needs the vmap-free masks, given to both commands."""
    import transformers

    config = json.dumps(dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                             num_key_value_heads=1, vocab_size=200, max_position_embeddings=64))
    masks = ["--vmap-free-masks"] if int(transformers.__version__.split(".")[0]) < 5 else []
    base = ["--model-type", "llama", "--config", config, *masks]
    exported = run("export", *base, "-o", str(tmp_path / "export"))
    assert exported.returncode == 0, exported.stderr
    meta = run("manifest", *base, "-o", str(tmp_path / "meta"))
    assert meta.returncode == 0, meta.stderr
    assert "schema version 2" in meta.stderr
    assert (tmp_path / "meta" / "manifest.json").read_bytes() == (tmp_path / "export" / "manifest.json").read_bytes()
