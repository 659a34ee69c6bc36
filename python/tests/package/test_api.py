"""The Python API of the installed semmap package, on the bundled BERT export."""

from __future__ import annotations

import gc
import hashlib
import os
import subprocess
from pathlib import Path

import pytest

import semmap
from conftest import BERT, FIXTURES, REPO

QUERY_NODE = "/bert/encoder/layer.0/attention/self/query/MatMul"


def test_imports_the_installed_package_not_the_source_tree():
    assert "site-packages" in semmap.__file__, semmap.__file__
    assert semmap.__version__ == "2.0.0"


def test_load_accepts_pathlike_and_str(bert):
    again = semmap.load(str(BERT / "model.onnx"), str(BERT / "manifest.json"))
    assert len(again) == len(bert) == 237
    assert bert.model_class == "BertForSequenceClassification"
    assert bert.has_manifest and bert.mapped_count == 237
    assert bert.strategy_counts["exact_scope"] == 225
    assert bert.strategy_counts["op_rule"] == 12
    assert "BertForSequenceClassification 237 nodes, 237 mapped" in repr(bert)


def test_module_for_gives_every_field(bert):
    m = bert.module_for(QUERY_NODE)
    assert m.node == QUERY_NODE and m.name == QUERY_NODE
    assert m.op_type == "MatMul" and m.domain == ""
    assert m.module == "bert.encoder.layer.0.attention.self.query"
    assert m.class_name == "Linear"
    assert m.qualified_class == "torch.nn.modules.linear.Linear"
    assert m.category == "projection"
    assert m.confidence == 1.0 and m.strategy == "exact_scope"
    assert m.evidence == "scope /bert/encoder/layer.0/attention/self/query"
    assert m.mapped and m.confident
    assert m.as_dict()["module"] == m.module
    assert bert[QUERY_NODE] == m and hash(bert[QUERY_NODE]) == hash(m)
    assert "Linear" in repr(m) and QUERY_NODE in repr(m)


def test_indexing_and_iteration(bert):
    mappings = list(bert)
    assert len(mappings) == 237
    assert [m.index for m in mappings] == list(range(237))
    assert bert[0] == mappings[0] and bert[-1] == mappings[-1]
    assert bert.nodes() == [m.node for m in mappings]
    assert QUERY_NODE in bert and "no such node" not in bert
    with pytest.raises(IndexError):
        bert[237]
    assert mappings[0] != mappings[1]


def test_mappings_keep_their_model_alive():
    m = semmap.load(BERT / "model.onnx", BERT / "manifest.json")
    one = m[QUERY_NODE]
    it = iter(m)
    del m
    gc.collect()
    assert one.module == "bert.encoder.layer.0.attention.self.query"
    assert next(it).node == "/bert/Constant"


def test_queries_match_the_readme(bert):
    assert bert.nodes("bert.encoder.layer.1.attention.self.query") == [
        "/bert/encoder/layer.1/attention/self/query/MatMul",
        "/bert/encoder/layer.1/attention/self/query/Add",
    ]
    assert len(bert.by_category("attention")) == 110
    assert bert.layers() == [("bert.encoder.layer", 2)]
    layer1 = bert.layer(1)
    assert len(layer1) == 79
    assert all(bert[n].module.startswith("bert.encoder.layer.1") for n in layer1)
    assert bert.layer(1, "bert.encoder.layer") == layer1
    subtree = bert.nodes("bert.encoder.layer.1", subtree=True)
    assert subtree == layer1
    assert bert.nodes("bert.encoder.layer.1") == []  # no own nodes
    linear = bert.by_class("Linear")
    assert linear and all(bert[n].class_name == "Linear" for n in linear)
    assert bert.by_class("torch.nn.modules.linear.Linear") == linear
    below = bert.below(0.9)
    assert len(below) == 237 - 225
    assert all(bert[n].confidence < 0.9 for n in below)
    assert bert.matching(r"^bert\.pooler") == bert.nodes("bert.pooler", subtree=True)


def test_lookup_errors_are_key_and_value_errors(bert):
    with pytest.raises(KeyError, match="no node"):
        bert["no/such/node"]
    with pytest.raises(KeyError, match="no.such"):
        bert.nodes("no.such")
    with pytest.raises(KeyError):
        bert.by_class("NoSuchClass")
    with pytest.raises(KeyError):
        bert.layer(99)
    with pytest.raises(ValueError):
        bert.layer(-1)
    with pytest.raises(ValueError):
        bert.matching("(")


