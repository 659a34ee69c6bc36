"""Python answers equal the `semmap` tool's, for every node of every fixture."""

from __future__ import annotations

import json
import subprocess

import pytest

import semmap
from conftest import FIXTURES, fixture_dirs, fixture_id, manifest_of

DIRS = fixture_dirs()


def test_the_corpus_is_there():
    assert len(DIRS) > 100  # both toolchain slices


def tool_sidecar(tool: str, model: str, manifest: str | None) -> dict:
    cmd = [tool, "sidecar", model, "--compact"]
    if manifest:
        cmd += ["--manifest", manifest]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("d", DIRS, ids=fixture_id)
def test_every_node_matches_semmap_sidecar(d, semmap_tool):
    model = str(d / "model.onnx")
    manifest = manifest_of(d)
    manifest = str(manifest) if manifest else None
    expected = tool_sidecar(semmap_tool, model, manifest)
    m = semmap.load(model, manifest)
    nodes = expected["nodes"]
    assert len(m) == len(nodes)
    for got, want in zip(m, nodes):
        assert (
            got.node, got.name, got.op_type, got.domain, got.module, got.class_name,
            got.qualified_class, got.category, got.confidence, got.strategy, got.evidence,
        ) == (
            want["id"], want["name"], want["op_type"], want["domain"], want["module"],
            want["class"] or "", want["qualified_class"] or "", want["category"] or "",
            want["confidence"], want["strategy"], want["evidence"],
        ), want["id"]
        assert got.mapped == (want["strategy"] != "unmapped")
        assert got.origins == want.get("origins", []), want["id"]
    # The whole document, tree and summary included.
    assert m.sidecar() == expected
    assert m.mapped_count == expected["summary"]["mapped"]
    assert m.strategy_counts == expected["summary"]["strategies"]


@pytest.mark.parametrize(
    "d", [p for p in DIRS if fixture_id(p) in {
        "bert-seqcls.torchscript", "gpt2-causal-lm.dynamo", "t5-seq2seq-lm.dynamo"}],
    ids=fixture_id)
def test_queries_match_semmap_query(d, semmap_tool):
    model, manifest = str(d / "model.onnx"), str(d / "manifest.json")
    m = semmap.load(model, manifest)

    def tool(*args: str) -> list[str]:
        out = subprocess.run([semmap_tool, "query", model, "--manifest", manifest, *args, "--json"],
                             capture_output=True, text=True, check=False)
        assert out.returncode == 0, out.stderr
        return [n["node"] for n in json.loads(out.stdout)["nodes"]]

    assert m.layer(1) == tool("--layer", "1")
    assert m.by_category("attention") == tool("--category", "attention")
    assert m.by_class("Linear") == tool("--class", "Linear")
    assert m.below(0.9) == tool("--below", "0.9")
    container = m.layers()[0][0]
    assert m.nodes(f"{container}.0", subtree=True) == tool("--module", f"{container}.0", "--subtree")


@pytest.mark.parametrize("d", [p for p in DIRS if manifest_of(p)][::10], ids=fixture_id)
def test_manifest_fit_matches_semmap_map(d, semmap_tool):
    """Python's manifest_fit is the tool's, field for field (one writer)."""
    model, manifest = str(d / "model.onnx"), str(manifest_of(d))
    out = subprocess.run([semmap_tool, "map", model, "--manifest", manifest, "--json",
                          "--allow-manifest-mismatch"], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    m = semmap.load(model, manifest, allow_manifest_mismatch=True)
    assert m.manifest_fit == json.loads(out.stdout)["manifest_fit"]


def _same_text(got: object, tool_stdout: str) -> None:
    """Equal as JSON text: same keys in the same order, same values."""
    assert json.dumps(got) == json.dumps(json.loads(tool_stdout))


@pytest.mark.parametrize("d", [p for p in DIRS if manifest_of(p)][::7], ids=fixture_id)
def test_tree_matches_semmap_tree_key_for_key(d, semmap_tool):
    """tree() is built in C++ from the ModuleTree, not parsed from the tool's
    text: both views equal `semmap tree --json`, key order included."""
    model, manifest = str(d / "model.onnx"), str(manifest_of(d))
    m = semmap.load(model, manifest, allow_manifest_mismatch=True)
    for view in ([], ["--model-specific"]):
        out = subprocess.run([semmap_tool, "tree", model, "--manifest", manifest, "--json",
                              "--allow-manifest-mismatch", *view],
                             capture_output=True, text=True, check=False)
        assert out.returncode == 0, out.stderr
        _same_text(m.tree(model_specific=bool(view)), out.stdout)
    _same_text(m.sidecar()["tree"], json.dumps(m.tree()))


@pytest.mark.parametrize("optimized", ["bert-seqcls.torchscript.ort-optimized"])
def test_diff_matches_semmap_diff_key_for_key(optimized, semmap_tool):
    """diff() is built in C++ from the ModelDiff: equal to `semmap diff --json`,
    key order included, with changed modules only and with all of them."""
    bert = FIXTURES / "bert-seqcls.torchscript"
    a, b = str(bert / "model.onnx"), str(FIXTURES / optimized / "model.onnx")
    manifest = str(bert / "manifest.json")
    for extra in ([], ["--all-modules"]):
        out = subprocess.run([semmap_tool, "diff", a, b, "--manifest", manifest, "--json", *extra],
                             capture_output=True, text=True, check=False)
        assert out.returncode == 0, out.stderr
        got = semmap.diff(a, b, manifest=manifest, all_modules=bool(extra))
        assert got["fusions"]  # something to compare
        _same_text(got, out.stdout)


@pytest.mark.parametrize("source", ["bert-seqcls.torchscript", "bert-seqcls.torchscript.stripped"])
def test_reference_check_matches_semmap_map(source, semmap_tool):
    """Python's reference_check is the tool's, field for field (one writer):
    the model itself as reference, and its stripped copy (warnings)."""
    d = FIXTURES / "bert-seqcls.torchscript"
    model, manifest = str(d / "model.onnx"), str(d / "manifest.json")
    reference = str(FIXTURES / source / "model.onnx")
    out = subprocess.run([semmap_tool, "map", model, "--manifest", manifest, "--reference",
                          reference, "--json"], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    m = semmap.load(model, manifest, reference=reference)
    assert m.reference_check == json.loads(out.stdout)["reference_check"]
