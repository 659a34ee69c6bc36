"""The Python recipes of README.md and docs/python.md, run as written, on
real fixtures."""

from __future__ import annotations

import shutil

import onnx
import pytest

from conftest import BERT, FIXTURES, recipe


def run(name: str, cwd, monkeypatch) -> dict:
    monkeypatch.chdir(cwd)
    scope: dict = {}
    exec(compile(recipe(name), f"recipe:{name}", "exec"), scope)
    return scope


@pytest.fixture
def bert_dir(tmp_path):
    shutil.copy(BERT / "model.onnx", tmp_path / "model.onnx")
    shutil.copy(BERT / "manifest.json", tmp_path / "manifest.json")
    return tmp_path


def test_quantize_all_but_one_module(bert_dir, monkeypatch):
    scope = run("quantize-all-but-one-module", bert_dir, monkeypatch)
    keep = set(scope["keep_float"])
    m = scope["m"]
    assert keep and all(m[n].module.startswith("bert.encoder.layer.1.attention") for n in keep)
    quantized = onnx.load(str(bert_dir / "model.int8.onnx"))
    float_types = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16}
    inits = {t.name: t for t in quantized.graph.initializer}
    by_name = {n.name: n for n in quantized.graph.node}
    kept_matmuls = [n for n in keep if n.endswith("/MatMul")]
    weighted = 0
    for name in kept_matmuls:
        node = by_name[name]
        assert node.op_type == "MatMul", name
        weights = [inits[i] for i in node.input if i in inits]
        assert all(w.data_type in float_types for w in weights), name
        weighted += bool(weights)
    assert weighted == 4  # query, key, value and the output dense stayed float
    # The same projections of layer 0 were quantized.
    other = "/bert/encoder/layer.0/attention/self/query/MatMul"
    assert other not in by_name or by_name[other].op_type != "MatMul"
    assert any(n.op_type in ("MatMulInteger", "DynamicQuantizeLinear") for n in quantized.graph.node)


def test_nodes_per_layer(bert_dir, monkeypatch):
    scope = run("nodes-per-layer", bert_dir, monkeypatch)
    assert scope["container"] == "bert.encoder.layer"
    assert scope["per_layer"] == {0: 79, 1: 79}
    m = scope["m"]
    assert sum(scope["per_layer"].values()) == len(m.nodes("bert.encoder.layer", subtree=True))


def test_attention_of_layer(bert_dir, monkeypatch):
    scope = run("attention-of-layer", bert_dir, monkeypatch)
    m, attention = scope["m"], scope["attention"]
    assert attention
    assert all(m[n].module.startswith("bert.encoder.layer.1.attention") for n in attention)
    assert set(attention) == set(m.layer(1)) & set(m.by_category("attention"))
    assert "/bert/encoder/layer.1/attention/self/query/MatMul" not in attention  # a projection
    assert "/bert/encoder/layer.1/attention/self/Softmax" in attention


@pytest.mark.parametrize("fixture", ["gpt2-causal-lm.dynamo", "bert-seqcls.torchscript"])
def test_no_manifest(fixture, tmp_path, monkeypatch):
    shutil.copy(FIXTURES / fixture / "model.onnx", tmp_path / "downloaded.onnx")
    scope = run("no-manifest", tmp_path, monkeypatch)
    m = scope["m"]
    assert not m.has_manifest
    assert m.mapped_count >= 0.9 * len(m)
    assert all(mp.confidence <= 0.8 for mp in m)
    assert len(scope["modules"]) > 10
    assert set(scope["unsure"]) == {mp.node for mp in m if mp.confidence < 0.5}


def test_one_file_after_quantization(bert_dir, monkeypatch):
    import semmap

    scope = run("one-file-after-quantization", bert_dir, monkeypatch)
    m = scope["m"]
    assert m.provenance["record"] == "used"
    assert m.provenance["manifest"] == "record" and m.provenance["reference"] == "record"
    assert m.has_manifest and m.manifest_path is None
    assert m.reference_check["ancestor"]
    # The record gives what the manifest and the export as reference give.
    named = semmap.load(bert_dir / "model.int8.onnx", bert_dir / "manifest.json",
                        reference=bert_dir / "model.onnx")
    assert [x.module for x in m] == [x.module for x in named]
    assert m.mapped_count == len(m)
    ignored = semmap.load(bert_dir / "model.int8.onnx", use_record=False)
    assert ignored.provenance["record"] == "ignored" and not ignored.has_manifest


def test_which_module_hurts_accuracy(bert_dir, monkeypatch, capsys):
    scope = run("which-module-hurts-accuracy", bert_dir, monkeypatch)
    report, again, keep = scope["report"], scope["again"], scope["keep"]
    measured = sorted((r for r in report.modules("leaf") if r.get("impact") is not None and r["impact"] > 0),
                      key=lambda r: -r["impact"])
    assert len(keep) == 2 and keep[:len(measured)] == [r["module"] for r in measured][:2]
    assert "modules by the error they make on their own" in capsys.readouterr().out
    # The two modules are float in the second copy: they add no error of their own there.
    rows = {r["module"]: r for r in again.modules("leaf")}
    assert all(rows[k]["local_error"]["rel_l2"] < 1e-5 for k in keep)
    # Whether the final error drops depends on the model and the quantizer
    # (errors that cancelled may no longer do); docs/numerics.md, "The loop".
    print(f"recipe: final error {report.final_error:.4f} -> {again.final_error:.4f}")
    assert again.final_error > 0 and report.final_error > 0