def test_file_errors_name_the_file(tmp_path):
    missing = tmp_path / "missing.onnx"
    with pytest.raises(FileNotFoundError, match="missing.onnx"):
        semmap.load(missing)
    with pytest.raises(FileNotFoundError, match="nope.json"):
        semmap.load(BERT / "model.onnx", tmp_path / "nope.json")
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\xff\xff\xff\xff not an onnx model")
    with pytest.raises(ValueError, match="garbage.onnx"):
        semmap.load(garbage)
    bad_manifest = tmp_path / "bad.json"
    bad_manifest.write_text("{ not json")
    with pytest.raises(ValueError, match="bad.json"):
        semmap.load(BERT / "model.onnx", bad_manifest)


def test_paths_with_a_nul_byte_are_refused_like_open(bert, tmp_path):
    # C would cut the path at the NUL: "model.onnx\0.txt" must not load
    # model.onnx, nor a write go to the shorter name.
    with pytest.raises(ValueError, match="null byte"):
        open(str(BERT / "model.onnx") + "\0.txt")
    for bad in (str(BERT / "model.onnx") + "\0.txt", bytes(BERT / "model.onnx") + b"\0.txt"):
        with pytest.raises(ValueError, match="null byte"):
            semmap.load(bad)
    with pytest.raises(ValueError, match="null byte"):
        semmap.load(BERT / "model.onnx", str(BERT / "manifest.json") + "\0x")
    out = tmp_path / "out.onnx"
    for write in (bert.annotate, bert.report, bert.write_sidecar):
        with pytest.raises(ValueError, match="null byte"):
            write(str(out) + "\0.txt")
    assert list(tmp_path.iterdir()) == []


def test_file_names_that_are_not_utf8_work_as_in_the_tool(bert, tmp_path):
    raw = bytes(tmp_path) + b"/m\xff.onnx"
    with open(raw, "wb") as f:
        f.write((BERT / "model.onnx").read_bytes())
    m = semmap.load(raw)  # bytes, as os.listdir(bytes) gives them
    assert len(m) == 237 and os.fsencode(m.path) == raw
    again = semmap.load(os.fsdecode(raw))  # str with a surrogate escape
    assert len(again) == 237
    out = bytes(tmp_path) + b"/out\xfe.onnx"
    result = m.annotate(out)
    assert os.path.exists(out) and os.fsencode(result["output"]) == out
    m.report(bytes(tmp_path) + b"/r\xfd.html")
    m.write_sidecar(os.fsdecode(bytes(tmp_path) + b"/s\xfc.json"))
    assert os.path.exists(bytes(tmp_path) + b"/r\xfd.html")
    assert os.path.exists(bytes(tmp_path) + b"/s\xfc.json")
    with pytest.raises(FileNotFoundError, match="\ufffd"):
        semmap.load(bytes(tmp_path) + b"/missing\xff.onnx")


def test_every_input_is_protected_the_reference_and_rules_too(tmp_path):
    reference = tmp_path / "reference.onnx"
    reference.write_bytes((BERT / "model.onnx").read_bytes())
    rules = tmp_path / "rules.json"
    rules.write_bytes((REPO / "rules" / "default.json").read_bytes())
    m = semmap.load(BERT / "model.onnx", BERT / "manifest.json", reference=reference, rules=rules)
    for target in (reference, rules):
        before = target.read_bytes()
        for write in (m.report, m.annotate, m.write_sidecar):
            with pytest.raises(ValueError, match="allow_overwrite|--allow-overwrite"):
                write(target)
        assert target.read_bytes() == before


def test_long_names_in_errors_are_cut_short(bert):
    with pytest.raises(KeyError) as e:
        bert["n" * 10_000_000]
    assert len(str(e.value)) < 1024


def test_a_manifest_of_another_model_is_refused_unless_allowed():
    wider = FIXTURES / "mismatch" / "bert-wider" / "manifest.json"
    with pytest.raises(ValueError, match="another model"):
        semmap.load(BERT / "model.onnx", wider)
    m = semmap.load(BERT / "model.onnx", wider, allow_manifest_mismatch=True)
    assert not m.manifest_fit["fits"]
    assert len(m) == 237


