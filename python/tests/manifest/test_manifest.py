"""The manifest of real transformers models matches named_modules() one to one."""

from __future__ import annotations

import json

import jsonschema
import pytest
import torch

from conftest import TINY_BERT
from semmap.manifest import build_manifest, write_manifest
from semmap.manifest._models import build_model


@pytest.fixture(scope="module")
def bert() -> torch.nn.Module:
    return build_model(model_type="bert", task="sequence-classification", config=TINY_BERT)


@pytest.fixture(scope="module")
def t5() -> torch.nn.Module:
    # T5 shares one embedding between model.shared and encoder/decoder.embed_tokens
    return build_model(
        model_type="t5",
        task="seq2seq-lm",
        config={"d_model": 16, "d_kv": 4, "d_ff": 32, "num_layers": 1, "num_heads": 4, "vocab_size": 50},
    )


@pytest.mark.parametrize("name", ["bert", "t5"])
def test_manifest_matches_named_modules(name: str, request: pytest.FixtureRequest) -> None:
    model: torch.nn.Module = request.getfixturevalue(name)
    manifest = build_manifest(model)
    named = list(model.named_modules())
    entries = manifest["modules"]
    assert [e["path"] for e in entries] == [p for p, _ in named]
    assert entries[0]["path"] == "" and entries[0]["parent"] is None
    paths = {p for p, _ in named}
    for entry, (path, module) in zip(entries, named):
        assert entry["class"] == type(module).__name__
        assert entry["qualified_class"] == f"{type(module).__module__}.{type(module).__qualname__}"
        if path:
            assert entry["parent"] == (path.rsplit(".", 1)[0] if "." in path else "")
            assert entry["parent"] in paths
        expected_children = [
            f"{path}.{n}" if path else n for n, _ in module.named_children() if (f"{path}.{n}" if path else n) in paths
        ]
        assert entry["children"] == expected_children
        assert [(t["name"], t["shape"], t["dtype"]) for t in entry["parameters"]] == [
            (n, list(p.shape), str(p.dtype).removeprefix("torch.")) for n, p in module.named_parameters(recurse=False)
        ]
        assert [(t["name"], t["shape"]) for t in entry["buffers"]] == [
            (n, list(b.shape)) for n, b in module.named_buffers(recurse=False)
        ]
    # every child listed is itself an entry whose parent points back
    by_path = {e["path"]: e for e in entries}
    for entry in entries:
        for child in entry["children"]:
            assert by_path[child]["parent"] == entry["path"]


def test_manifest_model_section(bert: torch.nn.Module) -> None:
    manifest = build_manifest(bert)
    assert manifest["format"] == "semmap.manifest" and manifest["schema_version"] == 1
    assert manifest["model"]["class"] == "BertForSequenceClassification"
    assert manifest["model"]["qualified_class"] == (
        "transformers.models.bert.modeling_bert.BertForSequenceClassification"
    )
    assert manifest["model"]["model_type"] == "bert"
    assert manifest["model"]["config"]["hidden_size"] == 32
    assert set(manifest["generator"]) >= {"semmap", "torch", "transformers"}
    assert "config" not in build_manifest(bert, config_summary=False)["model"]


def test_shared_module_listed_once() -> None:
    class Twice(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.first = torch.nn.Linear(2, 2)
            self.again = self.first  # one module registered under two names

    manifest = build_manifest(Twice())
    assert [e["path"] for e in manifest["modules"]] == ["", "first"]
    assert manifest["aliases"] == {"again": "first"}


def test_t5_shared_embedding(t5: torch.nn.Module, bert: torch.nn.Module) -> None:
    manifest = build_manifest(t5)
    paths = [e["path"] for e in manifest["modules"]]
    assert "shared" in paths
    if t5.encoder.embed_tokens is t5.shared:
        # transformers 4.x: one Embedding module under three names
        assert "encoder.embed_tokens" not in paths
        assert manifest["aliases"] == {"encoder.embed_tokens": "shared", "decoder.embed_tokens": "shared"}
    else:
        # transformers 5.x: three Embedding modules sharing one weight (tied
        # parameters); each module is in the manifest with its parameter
        assert t5.encoder.embed_tokens.weight is t5.shared.weight is t5.decoder.embed_tokens.weight
        assert {"encoder.embed_tokens", "decoder.embed_tokens"} <= set(paths)
        by_path = {e["path"]: e for e in manifest["modules"]}
        assert by_path["encoder.embed_tokens"]["parameters"] == by_path["shared"]["parameters"]
        assert "aliases" not in manifest
    assert "aliases" not in build_manifest(bert)


def test_write_manifest_validates_and_is_atomic(bert: torch.nn.Module, tmp_path, schema: dict) -> None:
    dest = tmp_path / "out" / "manifest.json"
    write_manifest(bert, dest)
    jsonschema.validate(json.loads(dest.read_text()), schema)
    assert sorted(p.name for p in dest.parent.iterdir()) == ["manifest.json"]


def test_write_manifest_failure_leaves_nothing(tmp_path) -> None:
    class Broken(torch.nn.Module):
        def named_modules(self, *args, **kwargs):  # type: ignore[override]
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_manifest(Broken(), tmp_path / "manifest.json")
    assert list(tmp_path.iterdir()) == []
