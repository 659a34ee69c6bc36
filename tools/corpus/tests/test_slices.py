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
    assert held == {
        "whisper-speech-seq2seq", "clip", "phi3-causal-lm", "swin-imgcls",
        "tv-densenet", "tv-googlenet", "tv-shufflenet", "tv-swin-v2", "tv-mobilenet-v2", "timm-byobnet",
        "timm-nfnet", "albert-masked-lm", "tv-mnasnet", "tv-squeezenet", "timm-vit2", "timm-efficientnet-gn",
        "timm-convnext2", "timm-coatnet",
    }
    # at least a third of the vision libraries' architectures are held out
    vision = {(f["name"], f["held_out"]) for f in slice_index["fixtures"] if f["source_library"] != "transformers"}
    assert 3 * sum(h for _, h in vision) >= len(vision)
    assert {f["source_library"] for f in slice_index["fixtures"]} == {"transformers", "torchvision", "timm"}
    assert {f["architecture"] for f in slice_index["fixtures"] if f["held_out"]} == set(slice_index["held_out"])
    # a variant that does not apply is recorded, not silently missing
    na = {(f["name"], f["exporter"], f["variant"]) for f in slice_index["not_applicable"]}
    assert ("llama-causal-lm", "dynamo", "ort-optimized") in na


def test_slice_is_small(slice_index: dict) -> None:
    # about 60 MB with the processed variants, 40 more with the published
    # formats (qdq, q4, fp16): git packs them to about half
    assert sum(p.stat().st_size for p in SLICE.rglob("*") if p.is_file()) < 112 * 1024 * 1024
    # a few MB per architecture, every variant included (T5, the largest, 8 MB)
    per_arch: dict[str, int] = {}
    for f in slice_index["fixtures"]:
        size = sum(p.stat().st_size for p in (SLICE / f["dir"]).iterdir())
        per_arch[f["name"]] = per_arch.get(f["name"], 0) + size
    assert max(per_arch.values()) < 10 * 1024 * 1024, max(per_arch.items(), key=lambda kv: kv[1])