def test_a_reused_module_and_folded_batchnorms_fit_with_notes():
    # torchvision's ResNet-18 calls relu twice per block; TorchScript folds
    # every BatchNorm into its Conv: its own manifest fits, with notes.
    d = FIXTURES / "torch-2.15" / "tv-resnet18.torchscript"
    m = semmap.load(d / "model.onnx", d / "manifest.json")
    fit = m.manifest_fit
    assert fit["fits"] and fit["checked"] and fit["verdict"] == "fits, with notes"
    notes = {n["reason"]: n for n in fit["notes"]}
    assert set(notes) == {"reused_call", "folded_by_exporter"}
    assert notes["reused_call"]["example"] == "/layer1/layer1.0/relu_1"
    assert notes["reused_call"]["count"] == 8 and notes["reused_call"]["nodes"] == 8
    assert "folded into a neighbour" in notes["folded_by_exporter"]["text"]
    # the same fields as `semmap map --json`'s manifest_fit
    for key in ("class_conflicts", "shape_mismatches", "unused_items", "weight_size_mismatches"):
        assert fit[key] == 0, key
    assert fit["unnamed_weights"] == 20  # every conv weight, a BatchNorm folded in: "onnx::Conv_N"
    assert m["/layer1/layer1.0/relu_1/Relu"].module == "layer1.0.relu"


def test_graph_kind_says_what_names_and_ops_leave_to_inference():
    # calibration_by_kind (docs/rules.md): the mapper reads the kind once the
    # names have answered
    kinds = {
        "tv-resnet18.torchscript": "named",
        "tv-resnet18.torchscript.stripped": "unnamed",
        "bert-seqcls.dynamo.onnxslim": "unnamed",  # node metadata dropped
        "bert-seqcls.dynamo.quantized": "quantized",
        "tv-resnet18.dynamo.qdq": "quantized",
    }
    for name, kind in kinds.items():
        d = FIXTURES / "torch-2.15" / name
        assert semmap.load(d / "model.onnx", d / "manifest.json").graph_kind == kind, name


def test_another_width_of_a_cnn_is_refused_by_its_unnamed_weights():
    # ShuffleNetV2 with its BatchNorms folded names no conv weight
    d = FIXTURES / "torch-2.15" / "tv-shufflenet.torchscript"
    wider = FIXTURES / "torch-2.15" / "negative" / "tv-shufflenet.width" / "manifest.json"
    with pytest.raises(ValueError, match="unnamed weights have another size"):
        semmap.load(d / "model.onnx", wider)


def test_without_a_manifest(bert):
    m = semmap.load(BERT / "model.onnx")
    assert not m.has_manifest and m.manifest_path is None
    assert m[QUERY_NODE].module == "bert.encoder.layer.0.attention.self.query"
    assert m[QUERY_NODE].class_name == ""
    assert m[QUERY_NODE].confidence < bert[QUERY_NODE].confidence


def test_reference_and_rules():
    optimized = FIXTURES / "bert-seqcls.torchscript.ort-optimized"
    plain = semmap.load(optimized / "model.onnx", optimized / "manifest.json")
    ref = semmap.load(
        optimized / "model.onnx", optimized / "manifest.json", reference=BERT / "model.onnx"
    )
    assert ref.reference_path.endswith("model.onnx")
    assert ref.strategy_counts["reference"] > 0
    assert plain.strategy_counts["reference"] == 0
    assert ref.reference_check["ancestor"] and not ref.reference_check["warnings"]
    assert plain.reference_check is None
    # The model itself as its own reference is not used, and says so.
    itself = semmap.load(BERT / "model.onnx", BERT / "manifest.json", reference=BERT / "model.onnx")
    assert itself.reference_check["same_graph"] and itself.reference_check["warnings"]
    own = semmap.load(BERT / "model.onnx", BERT / "manifest.json")
    assert itself.strategy_counts == own.strategy_counts
    with pytest.raises(ValueError, match="model.onnx"):
        semmap.load(
            BERT / "model.onnx",
            BERT / "manifest.json",
            reference=FIXTURES / "gpt2-causal-lm.torchscript" / "model.onnx",
        )
    same = semmap.load(BERT / "model.onnx", BERT / "manifest.json", rules=REPO / "rules" / "default.json")
    assert [m.as_dict() for m in same] == [
        m.as_dict() for m in semmap.load(BERT / "model.onnx", BERT / "manifest.json")
    ]
    with pytest.raises(FileNotFoundError):
        semmap.load(BERT / "model.onnx", rules=REPO / "rules" / "missing.json")


