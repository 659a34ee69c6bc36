"""Every fixture of the corpus is a valid model with a valid manifest and a complete truth."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import onnx
import pytest

from conftest import FIXTURES, fixture_dirs
from semmap_corpus.node_ids import node_ids

DIRS = fixture_dirs()


def test_corpus_is_not_empty(index: dict) -> None:
    assert len(DIRS) >= 20
    assert sorted(f["dir"] for f in index["fixtures"]) == [d.name for d in DIRS]
    assert {f["architecture"] for f in index["fixtures"] if f["held_out"]} == set(index["held_out"])
    assert len(index["held_out"]) == 2


@pytest.mark.parametrize("fixture", DIRS, ids=lambda p: p.name)
def test_manifest_validates(fixture: Path, schema: dict) -> None:
    jsonschema.validate(json.loads((fixture / "manifest.json").read_text()), schema)


@pytest.mark.parametrize("fixture", DIRS, ids=lambda p: p.name)
def test_model_passes_checker(fixture: Path) -> None:
    onnx.checker.check_model(str(fixture / "model.onnx"))


@pytest.mark.parametrize("fixture", DIRS, ids=lambda p: p.name)
def test_truth_covers_every_node_once(fixture: Path, index: dict) -> None:
    truth = json.loads((fixture / "truth.json").read_text())
    ids = node_ids(onnx.load(str(fixture / "model.onnx")))
    known, unknown = set(truth["nodes"]), set(truth["unknown"])
    assert not known & unknown
    assert len(truth["unknown"]) == len(unknown)
    assert known | unknown == set(ids)
    assert truth["rules"]
    manifest_paths = {m["path"] for m in json.loads((fixture / "manifest.json").read_text())["modules"]}
    assert set(truth["nodes"].values()) <= manifest_paths
    entry = next(f for f in index["fixtures"] if f["dir"] == fixture.name)
    assert entry["nodes"] == {"total": len(ids), "known": len(known), "unknown": len(unknown)}


def _truth(name: str) -> dict[str, str]:
    return json.loads((FIXTURES / name / "truth.json").read_text())["nodes"]


@pytest.mark.parametrize(
    ("fixture", "node", "module"),
    [
        ("bert-seqcls.torchscript", "/bert/encoder/layer.0/attention/self/query/MatMul",
         "bert.encoder.layer.0.attention.self.query"),
        ("bert-seqcls.torchscript", "/classifier/Gemm", "classifier"),
        # a called Sequential repeats its name: /layer/layer.0/ <-> layer.0
        ("resnet-imgcls.torchscript", "/resnet/encoder/stages.0/layers.0/layer/layer.0/convolution/Conv",
         "resnet.encoder.stages.0.layers.0.layer.0.convolution"),
        # a shared module is named after its first path
        ("t5-seq2seq-lm.torchscript", "/encoder/shared/Gather", "shared"),
        # Optimum traces the encoder alone
        ("t5-seq2seq-lm.optimum.optimum-encoder", "/block.0/layer.0/SelfAttention/q/MatMul",
         "encoder.block.0.layer.0.SelfAttention.q"),
        ("bert-seqcls.torchscript.ort-optimized", "Attention_1", "bert.encoder.layer.1.attention.self"),
        ("bert-seqcls.torchscript.quantized", "/bert/encoder/layer.0/attention/self/query/MatMul_quant",
         "bert.encoder.layer.0.attention.self.query"),
        ("bert-seqcls-fresh-init.torchscript.stripped", "n0", "bert.pooler.dense"),
        # dynamo: the module comes from metadata_props["pkg.torch.onnx.name_scopes"]
        ("bert-seqcls.dynamo", "node_layer_norm", "bert.embeddings.LayerNorm"),
        ("bert-seqcls.dynamo", "node_gelu", "bert.encoder.layer.0.intermediate.intermediate_act_fn"),
        ("resnet-imgcls.dynamo", "node_relu", "resnet.embedder.embedder.activation"),
        # dynamo records the call path of a shared module; the truth uses the manifest path
        ("t5-seq2seq-lm.dynamo", "node_embedding", "shared"),
    ],
)
def test_known_truths(fixture: str, node: str, module: str) -> None:
    truth = _truth(fixture)
    assert truth[node] == module


def test_optimum_merged_decoder_modules_live_in_if_branches() -> None:
    fixture = FIXTURES / "bart-seq2seq-lm.optimum.optimum-merged"
    model = onnx.load(str(fixture / "model.onnx"))
    assert [n.op_type for n in model.graph.node] == ["If"]
    truth = json.loads((fixture / "truth.json").read_text())
    q_proj = [i for i in truth["nodes"] if i.startswith("/model/decoder/layers.0/self_attn/q_proj/MatMul#")]
    assert len(q_proj) == 2  # one per branch, same name, so ids carry #<index>
    assert {truth["nodes"][i] for i in q_proj} == {"model.decoder.layers.0.self_attn.q_proj"}


def test_dynamo_stripped_has_no_metadata_left() -> None:
    model = onnx.load(str(FIXTURES / "bert-seqcls.dynamo.stripped" / "model.onnx"))
    assert all(not n.metadata_props and n.name == f"n{i}" for i, n in enumerate(model.graph.node))
    graph_io = {v.name for v in model.graph.input} | {v.name for v in model.graph.output}
    inits = {t.name for t in model.graph.initializer}
    for n in model.graph.node:
        for v in list(n.input) + list(n.output):
            assert not v or v in graph_io or v in inits or v.startswith("v")