def _with_zero_payloads(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with zeros where its builder dropped payloads, for onnx.checker."""
    import numpy as np
    from onnx import helper, numpy_helper

    for i, t in enumerate(model.graph.initializer):
        if not (t.raw_data or t.float_data or t.int32_data or t.int64_data or t.double_data or t.uint64_data):
            dtype = helper.tensor_dtype_to_np_dtype(t.data_type)
            filled = numpy_helper.from_array(np.zeros(tuple(t.dims), dtype=dtype), t.name)
            model.graph.initializer[i].CopyFrom(filled)
    return model


@pytest.mark.parametrize("fixture", SLICE_DIRS, ids=lambda p: p.name)
def test_slice_fixture(fixture: Path, slice_index: dict, schema: dict) -> None:
    manifest = json.loads((fixture / "manifest.json").read_text())
    jsonschema.validate(manifest, schema)
    model = onnx.load(str(fixture / "model.onnx"), load_external_data=False)
    assert not list(fixture.glob("*.data"))
    assert all(t.data_location != onnx.TensorProto.EXTERNAL for t in model.graph.initializer)
    entry = _entry(slice_index, fixture)
    if "payloads_dropped" in entry:
        # shapes and names kept, payloads of the large tensors gone (store.drop_payloads)
        empty = [t for t in model.graph.initializer if not (t.raw_data or t.float_data or t.int32_data
                                                             or t.int64_data or t.double_data)]
        assert len(empty) == entry["payloads_dropped"]["tensors"] > 0
        assert all(int(np_prod(t.dims)) >= entry["payloads_dropped"]["min_elements"] for t in empty)
        model = _with_zero_payloads(model)
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        if entry["variant"].endswith("fp16") and "topologically sorted" in str(e):
            # onnxruntime.transformers.float16 appends the Casts it puts on the
            # graph inputs at the end of the node list: the file people get
            # (ONNX Runtime sorts it when it loads it) is kept as it is
            pass
        else:
            ops = {n.op_type for n in model.graph.node}
            assert ops & ORT_DEFAULT_DOMAIN_OPS and any(op in str(e) for op in ORT_DEFAULT_DOMAIN_OPS), e
    truth = json.loads((fixture / "truth.json").read_text())
    ids = node_ids(model)
    known, unknown = set(truth["nodes"]), set(truth["unknown"])
    assert not known & unknown and len(unknown) == len(truth["unknown"])
    assert known | unknown == set(ids)
    assert truth["rules"]
    assert set(truth["nodes"].values()) <= {m["path"] for m in manifest["modules"]}
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


def np_prod(dims: object) -> int:
    n = 1
    for d in dims:  # type: ignore[attr-defined]
        n *= int(d)
    return n


def test_negative_set_lists_every_architecture(slice_index: dict, schema: dict) -> None:
    negative = json.loads((SLICE / "negative" / "index.json").read_text())
    names = {f["name"] for f in slice_index["fixtures"]}
    seen = {(m["name"], m["kind"]) for m in negative["manifests"]}
    seen |= {(m["name"], m["kind"]) for m in negative["not_applicable"]}
    assert seen == {(n, k) for n in names for k in ("depth", "width", "task-head")}
    assert all(m["reason"] for m in negative["not_applicable"])
    for m in negative["manifests"]:
        assert m["expect"] == ("fits" if m["kind"] == "task-head" else "misfit")
        manifest = json.loads((SLICE / m["dir"] / "manifest.json").read_text())
        jsonschema.validate(manifest, schema)
    # depth and width are tried on most architectures
    built = [m for m in negative["manifests"] if m["kind"] in ("depth", "width")]
    assert len(built) >= len(names)


def _truth(name: str) -> dict[str, str]:
    return json.loads((SLICE / name / "truth.json").read_text())["nodes"]


@pytest.mark.parametrize(
    ("fixture", "node", "module"),
    [
        # FuseBatchNormIntoConv: metadata says the BatchNorm, the weight is the Conv's -> the Conv
        ("resnet-imgcls.dynamo", "node_Conv_96", "resnet.embedder.embedder.convolution"),
        ("resnet-imgcls.dynamo.onnxslim", "node_Conv_96", "resnet.embedder.embedder.convolution"),
        # ORT session: Conv + Relu fused in place, the Conv's name kept -> FusedConv is the Conv
        ("resnet-imgcls.dynamo.ort-session", "node_Conv_96", "resnet.embedder.embedder.convolution"),
        ("bert-seqcls.dynamo", "node_layer_norm", "bert.embeddings.LayerNorm"),
        # FusedGemm (Gemm + Tanh) reading the dense layer's parameters: the Gemm
        ("bert-seqcls.dynamo.ort-session", "fused node_linear_12", "bert.pooler.dense"),
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


@pytest.mark.parametrize(
    ("fixture", "node", "origins"),
    [
        # the exporter's rewrite metadata (dynamo) and the forward pass (TorchScript) agree
        ("resnet-imgcls.dynamo", "node_Conv_96",
         ["resnet.embedder.embedder.convolution", "resnet.embedder.embedder.normalization"]),
        ("tv-resnet18.torchscript", "/layer1/layer1.0/conv2/Conv", ["layer1.0.bn2", "layer1.0.conv2"]),
        # carried by position and by name into derived copies
        ("tv-resnet18.torchscript.stripped", "n5", ["layer1.0.bn2", "layer1.0.conv2"]),
        # ONNX Runtime's FusedConv: the Conv, its folded BatchNorm and the Relu it absorbed
        ("tv-resnet18.dynamo.ort-session", "node_Conv_294", ["layer1.0.bn1", "layer1.0.conv1", "layer1.0.relu"]),
    ],
)
def test_known_origins(fixture: str, node: str, origins: list[str]) -> None:
    assert json.loads((SLICE / fixture / "truth.json").read_text())["origins"][node] == origins


def test_no_origins_where_nothing_is_fused() -> None:
    # BERT's plain TorchScript export runs every module's own ops.
    assert "origins" not in json.loads((SLICE / "bert-seqcls.torchscript" / "truth.json").read_text())
