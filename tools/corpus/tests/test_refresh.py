"""refresh-manifests: one rebuild per export, written only where nothing but signatures and versions changed."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from semmap.manifest._atomic import write_json
from semmap_corpus.refresh import first_difference, refresh, source_key


def _manifest(hidden: int = 4) -> dict[str, Any]:
    linear = {"path": "fc", "class": "Linear", "qualified_class": "torch.nn.modules.linear.Linear", "parent": "",
              "children": [], "parameters": [{"name": "weight", "shape": [hidden, hidden], "dtype": "float32"}],
              "buffers": []}
    root = {"path": "", "class": "Net", "qualified_class": "m.Net", "parent": None, "children": ["fc"],
            "parameters": [], "buffers": []}
    return {"format": "semmap.manifest", "schema_version": 1, "generator": {"semmap": "0.9.0"},
            "model": {"class": "Net", "qualified_class": "m.Net", "model_type": None}, "modules": [root, linear]}


def _with_signatures(manifest: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(manifest)
    out["schema_version"] = 2
    out["generator"] = {"semmap": "1.1.0"}
    out["modules"][0]["forward"] = [{"call": "fc"}]
    out["modules"][1]["forward"] = [{"op": "linear", "reads": ["weight"]}]
    return out


def _entry(d: str, variant: str = "plain", **extra: Any) -> dict[str, Any]:
    name, exporter = d.split(".")[:2]
    return {"dir": d, "name": name, "exporter": exporter, "variant": variant, **extra}


def test_refresh_writes_signatures_and_refuses_other_changes(tmp_path: Path) -> None:
    fixtures = {
        "bert-seqcls.torchscript": (_entry("bert-seqcls.torchscript", export_options={}), _manifest()),
        "bert-seqcls.torchscript.stripped": (
            _entry("bert-seqcls.torchscript.stripped", "stripped", source="bert-seqcls.torchscript"), _manifest()),
        # a manifest of a wider model: the rebuilt one contradicts it
        "bert-seqcls.torchscript.quantized": (
            _entry("bert-seqcls.torchscript.quantized", "quantized", source="bert-seqcls.torchscript"),
            _manifest(hidden=8)),
        "bert-seqcls.dynamo.stripped": (
            _entry("bert-seqcls.dynamo.stripped", "stripped", source="bert-seqcls.dynamo"), _manifest()),
        "gone-arch.torchscript": (_entry("gone-arch.torchscript", export_options={}), _manifest()),
    }
    for d, (_, manifest) in fixtures.items():
        write_json(tmp_path / d / "manifest.json", manifest)
    write_json(tmp_path / "index.json", {"toolchain": "torch-2.9", "fixtures": [e for e, _ in fixtures.values()]})
    before = {d: (tmp_path / d / "manifest.json").read_bytes() for d in fixtures}
    rebuilt: list[tuple[str, ...]] = []

    def rebuild(key: tuple[str, ...], archs: dict) -> dict[str, Any]:
        rebuilt.append(key)
        assert key[1] in archs
        return _with_signatures(_manifest())

    outcome = refresh(tmp_path, "torch-2.9", log=lambda line: None, rebuild_manifest=rebuild)
    assert rebuilt == [("plain", "bert-seqcls", "torchscript", "{}")]  # one rebuild for the export and its variants
    assert outcome.refreshed == ["bert-seqcls.torchscript", "bert-seqcls.torchscript.stripped"]
    for d in outcome.refreshed:
        assert json.loads((tmp_path / d / "manifest.json").read_text()) == _with_signatures(_manifest())
    assert [d for d, _ in outcome.refused] == ["bert-seqcls.torchscript.quantized"]
    assert "/modules/1/parameters/0/shape/0 (8 committed, 4 rebuilt)" in outcome.refused[0][1]
    assert dict(outcome.skipped) == {
        "bert-seqcls.dynamo.stripped": "derived from 'bert-seqcls.dynamo', which the index does not list",
        "gone-arch.torchscript": "gone-arch is not an architecture of slice torch-2.9",
    }
    for d in ("bert-seqcls.torchscript.quantized", "bert-seqcls.dynamo.stripped", "gone-arch.torchscript"):
        assert (tmp_path / d / "manifest.json").read_bytes() == before[d]
    # a second run finds them refreshed
    again = refresh(tmp_path, "torch-2.9", log=lambda line: None, rebuild_manifest=rebuild)
    assert again.unchanged == outcome.refreshed and not again.refreshed


def test_a_pass_that_records_nothing_writes_nothing(tmp_path: Path) -> None:
    write_json(tmp_path / "bert-seqcls.dynamo" / "manifest.json", _manifest())
    write_json(tmp_path / "index.json", {"toolchain": "torch-2.9",
                                          "fixtures": [_entry("bert-seqcls.dynamo", export_options={})]})
    outcome = refresh(tmp_path, "torch-2.9", log=lambda line: None, rebuild_manifest=lambda key, archs: _manifest())
    assert outcome.skipped == [("bert-seqcls.dynamo", "no module recorded a forward signature")]
    assert not outcome.refreshed


def test_source_keys() -> None:
    plain = _entry("t5-seq2seq-lm.torchscript", export_options={"masks": "without-vmap"})
    by_dir = {plain["dir"]: plain}
    assert source_key(plain, by_dir) == ("plain", "t5-seq2seq-lm", "torchscript", '{"masks": "without-vmap"}')
    resorted = _entry("t5-seq2seq-lm.torchscript.stripped-resorted", "stripped-resorted",
                      source="t5-seq2seq-lm.torchscript")
    assert source_key(resorted, by_dir) == source_key(plain, by_dir)
    functions = _entry("t5-seq2seq-lm.torchscript.functions", "functions", export_options={"export_modules_as_functions": []})
    assert source_key(functions, by_dir) == source_key(plain, by_dir)
    optimum = _entry("t5-seq2seq-lm.optimum.optimum-encoder", "optimum-encoder", optimum_task="text2text-generation")
    assert source_key(optimum, by_dir) == ("optimum", "t5-seq2seq-lm", "text2text-generation")


def test_first_difference() -> None:
    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]}) is None
    assert first_difference({"a": [1, 2]}, {"a": [1]}) == "/a (2 items committed, 1 rebuilt)"
    assert first_difference({"a": 1}, {"a": 1, "c": 3}) == "/c (added in the rebuilt manifest)"
    assert first_difference({"a": 1, "c": 3}, {"a": 1}) == "/c (missing in the rebuilt manifest)"
    assert first_difference({"a": 1}, {"a": 1.0}) == "/a (1 committed, 1.0 rebuilt)"
