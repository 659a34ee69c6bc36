"""semmap.export and semmap.manifest with PyTorch: the installed wheel (its
compiled core, its pure-Python manifest writer) beside the project's pinned
torch / transformers environment. scripts/test-python-wheel runs this file
with the wheel unpacked ahead of that environment on the path; the wheel's
own venv, which has no torch, does not collect it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

import semmap
from conftest import REPO, recipe
from semmap.manifest import FORMAT, build_manifest, write_manifest
from semmap.manifest._models import build_model

TINY_BERT = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "vocab_size": 100,
    "max_position_embeddings": 32,
}


def test_runs_the_installed_wheel_not_the_source_tree():
    source = REPO / "python" / "semmap"
    assert Path(semmap.__file__).resolve().parent != source.resolve(), semmap.__file__
    assert Path(semmap.manifest.__file__).resolve().parent != (source / "manifest").resolve()
    assert semmap._core.__version__ == semmap.__version__


@pytest.fixture(scope="module")
def bert() -> torch.nn.Module:
    # trained_like: a fresh model's equal LayerNorm weights would be shared
    # through Identity nodes, which no trained model's export has.
    return build_model(model_type="bert", task="sequence-classification", config=TINY_BERT,
                       trained_like=True).eval()


def _inputs() -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    return {
        "input_ids": torch.randint(3, 100, (2, 8), generator=gen),
        "attention_mask": torch.ones(2, 8, dtype=torch.int64),
    }


@pytest.mark.parametrize("exporter", ["dynamo", "torchscript"])
def test_export_writes_model_and_manifest_and_maps_them(bert, tmp_path, exporter):
    path = tmp_path / "model.onnx"
    m = semmap.export(bert, _inputs(), path, exporter=exporter)
    assert isinstance(m, semmap.MappedModel)
    manifest_path = tmp_path / "model.manifest.json"
    assert m.path == str(path) and m.manifest_path == str(manifest_path)
    manifest = json.loads(manifest_path.read_text())
    assert manifest["format"] == FORMAT and manifest["generator"]["semmap"] == semmap.__version__
    assert manifest["model"]["class"] == "BertForSequenceClassification"
    assert m.manifest_fit["fits"]
    # Every node answered, nearly all of them confidently, and the query
    # projections of both layers found with their class.
    assert m.mapped_count == len(m) > 50
    confident = [x for x in m if x.confidence >= semmap.CONFIDENT_FLOOR]
    assert len(confident) >= 0.9 * len(m)
    for layer in (0, 1):
        query = f"bert.encoder.layer.{layer}.attention.self.query"
        nodes = m.nodes(module=query)
        assert nodes, f"{exporter}: no node mapped to {query}"
        assert {m[n].class_name for n in nodes} == {"Linear"}
        assert any(m[n].op_type in ("MatMul", "Gemm") for n in nodes)
    assert set(m.layer(1)) <= set(m.nodes(module="bert.encoder.layer.1", subtree=True))
    # The export carries its record: the file alone maps as with its manifest.
    alone = semmap.load(path)
    assert alone.provenance["record"] == "source" and alone.provenance["manifest"] == "record"
    assert [x.module for x in alone] == [x.module for x in m]


def test_export_without_record(bert, tmp_path):
    import onnx

    path = tmp_path / "model.onnx"
    semmap.export(bert, _inputs(), path, exporter="torchscript", record=False)
    assert not [p for p in onnx.load(str(path)).metadata_props if p.key == "semmap.record"]
    assert semmap.load(path).provenance["record"] == "absent"


def test_positional_inputs_and_a_plain_module(tmp_path):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)).eval()
    m = semmap.export(net, (torch.randn(3, 4),), tmp_path / "mlp.onnx", exporter="torchscript")
    assert Path(m.manifest_path).name == "mlp.manifest.json"
    by_module = {x.module for x in m if x.op_type in ("Gemm", "MatMul")}
    assert by_module == {"0", "2"}
    assert {x.class_name for x in m if x.module in ("0", "2")} == {"Linear"}
    # one tensor is the same as a one-element tuple; the batch axis is dynamic
    again = semmap.export(net, torch.randn(3, 4), tmp_path / "again.onnx", exporter="dynamo")
    assert {x.module for x in again if x.op_type in ("Gemm", "MatMul")} == {"0", "2"}
    import onnx

    dims = onnx.load(str(tmp_path / "again.onnx")).graph.input[0].type.tensor_type.shape.dim
    assert not dims[0].HasField("dim_value") and dims[1].dim_value == 4


def test_a_foreign_file_at_the_manifest_path_is_kept(bert, tmp_path):
    mine = tmp_path / "model.manifest.json"
    mine.write_text("my notes\n")
    with pytest.raises(FileExistsError, match="not a semmap manifest"):
        semmap.export(bert, _inputs(), tmp_path / "model.onnx")
    assert mine.read_text() == "my notes\n"
    assert not (tmp_path / "model.onnx").exists()
    # an earlier export's manifest is replaced
    write_manifest(torch.nn.Linear(2, 2), mine)
    m = semmap.export(bert, _inputs(), tmp_path / "model.onnx", exporter="torchscript")
    assert json.loads(mine.read_text())["model"]["class"] == "BertForSequenceClassification"
    assert m.has_manifest


def test_a_failed_export_leaves_both_files_as_they_were(tmp_path):
    class Broken(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise RuntimeError("forward fails on purpose")

    model_path = tmp_path / "model.onnx"
    model_path.write_bytes(b"previous export")
    manifest_path = tmp_path / "model.manifest.json"
    write_manifest(torch.nn.Linear(2, 2), manifest_path)
    before = manifest_path.read_bytes()
    with pytest.raises(Exception, match="forward fails on purpose"):
        semmap.export(Broken(), (torch.randn(1, 4),), model_path, exporter="torchscript")
    assert model_path.read_bytes() == b"previous export"
    assert manifest_path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.manifest.json", "model.onnx"]


def test_bad_arguments_are_refused_before_anything_is_written(bert, tmp_path):
    with pytest.raises(ValueError, match="unknown exporter"):
        semmap.export(bert, _inputs(), tmp_path / "a.onnx", exporter="tflite")
    with pytest.raises(TypeError, match="inputs must be"):
        semmap.export(bert, "not inputs", tmp_path / "b.onnx")
    with pytest.raises(ValueError, match="manifest path is the model path"):
        semmap.export(bert, _inputs(), tmp_path / "c.onnx", manifest=tmp_path / "c.onnx")
    assert list(tmp_path.iterdir()) == []


def test_manifest_of_the_wheel_matches_build_manifest(bert, tmp_path):
    dest = tmp_path / "manifest.json"
    written = write_manifest(bert, dest)
    assert json.loads(dest.read_text()) == written == build_manifest(bert)


def test_readme_recipe_export_and_map(bert, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    scope = {"model": bert, "inputs": _inputs()}
    exec(compile(recipe("export-and-map"), "recipe:export-and-map", "exec"), scope)
    assert (tmp_path / "model.onnx").exists() and (tmp_path / "model.manifest.json").exists()
    layer0 = scope["layer0"]
    assert layer0 and all(scope["m"][n].module.startswith("bert.encoder.layer.0") for n in layer0)


def test_causal_lm_masks_are_a_fallback_where_transformers_needs_them(tmp_path):
    """transformers 4.53-4.x builds causal masks with torch.vmap, which the
    TorchScript exporter cannot record; the default retries with Optimum's
    vmap-free masks there, and vmap_free_masks=False does not."""
    from semmap.manifest._export import vmap_free_masks_needed

    gpt2 = build_model(model_type="gpt2", task="causal-lm",
                       config={"n_embd": 32, "n_layer": 2, "n_head": 2, "n_positions": 64,
                               "vocab_size": 100, "use_cache": False}, trained_like=True).eval()
    inputs = {"input_ids": torch.randint(3, 100, (2, 8), generator=torch.Generator().manual_seed(0)),
              "attention_mask": torch.ones(2, 8, dtype=torch.int64)}
    if vmap_free_masks_needed():
        with pytest.raises(Exception):
            semmap.export(gpt2, inputs, tmp_path / "plain.onnx", exporter="torchscript",
                          vmap_free_masks=False)
        assert not (tmp_path / "plain.onnx").exists() and not (tmp_path / "plain.manifest.json").exists()
    m = semmap.export(gpt2, inputs, tmp_path / "gpt2.onnx", exporter="torchscript")
    assert m.manifest_fit["fits"] and m.model_class == "GPT2LMHeadModel"
    for layer in (0, 1):
        assert m.nodes(module=f"transformer.h.{layer}.attn", subtree=True)


def test_the_bad_input_catalogue_through_export(bert, tmp_path):
    # NUL bytes in the model's or the manifest's path, inputs and models of
    # the wrong kind: refused before anything is written or run.
    for kwargs in ({"path": str(tmp_path / "a.onnx") + "\0"},
                   {"path": tmp_path / "a.onnx", "manifest": bytes(tmp_path / "m.json") + b"\0"}):
        path = kwargs.pop("path")
        with pytest.raises(ValueError, match="null byte"):
            semmap.export(bert, _inputs(), path, **kwargs)
    with pytest.raises(TypeError, match="inputs must be"):
        semmap.export(bert, 42, tmp_path / "b.onnx")
    with pytest.raises(TypeError, match="torch.nn.Module"):
        semmap.export("not a model", _inputs(), tmp_path / "c.onnx")
    assert list(tmp_path.iterdir()) == []
    # A name in no encoding is written as given, and maps.
    raw = bytes(tmp_path) + b"/m\xff.onnx"
    m = semmap.export(bert, _inputs(), raw, exporter="torchscript")
    assert os.path.exists(raw) and len(m) > 0


def test_export_into_a_read_only_directory_is_a_permission_error(bert, read_only_dir):
    with pytest.raises(PermissionError):
        semmap.export(bert, _inputs(), read_only_dir / "model.onnx", exporter="torchscript")
    assert list(read_only_dir.iterdir()) == []
