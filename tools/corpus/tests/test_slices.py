"""The corpus slices: every index entry names its toolchain; the torch-2.15 slice
(fixtures/torch-2.15/) is complete, self-contained and its truth is consistent."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import onnx
import pytest

from conftest import FIXTURES
from semmap_corpus.node_ids import node_ids

SLICE = FIXTURES / "torch-2.15"
SLICE_DIRS = sorted(p.parent for p in SLICE.glob("*/model.onnx"))
# ONNX Runtime's transformer optimizer writes these contrib ops in the default
# domain; onnx.checker does not know them (ONNX Runtime runs the files).
ORT_DEFAULT_DOMAIN_OPS = {"SimplifiedLayerNormalization", "SkipSimplifiedLayerNormalization"}


@pytest.fixture(scope="module")
def slice_index() -> dict:
    return json.loads((SLICE / "index.json").read_text())


def _entry(index: dict, fixture: Path) -> dict:
    return next(f for f in index["fixtures"] if f["dir"] == fixture.name)


def test_every_entry_names_its_toolchain(index: dict, slice_index: dict) -> None:
    assert index["toolchain"] == "torch-2.9"
    assert {f["toolchain"] for f in index["fixtures"]} == {"torch-2.9"}
    assert slice_index["toolchain"] == "torch-2.15"
    assert {f["toolchain"] for f in slice_index["fixtures"]} == {"torch-2.15"}
    assert slice_index["versions"]["torch"] == "2.15.0"


def test_slice_lists_every_directory(slice_index: dict) -> None:
    assert len(SLICE_DIRS) >= 60
    assert sorted(f["dir"] for f in slice_index["fixtures"]) == [d.name for d in SLICE_DIRS]
    held = {f["name"] for f in slice_index["fixtures"] if f["held_out"]}
    assert held == {"whisper-speech-seq2seq", "clip", "phi3-causal-lm", "swin-imgcls"}
    assert {f["architecture"] for f in slice_index["fixtures"] if f["held_out"]} == set(slice_index["held_out"])
    # a variant that does not apply is recorded, not silently missing
    na = {(f["name"], f["exporter"], f["variant"]) for f in slice_index["not_applicable"]}
    assert ("llama-causal-lm", "dynamo", "ort-optimized") in na


def test_slice_is_small() -> None:
    assert sum(p.stat().st_size for p in SLICE.rglob("*") if p.is_file()) < 26 * 1024 * 1024


@pytest.mark.parametrize("fixture", SLICE_DIRS, ids=lambda p: p.name)
def test_slice_fixture(fixture: Path, slice_index: dict, schema: dict) -> None:
    manifest = json.loads((fixture / "manifest.json").read_text())
    jsonschema.validate(manifest, schema)
    model = onnx.load(str(fixture / "model.onnx"), load_external_data=False)
    assert not list(fixture.glob("*.data"))
    assert all(t.data_location != onnx.TensorProto.EXTERNAL for t in model.graph.initializer)
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        ops = {n.op_type for n in model.graph.node}
        assert ops & ORT_DEFAULT_DOMAIN_OPS and any(op in str(e) for op in ORT_DEFAULT_DOMAIN_OPS), e
    truth = json.loads((fixture / "truth.json").read_text())
    ids = node_ids(model)
    known, unknown = set(truth["nodes"]), set(truth["unknown"])
    assert not known & unknown and len(unknown) == len(truth["unknown"])
    assert known | unknown == set(ids)
    assert truth["rules"]
    assert set(truth["nodes"].values()) <= {m["path"] for m in manifest["modules"]}
    entry = _entry(slice_index, fixture)
    assert entry["nodes"] == {"total": len(ids), "known": len(known), "unknown": len(unknown)}
    if entry["variant"] != "plain":
        assert (SLICE / entry["source"] / "model.onnx").exists()


@pytest.mark.parametrize("fixture", [d for d in SLICE_DIRS if d.name.endswith("-resorted")], ids=lambda p: p.name)
def test_resorted_truth_follows_the_recorded_order(fixture: Path) -> None:
    resort = json.loads((fixture / "resort.json").read_text())
    source = SLICE / resort["source"]
    order = resort["order"]
    src_model = onnx.load(str(source / "model.onnx"))
    model = onnx.load(str(fixture / "model.onnx"))
    assert sorted(order) == list(range(len(src_model.graph.node)))
    assert order != list(range(len(order)))
    src_truth = json.loads((source / "truth.json").read_text())["nodes"]
    truth = json.loads((fixture / "truth.json").read_text())["nodes"]
    src_ids, ids = node_ids(src_model), node_ids(model)
    for i, k in enumerate(order):
        assert model.graph.node[i].op_type == src_model.graph.node[k].op_type
        assert truth.get(ids[i]) == src_truth.get(src_ids[k])


def _truth(name: str) -> dict[str, str]:
    return json.loads((SLICE / name / "truth.json").read_text())["nodes"]


@pytest.mark.parametrize(
    ("fixture", "node", "module"),
    [
        # FuseBatchNormIntoConv: metadata says the BatchNorm, the weight is the Conv's -> their common parent
        ("resnet-imgcls.dynamo", "node_Conv_96", "resnet.embedder.embedder"),
        ("resnet-imgcls.dynamo.onnxslim", "node_Conv_96", "resnet.embedder.embedder"),
        # ORT session: Conv + Relu fused in place, the Conv's name kept
        ("resnet-imgcls.dynamo.ort-session", "node_Conv_96", "resnet.embedder.embedder"),
        ("bert-seqcls.dynamo", "node_layer_norm", "bert.embeddings.LayerNorm"),
        ("bert-seqcls.dynamo.ort-session", "fused node_linear_12", "bert.pooler"),
        ("bert-seqcls.torchscript", "/bert/encoder/layer.0/attention/self/query/MatMul",
         "bert.encoder.layer.0.attention.self.query"),
        ("phi3-causal-lm.torchscript", "/model/layers.0/self_attn/qkv_proj/MatMul",
         "model.layers.0.self_attn.qkv_proj"),
        ("swin-imgcls.torchscript", "/swin/encoder/layers.0/downsample/reduction/MatMul",
         "swin.encoder.layers.0.downsample.reduction"),
    ],
)
def test_known_truths(fixture: str, node: str, module: str) -> None:
    assert _truth(fixture)[node] == module


def test_placeholder_stack_shape_reads_are_unknown() -> None:
    truth = json.loads((SLICE / "bert-seqcls.dynamo" / "truth.json").read_text())
    assert "node_Shape_0" in truth["unknown"]