def test_tree_and_sidecar(bert):
    tree = bert.tree()
    root = tree["modules"][0]
    assert root["path"] == "" and root["subtree_nodes"] == 237
    assert bert.tree(model_specific=True)["view"] != tree["view"]
    side = bert.sidecar()
    assert side["format"] == "semmap.sidecar" and len(side["nodes"]) == 237
    assert side["tree"] == tree


def _digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_annotate_writes_a_new_file_and_never_the_model(bert, tmp_path):
    before = _digest(BERT / "model.onnx")
    out = tmp_path / "bert.semmap.onnx"
    r = bert.annotate(out)
    assert r["nodes"] == 237 and r["mapped"] == 237 and r["namespaces_written"] == 237
    annotated = semmap.load(out, BERT / "manifest.json")
    assert [m.module for m in annotated] == [m.module for m in bert]
    with pytest.raises(ValueError, match="model.onnx"):
        bert.annotate(BERT / "model.onnx")
    assert _digest(BERT / "model.onnx") == before
    with pytest.raises(FileNotFoundError):
        bert.annotate(tmp_path / "no" / "dir" / "out.onnx")


def test_scoped_names_never_below_the_confident_floor(bert, tmp_path):
    # A renamed node reads back at confidence 1: a lower floor is refused.
    for floor in (0.0, 0.5, 0.89):
        with pytest.raises(ValueError, match="confidence 1"):
            bert.annotate(tmp_path / "scoped.onnx", scoped_names=True, min_confidence=floor)
    assert not (tmp_path / "scoped.onnx").exists()
    assert bert.annotate(tmp_path / "scoped.onnx", scoped_names=True, min_confidence=0.95)["nodes"] == 237


def test_report_and_write_sidecar(bert, tmp_path):
    # what `semmap report` prints: "bert.html: report of 51 modules, 237 nodes (237 mapped)"
    assert bert.report(tmp_path / "bert.html") == {
        "output": str(tmp_path / "bert.html"), "modules": 51, "nodes": 237, "mapped": 237}
    html = (tmp_path / "bert.html").read_text()
    assert 'id="semmap-data"' in html
    bert.write_sidecar(tmp_path / "bert.semmap.json")
    import json

    assert json.loads((tmp_path / "bert.semmap.json").read_text())["nodes"] == bert.sidecar()["nodes"]
    with pytest.raises(ValueError):
        bert.write_sidecar(BERT / "manifest.json")


def test_report_with_numerics(tmp_path):
    # `semmap report --numerics`: the library reads the compare-numerics document.
    numerics = REPO / "tests" / "data" / "bert-seqcls.dynamo.quantized.numerics.json"
    quantized = FIXTURES / "torch-2.15" / "bert-seqcls.dynamo.quantized"
    m = semmap.load(quantized / "model.onnx", quantized / "manifest.json")
    assert m.report(tmp_path / "q.html", numerics=numerics)["modules"] == 51
    html = (tmp_path / "q.html").read_text()
    assert '"numerics":{"deployed":"fixtures/torch-2.15/bert-seqcls.dynamo.quantized/model.onnx"' in html
    (tmp_path / "other.json").write_text('{"format": "semmap.report"}')
    with pytest.raises(ValueError, match=r'other\.json: /format: not a "semmap.numerics" document'):
        m.report(tmp_path / "r.html", numerics=tmp_path / "other.json")
    with pytest.raises(FileNotFoundError, match="missing.json"):
        m.report(tmp_path / "r.html", numerics=tmp_path / "missing.json")
    assert not (tmp_path / "r.html").exists()


def test_diff_against_the_ort_optimized_export(bert):
    optimized = FIXTURES / "bert-seqcls.torchscript.ort-optimized" / "model.onnx"
    d = semmap.diff(bert, optimized, manifest=BERT / "manifest.json")
    assert d["format"] == "semmap.diff"
    assert d["common_nodes"] == 29
    by_path = semmap.diff(BERT / "model.onnx", optimized, manifest=BERT / "manifest.json")
    assert by_path["common_nodes"] == 29
    gpt2 = FIXTURES / "gpt2-causal-lm.torchscript"
    with pytest.raises(ValueError):
        semmap.diff(bert, gpt2 / "model.onnx", manifest_b=gpt2 / "manifest.json")


