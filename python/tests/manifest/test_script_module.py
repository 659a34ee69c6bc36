"""Manifests of TorchScript modules (torch.jit.script / trace, saved and torch.jit.load-ed).

A ScriptModule's Python type is ``RecursiveScriptModule`` for every module
(``TopLevelTracedModule`` for the root of a trace);
the manifest must record the classes it was made from, as the eager model's
manifest does, and its tensors, and say that it has no forward signatures
(hooks are not supported on ScriptModules) instead of failing.
"""

from __future__ import annotations

import io
import json
import warnings
from typing import Any

import jsonschema
import pytest
import torch

from semmap.manifest import build_manifest, write_manifest

torchvision = pytest.importorskip("torchvision")

NOT_RECORDED = "is a TorchScript module (hooks are not supported on ScriptModules)"


def _quiet(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(...)`` without torch.jit's deprecation warnings (FutureWarning from torch >= 2.10)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _save_and_load(module: torch.jit.ScriptModule) -> torch.jit.ScriptModule:
    buffer = io.BytesIO()
    _quiet(torch.jit.save, module, buffer)
    buffer.seek(0)
    return _quiet(torch.jit.load, buffer)


def _structure(manifest: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Per module: path, class, qualified class, parent, children, parameters, buffers."""
    return [
        (e["path"], e["class"], e["qualified_class"], e["parent"], e["children"], e["parameters"], e["buffers"])
        for e in manifest["modules"]
    ]


def _scripted_manifest(model: torch.nn.Module, inputs: Any) -> tuple[dict[str, Any], list[str]]:
    """The manifest built with ``inputs``, and the messages of the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        manifest = build_manifest(model, inputs=inputs)
    return manifest, [str(w.message) for w in caught]


@pytest.fixture(scope="module")
def resnet() -> torch.nn.Module:
    torch.manual_seed(0)
    return torchvision.models.resnet18(weights=None, num_classes=10).eval()


@pytest.fixture(scope="module")
def image() -> torch.Tensor:
    return torch.randn(1, 3, 32, 32)


@pytest.fixture(scope="module")
def resnet_variants(resnet: torch.nn.Module, image: torch.Tensor) -> dict[str, torch.nn.Module]:
    scripted = _quiet(torch.jit.script, resnet)
    traced = _quiet(torch.jit.trace, resnet, image)
    return {
        "script": scripted,
        "trace": traced,
        "load(script)": _save_and_load(scripted),
        "load(trace)": _save_and_load(traced),
    }


@pytest.mark.parametrize("variant", ["script", "trace", "load(script)", "load(trace)"])
def test_resnet_manifest_equals_the_eager_one(
    variant: str, resnet: torch.nn.Module, image: torch.Tensor, resnet_variants: dict, schema: dict
) -> None:
    model = resnet_variants[variant]
    # RecursiveScriptModule, or TopLevelTracedModule for the root of a trace
    assert isinstance(model, torch.jit.ScriptModule) and type(model).__name__ != "ResNet"
    eager = build_manifest(resnet)
    manifest, messages = _scripted_manifest(model, image)
    assert _structure(manifest) == _structure(eager)
    assert manifest["model"]["class"] == "ResNet"
    assert manifest["model"]["qualified_class"] == "torchvision.models.resnet.ResNet"
    by_path = {e["path"]: e for e in manifest["modules"]}
    # the variants of one class TorchScript mangles (___torch_mangle_N) read as the class
    assert by_path["layer2.0.conv1"]["qualified_class"] == "torch.nn.modules.conv.Conv2d"
    assert by_path["layer1.0"]["qualified_class"] == "torchvision.models.resnet.BasicBlock"
    assert by_path["bn1"]["buffers"] == [
        {"name": "running_mean", "shape": [64], "dtype": "float32"},
        {"name": "running_var", "shape": [64], "dtype": "float32"},
        {"name": "num_batches_tracked", "shape": [], "dtype": "int64"},
    ]
    # no signatures, said plainly, and nothing else went wrong
    assert manifest["schema_version"] == 1
    assert not any("forward" in e for e in manifest["modules"])
    assert messages == [
        "semmap.manifest: forward signatures not recorded (schema version 1 written): the model " + NOT_RECORDED
        + "; the manifest has module paths, classes and tensors only"
    ]
    jsonschema.validate(manifest, schema)


def test_no_warning_without_inputs(resnet_variants: dict) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no signatures were asked for: nothing to warn about
        manifest = build_manifest(resnet_variants["load(script)"])
    assert manifest["schema_version"] == 1


def test_eager_model_holding_a_script_module(image: torch.Tensor, resnet: torch.nn.Module) -> None:
    """An eager model with a TorchScript part: its classes read right and the warning names the part."""
    torch.manual_seed(0)
    stem = torch.nn.Sequential(resnet.conv1, resnet.bn1, resnet.relu)
    eager = torch.nn.Sequential(stem, torch.nn.Flatten())
    mixed = torch.nn.Sequential(_save_and_load(_quiet(torch.jit.script, stem)), torch.nn.Flatten())
    manifest, messages = _scripted_manifest(mixed, image)
    assert _structure(manifest) == _structure(build_manifest(eager))
    assert [e["qualified_class"] for e in manifest["modules"]][:3] == [
        "torch.nn.modules.container.Sequential",
        "torch.nn.modules.container.Sequential",
        "torch.nn.modules.conv.Conv2d",
    ]
    assert len(messages) == 1 and "module '0' " + NOT_RECORDED in messages[0]
    assert manifest["schema_version"] == 1


def test_traced_bert_manifest_equals_the_eager_one(tmp_path: Any, schema: dict) -> None:
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(
        hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, vocab_size=100
    )
    torch.manual_seed(0)
    bert = transformers.BertModel(config).eval()
    input_ids = torch.randint(0, 100, (1, 8))
    traced = _quiet(torch.jit.trace, bert, (input_ids,), strict=False)
    loaded = _save_and_load(traced)
    eager = build_manifest(bert)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        written = write_manifest(loaded, tmp_path / "manifest.json", inputs=(input_ids,))
    assert json.loads((tmp_path / "manifest.json").read_text()) == written
    assert _structure(written) == _structure(eager)
    by_path = {e["path"]: e for e in written["modules"]}
    assert by_path[""]["qualified_class"] == "transformers.models.bert.modeling_bert.BertModel"
    assert by_path["encoder.layer.1.attention.self"]["class"] == "BertSelfAttention"  # mangled in TorchScript
    assert by_path["encoder.layer.1.attention.self.query"]["qualified_class"] == "torch.nn.modules.linear.Linear"
    # the non-persistent buffers (position_ids) are kept too
    assert by_path["embeddings"]["buffers"] == eager["modules"][1]["buffers"] != []
    # a ScriptModule keeps no Python config: the model's type and config are not known
    assert written["model"]["class"] == "BertModel" and written["model"]["model_type"] is None
    assert [str(w.message) for w in caught if NOT_RECORDED in str(w.message)] != []
    assert written["schema_version"] == 1
    jsonschema.validate(written, schema)