def test_to_pandas(bert):
    df = bert.to_pandas()
    assert len(df) == 237
    assert list(df.columns) == [
        "node", "op_type", "module", "class_name", "qualified_class",
        "category", "confidence", "strategy", "evidence",
    ]
    counts = df.groupby("module").size()
    assert counts["bert.encoder.layer.1.attention.self.query"] == 2
    assert df.loc[df.node == QUERY_NODE, "class_name"].item() == "Linear"


def test_docstrings_reach_help():
    assert "manifest" in semmap.load.__doc__
    assert "module path" in semmap.Mapping.module.__doc__
    assert "layer" in semmap.MappedModel.layer.__doc__
    stubs = Path(semmap.__file__).with_name("_core.pyi")
    assert stubs.exists() and Path(semmap.__file__).with_name("py.typed").exists()


def test_console_script_runs_the_tool(semmap_tool):
    out = subprocess.run(
        [semmap_tool, "map", str(BERT / "model.onnx"), "--manifest", str(BERT / "manifest.json"),
         "--node", QUERY_NODE],
        capture_output=True, text=True, check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "bert.encoder.layer.0.attention.self.query" in out.stdout
    bad = subprocess.run([semmap_tool, "map", "/nonexistent/model.onnx"],
                         capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and "model.onnx" in bad.stderr


def test_versions_and_floor_agree_with_the_core_and_the_distribution():
    from importlib.metadata import version

    assert semmap.__version__ == semmap._core.__version__ == version("semmap")
    assert semmap.CONFIDENT_FLOOR == semmap._core.CONFIDENT_FLOOR == 0.9


def test_manifest_writer_needs_torch_and_says_so(tmp_path):
    """semmap.manifest is in the wheel; without PyTorch (this venv has none: the
    package's own dependencies are none) it fails with the extra to install."""
    import importlib.util
    import sys

    assert importlib.util.find_spec("torch") is None, "the wheel's test venv must not have torch"
    assert importlib.util.find_spec("semmap.manifest") is not None
    with pytest.raises(ImportError, match=r"semmap\[torch\]"):
        import semmap.manifest  # noqa: F401
    script = Path(sys.executable).with_name("semmap-manifest")
    out = subprocess.run([str(script), "manifest", "--model-type", "bert", "-o", str(tmp_path / "out")],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 1 and "semmap[torch]" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "out").exists()


def test_strategy_is_a_string_valued_enum(bert):
    from semmap import Strategy

    m = bert.module_for("/bert/encoder/layer.0/attention/self/query/MatMul")
    assert m.strategy is Strategy.EXACT_SCOPE
    assert m.strategy == "exact_scope" and isinstance(m.strategy, str)
    assert f"{m.strategy}" == str(m.strategy) == "exact_scope"
    # one member per strategy of the library, in its order
    assert [s.value for s in Strategy] == list(bert.strategy_counts)
    assert {type(mp.strategy) for mp in bert} == {Strategy}


def test_fused_node_names_its_origins():
    # torchvision's ResNet-18 exported by dynamo: the exporter folds each
    # BatchNorm into its Conv; the Conv is the answer, both are its origins.
    resnet = FIXTURES / "torch-2.15" / "tv-resnet18.dynamo"
    m = semmap.load(resnet / "model.onnx", resnet / "manifest.json")
    conv = m.module_for("node_Conv_294")
    assert conv.module == "layer1.0.conv1"
    assert conv.origins == ["layer1.0.conv1", "layer1.0.bn1"]
    assert conv.as_dict()["origins"] == conv.origins
    assert m.module_for("node_relu_1").origins == []


def test_embed_needs_a_manifest_and_never_overwrites(tmp_path):
    model = BERT / "model.onnx"
    with pytest.raises(ValueError, match="needs the model's manifest"):
        semmap.embed(model, tmp_path / "out.onnx")
    assert not (tmp_path / "out.onnx").exists()
    result = semmap.embed(model, tmp_path / "out.onnx", manifest=BERT / "manifest.json")
    assert result["nodes"] == len(semmap.load(model)) and result["record_bytes"] > 0
    with pytest.raises(ValueError):
        semmap.embed(tmp_path / "out.onnx", tmp_path / "out.onnx", manifest=BERT / "manifest.json")
    m = semmap.load(tmp_path / "out.onnx")
    assert m.provenance["record"] == "source" and m.provenance["record_bytes"] == result["record_bytes"]
    assert semmap.load(model).provenance == {"manifest": "none", "record": "absent", "reference": "none"}
