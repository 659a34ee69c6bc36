"""semmap.compare_numerics and `semmap compare-numerics` (docs/numerics.md), with
the real ONNX Runtime on real exports of fixtures/torch-2.15: a copy with one
module damaged on purpose ranks that module first, processed copies (onnxslim,
names stripped, re-sorted, quantized, QDQ) pair by module, the figures agree with
ONNX Runtime's own per-tensor tool where both apply, and bad input is an error
naming the file or the input. No timing is asserted."""

from __future__ import annotations

import json
import math
import re
import shlex
import shutil
import subprocess

import numpy as np
import onnx
import pytest

import semmap
from conftest import FIXTURES, REPO
from numerics_faults import damaged_copy, module_weights

pytest.importorskip("onnxruntime")
from semmap.numerics import NumericsError  # noqa: E402

SLICE = FIXTURES / "torch-2.15"
BERT = SLICE / "bert-seqcls.dynamo"
RESNET = SLICE / "resnet-imgcls.dynamo"
BERT_TS = FIXTURES / "bert-seqcls.torchscript"  # the torch 2.9 slice


def files(name: str):
    d = SLICE / name
    return next(d.glob("*.onnx")), d / "manifest.json"


@pytest.fixture(scope="module")
def bert_quantized():
    return semmap.compare_numerics(BERT / "model.onnx", SLICE / "bert-seqcls.dynamo.quantized" / "model.onnx",
                                   manifest=BERT / "manifest.json")


# ------------------------------------------------------------------ known fault found


@pytest.mark.parametrize("reference, deployed, module", [
    ("bert-seqcls.dynamo", "bert-seqcls.dynamo", "bert.encoder.layer.0.attention.self.query"),
    ("bert-seqcls.dynamo", "bert-seqcls.dynamo", "bert.encoder.layer.1.intermediate.dense"),
    ("bert-seqcls.dynamo", "bert-seqcls.dynamo", "bert.embeddings.LayerNorm"),
    # Through onnxslim: the damaged copy's names and graph are onnxslim's.
    ("bert-seqcls.dynamo", "bert-seqcls.dynamo.onnxslim", "bert.encoder.layer.0.output.dense"),
    ("bert-seqcls.torchscript", "bert-seqcls.torchscript.stripped", "bert.encoder.layer.1.attention.self.value"),
    ("resnet-imgcls.dynamo", "resnet-imgcls.dynamo", "resnet.encoder.stages.1.layers.0.layer.0.convolution"),
])
def test_the_damaged_module_ranks_first(reference, deployed, module, tmp_path):
    ref, manifest = files(reference)
    source, _ = files(deployed)
    mapped = semmap.load(source, manifest, reference=ref)
    damaged = tmp_path / "damaged.onnx"
    damaged_copy(source, mapped, module, damaged, "bits2")
    report = semmap.compare_numerics(ref, damaged, manifest=manifest)
    assert report.ranking("leaf")[0] == module, report.to_text(top=5)
    assert report.suggest_float(1) == [module]
    first = report.modules("leaf")[0]
    assert first["input_error"] < 1e-5 < first["added_error"]
    assert first["local_error"]["rel_l2"] == pytest.approx(first["output_error"]["rel_l2"], rel=1e-3)
    # Fed the reference's inputs, every other module is as exact as before.
    rest = [r["local_error"]["rel_l2"] for r in report.modules("leaf")[1:] if "local_error" in r]
    assert rest and max(rest) < 1e-4 < first["local_error"]["rel_l2"]


def test_a_module_downstream_of_an_amplifying_head_by_local_error(tmp_path):
    """BERT's 2-logit classifier amplifies a damaged token-type embedding's error
    ~6x, so by added error (output minus input error) it ranks above the damaged
    module; the isolated run (each module fed the reference's inputs) does not
    blame it: rank_by="local"."""
    ref, manifest = files("bert-seqcls.dynamo")
    module = "bert.embeddings.token_type_embeddings"
    damaged = tmp_path / "damaged.onnx"
    damaged_copy(ref, semmap.load(ref, manifest), module, damaged, "bits2")
    by_added = semmap.compare_numerics(ref, damaged, manifest=manifest, rank_by="added")
    assert by_added.ranking("leaf")[:2] == ["classifier", module]
    by_local = semmap.compare_numerics(ref, damaged, manifest=manifest)  # the default with isolate
    assert by_local.to_dict()["ranked_by"] == {"leaf": "local", "subtree": "added"}
    assert by_local.ranking("leaf")[0] == module
    no_isolate = semmap.compare_numerics(ref, damaged, manifest=manifest, isolate=False)
    assert no_isolate.to_dict()["ranked_by"]["leaf"] == "added"
    classifier = next(r for r in by_local.modules("leaf") if r["module"] == "classifier")
    assert classifier["local_error"]["rel_l2"] < 1e-5 < classifier["added_error"]


def test_nan_in_one_module_is_reported_there_not_raised(tmp_path):
    ref, manifest = files("bert-seqcls.dynamo")
    module = "bert.encoder.layer.0.intermediate.dense"
    proto = onnx.load(str(ref))
    mapped = semmap.load(ref, manifest)
    name = module_weights(proto, mapped)[module][0]
    t = next(t for t in proto.graph.initializer if t.name == name)
    w = onnx.numpy_helper.to_array(t).copy()
    w.flat[0] = np.nan
    t.CopyFrom(onnx.numpy_helper.from_array(w, name))
    damaged = tmp_path / "nan.onnx"
    onnx.save(proto, str(damaged))
    report = semmap.compare_numerics(ref, damaged, manifest=manifest)
    first = report.modules("leaf")[0]
    assert first["module"] == module and first["introduces_nonfinite"]
    downstream = [r for r in report.modules("leaf") if r.get("nonfinite") and r["module"] != module]
    assert downstream and not any(r.get("introduces_nonfinite") for r in downstream)
    doc = report.to_dict()
    assert doc["outputs"][0]["nonfinite"]["deployed"] > 0
    json.dumps(doc, allow_nan=False)  # the document is strict JSON
    assert "NaN/Inf introduced" in report.to_text()


# ------------------------------------------------------------------ pairing


@pytest.mark.parametrize("deployed", ["bert-seqcls.dynamo.stripped", "bert-seqcls.dynamo.onnxslim-resorted",
                                      "bert-seqcls.torchscript.stripped-resorted"])
def test_renamed_and_resorted_copies_pair_every_module(deployed):
    ref, manifest = files(deployed.rsplit(".", 1)[0])
    report = semmap.compare_numerics(ref, files(deployed)[0], manifest=manifest)
    doc = report.to_dict()
    for view in ("leaf", "subtree"):
        assert doc["pairing"][view]["paired"] == doc["pairing"][view]["with_boundary_outputs"] > 10
    assert doc["unpaired"] == []
    assert doc["final_error"] == 0
    pairs = [o for r in report.modules("leaf") for o in r["outputs"]]
    assert all(o["rel_l2"] == 0 and o["sqnr_db"] is None for o in pairs)
    if "stripped" in deployed:  # paired with no help from the names: only the graph's outputs keep theirs
        outputs = {o["reference"] for o in doc["outputs"]}
        assert all(o["reference"] != o["deployed"] for o in pairs if o["reference"] not in outputs)
    assert report.suggest_float(3) == []


def test_a_quantized_copy(bert_quantized):
    r = bert_quantized
    doc = r.to_dict()
    assert doc["format"] == "semmap.numerics" and doc["version"] == 1
    assert doc["pairing"]["leaf"]["paired"] == doc["pairing"]["leaf"]["with_boundary_outputs"]
    assert 0.001 < r.final_error < 0.5
    for row in r.modules("leaf") + r.modules("subtree"):
        if row["output_error"] is None:
            continue
        e = row["output_error"]
        assert 0 <= e["rel_l2"] and -1 <= e["cosine"] <= 1 and e["max_abs"] >= 0
        if e["sqnr_db"] is not None:
            assert e["sqnr_db"] == pytest.approx(-20 * math.log10(e["rel_l2"]), abs=1e-6)
        assert row["added_error"] == pytest.approx(e["rel_l2"] - row["input_error"])
    assert doc["ranked_by"]["leaf"] == "local"
    ranked = [row.get("local_error", {}).get("rel_l2", row["added_error"])
              for row in r.modules("leaf") if row["rank"] is not None]
    assert ranked == sorted(ranked, reverse=True)
    by_added = [row["added_error"] for row in r.modules("subtree") if row["rank"] is not None]
    assert by_added == sorted(by_added, reverse=True)
    assert r.suggest_float(2) == r.ranking("leaf")[:2]
    assert doc["inputs"]["source"] == "generated" and "seed 0" in doc["inputs"]["note"]
    assert doc["instrumentation_drift"]["reference"] < 1e-5
    assert doc["cost"]["capture_and_compare"] > 0 and doc["cost"]["batches"]["discovery"] == 2


@pytest.mark.parametrize("deployed", ["resnet-imgcls.dynamo.qdq", "tv-regnet.torchscript.qdq"])
def test_a_static_qdq_copy_pairs_the_activations_its_quantizer_removed(deployed):
    """ONNX Runtime's QDQ quantizer drops a ReLU before a QuantizeLinear that clips
    at 0: the QuantizeLinear/DequantizeLinear pair clipping in its place stands in
    for the ReLU module, whose output pairs with the pair's, at quantization error."""
    ref, manifest = files(deployed.rsplit(".", 1)[0])
    deployed_path = files(deployed)[0]
    dep_ops = {n.op_type for n in onnx.load(str(deployed_path), load_external_data=False).graph.node}
    ref_relus = {n.name for n in onnx.load(str(ref), load_external_data=False).graph.node if n.op_type == "Relu"}
    assert ref_relus and "Relu" not in dep_ops  # the quantizer removed every one
    doc = semmap.compare_numerics(ref, deployed_path, manifest=manifest, isolate=False).to_dict()
    assert doc["unpaired"] == []
    for view in ("leaf", "subtree"):
        assert doc["pairing"][view]["reference_paired"] == doc["pairing"][view]["reference_with_boundary_outputs"]
    relus = [r for r in doc["views"]["leaf"] if r["class"] == "ReLU"]
    assert relus
    for row in relus:
        assert row["output_error"] is not None, row["module"]
        # A quantized ReLU: close to the reference's, never the unclipped value.
        assert row["output_error"]["cosine"] > 0.99, row


def test_impact_repairs_each_module_and_its_suggestion_pays(tmp_path):
    """impact=N: the first N modules of the ranking each repaired in turn (their own
    error taken out of their outputs) and the final error measured; suggest_float
    orders by it, and keeping the first suggestion in float with quantize_dynamic
    lowers the final error of the real requantized file."""
    import logging

    from onnxruntime.quantization import quantize_dynamic

    logging.getLogger().setLevel(logging.ERROR)
    # The torch 2.9 slice's export: every pinned ONNX Runtime quantizes it (the
    # oldest one's shape inference refuses the torch 2.15 dynamo export).
    ref, manifest = BERT_TS / "model.onnx", BERT_TS / "manifest.json"
    q = tmp_path / "model.int8.onnx"
    quantize_dynamic(str(ref), str(q))
    report = semmap.compare_numerics(ref, q, manifest=manifest, impact=6)
    doc = report.to_dict()
    measured = [r for r in doc["views"]["leaf"] if "impact" in r]
    assert len(measured) == 6 and doc["cost"]["batches"]["repair"] == 6
    assert measured == [r for r in doc["views"]["leaf"] if r["rank"] is not None][:6]
    for r in measured:
        assert r["impact"] == pytest.approx(doc["final_error"] - r["repaired_final_error"])
    keep = report.suggest_float(2)
    best = max(measured, key=lambda r: r["impact"])
    assert best["impact"] > 0 and keep[0] == best["module"]
    assert "repaired (each module's own error taken out" in report.to_text(top=3, suggest=2)
    kept = tmp_path / "model.mixed.onnx"
    quantize_dynamic(str(ref), str(kept), nodes_to_exclude=semmap.nodes_to_exclude(semmap.load(ref, manifest), keep[:1]))
    again = semmap.compare_numerics(ref, kept, manifest=manifest, isolate=False)
    assert again.final_error < report.final_error
    # Without impact the suggestion is the ranking's, as before.
    plain = semmap.compare_numerics(ref, q, manifest=manifest)
    assert all("impact" not in r for r in plain.modules("leaf"))
    assert plain.suggest_float(2) == plain.ranking("leaf")[:2]
    with pytest.raises(ValueError, match="impact"):
        semmap.compare_numerics(ref, q, manifest=manifest, impact=-1)


def test_batches_give_the_figures_of_one_batch(tmp_path):
    """A capture budget smaller than the values makes one batch per value pair
    (and per module for the isolated run): the same figures."""
    ref, manifest = files("bert-seqcls.dynamo")
    dep = files("bert-seqcls.dynamo.quantized")[0]
    one = semmap.compare_numerics(ref, dep, manifest=manifest, samples=2).to_dict()
    many = semmap.compare_numerics(ref, dep, manifest=manifest, samples=2, max_capture_bytes=1).to_dict()
    assert one["cost"]["batches"]["capture"] == 0
    assert many["cost"]["batches"]["capture"] > 10 and many["cost"]["batches"]["isolation"] > 10
    for view in ("leaf", "subtree"):
        a = {r["module"]: r for r in one["views"][view]}
        b = {r["module"]: r for r in many["views"][view]}
        assert a.keys() == b.keys()
        for m in a:
            # Not bit for bit: the capturing copies differ, and with them the fusions
            # ONNX Runtime can make (a few 1e-6 relative).
            for key in ("output_error", "local_error"):
                if a[m].get(key):
                    assert a[m][key]["rel_l2"] == pytest.approx(b[m][key]["rel_l2"], rel=1e-3, abs=1e-7), m


def test_agrees_with_onnx_runtimes_per_tensor_tool(tmp_path):
    """On a quantize_static QDQ copy (names kept), each value both tools pair has the
    SQNR ONNX Runtime's qdq_loss_debug computes for it, both with ONNX Runtime's
    graph optimizations off. (With them on, the two tools' capturing copies let it
    fuse different QDQ groups into integer kernels, and a few values round the
    other way: within 0.05 dB.)"""
    from onnxruntime.quantization import qdq_loss_debug as dbg

    ref, manifest = files("bert-seqcls.dynamo")
    qdq = files("bert-seqcls.dynamo.qdq")[0]
    rng = np.random.default_rng(1)
    feeds = {"input_ids": rng.integers(0, 200, (2, 8)).astype(np.int64),
             "attention_mask": np.ones((2, 8), np.int64)}
    report = semmap.compare_numerics(ref, qdq, manifest=manifest, inputs=feeds, optimization="disabled")

    import onnxruntime as ort
    from onnxruntime.quantization import CalibrationDataReader

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.done = False

        def get_next(self):
            if self.done:
                return None
            self.done = True
            return feeds

        def rewind(self):
            self.done = False

    acts = {}
    for name, path in (("float", ref), ("qdq", qdq)):
        aug = tmp_path / f"{name}.aug.onnx"
        dbg.modify_model_output_intermediate_tensors(str(path), str(aug))
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        acts[name] = dbg.collect_activations(str(aug), Reader(), session_options=options)
    matching = dbg.create_activation_matching(acts["qdq"], acts["float"])
    checked = 0
    for row in report.modules("leaf") + report.modules("subtree"):
        for o in row["outputs"]:
            m = matching.get(o["reference"])
            ours = acts["qdq"].get(o["deployed"])
            if m is None or "float" not in m or ours is None or o["sqnr_db"] is None:
                continue
            # The tensor of theirs that our deployed value is: before its QDQ pair, or after.
            kind = next((k for k in ("pre_qdq", "post_qdq") if m.get(k) is not None
                         and np.array_equal(m[k][0], ours[0])), None)
            if kind is None:
                continue
            theirs = dbg.compute_signal_to_quantization_noice_ratio(m["float"], m[kind])
            assert o["sqnr_db"] == pytest.approx(theirs, abs=1e-4), (o, kind)
            checked += 1
    assert checked >= 10


# ------------------------------------------------------------------ inputs


def test_inputs_from_npz_a_directory_and_arrays_agree(tmp_path):
    ref, manifest = files("bert-seqcls.dynamo")
    dep = files("bert-seqcls.dynamo.quantized")[0]
    rng = np.random.default_rng(3)
    feeds = {"input_ids": rng.integers(0, 200, (2, 8)).astype(np.int64),
             "attention_mask": np.ones((2, 8), np.int64)}
    np.savez(tmp_path / "inputs.npz", **feeds)
    (tmp_path / "npy").mkdir()
    for k, v in feeds.items():
        np.save(tmp_path / "npy" / f"{k}.npy", v)
    results = [semmap.compare_numerics(ref, dep, manifest=manifest, inputs=x).to_dict()
               for x in (feeds, tmp_path / "inputs.npz", tmp_path / "npy")]
    assert [r["inputs"]["source"] for r in results] == ["arrays", "file", "file"]
    assert results[0]["final_error"] == results[1]["final_error"] == results[2]["final_error"]
    two = semmap.compare_numerics(ref, dep, manifest=manifest, inputs=[feeds, feeds]).to_dict()
    assert two["inputs"]["samples"] == 2
    assert two["final_error"] == pytest.approx(results[0]["final_error"], rel=1e-9)


def test_generated_inputs_say_how_they_were_made():
    ref, manifest = files("bert-seqcls.dynamo")
    doc = semmap.compare_numerics(ref, ref, manifest=manifest, seed=7, samples=2).to_dict()
    ins = {i["name"]: i for i in doc["inputs"]["inputs"]}
    assert ins["input_ids"]["how"].startswith("uniform in [0, 200)")  # the embedding's rows
    assert ins["attention_mask"]["how"] == "ones"
    assert "seed 7, 2 samples" in doc["inputs"]["note"]


@pytest.mark.parametrize("edit, message", [
    (lambda f: f.update(input_ids=f["input_ids"].astype(np.int32)), r"input 'input_ids': int32 given, .* takes int64"),
    (lambda f: f.update(input_ids=f["input_ids"][None]), r"input 'input_ids': shape \[1, 2, 8\] given, .* rank 2"),
    (lambda f: f.pop("attention_mask"), r"input 'attention_mask' of .*model.onnx is not given"),
    (lambda f: f.update(pixel_values=np.zeros(3, np.float32)), r"input 'pixel_values' is not an input of"),
])
def test_inputs_of_the_wrong_names_types_or_shapes(edit, message):
    ref, manifest = files("bert-seqcls.dynamo")
    feeds = {"input_ids": np.zeros((2, 8), np.int64), "attention_mask": np.ones((2, 8), np.int64)}
    edit(feeds)
    with pytest.raises(NumericsError, match=message):
        semmap.compare_numerics(ref, ref, manifest=manifest, inputs=feeds)


def test_inputs_files_that_are_not_inputs(tmp_path):
    ref, manifest = files("bert-seqcls.dynamo")
    with pytest.raises(FileNotFoundError, match="missing.npz"):
        semmap.compare_numerics(ref, ref, manifest=manifest, inputs=tmp_path / "missing.npz")
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(NumericsError, match="bad.npz: not an .npz file"):
        semmap.compare_numerics(ref, ref, manifest=manifest, inputs=tmp_path / "bad.npz")
    (tmp_path / "empty").mkdir()
    with pytest.raises(NumericsError, match="holds NAME.npy files; it has none"):
        semmap.compare_numerics(ref, ref, manifest=manifest, inputs=tmp_path / "empty")


# ------------------------------------------------------------------ bad files


def test_files_of_two_different_models_are_refused():
    with pytest.raises(NumericsError, match=r"resnet-imgcls.dynamo/model.onnx is not a copy of .*bert-seqcls"):
        semmap.compare_numerics(BERT / "model.onnx", RESNET / "model.onnx", manifest=BERT / "manifest.json")
    # Without manifests: the reference check's reason (no initializer in common).
    with pytest.raises(NumericsError, match="is not a copy of .*initializers"):
        semmap.compare_numerics(BERT / "model.onnx", RESNET / "model.onnx")
    # Mapped without a reference: semmap.diff's check that the module paths overlap.
    with pytest.raises(NumericsError, match="two different models"):
        semmap.compare_numerics(BERT / "model.onnx", semmap.load(RESNET / "model.onnx"))


def test_a_file_onnx_runtime_cannot_load_is_named(tmp_path):
    proto = onnx.load(str(BERT / "model.onnx"))
    gelu = next(n for n in proto.graph.node if n.op_type == "Gelu")
    gelu.op_type = "NoSuchOp"  # semmap still maps it; ONNX Runtime has no kernel for it
    bad = tmp_path / "unrunnable.onnx"
    onnx.save(proto, str(bad))
    with pytest.raises(NumericsError, match=r"unrunnable.onnx: ONNX Runtime cannot load the deployed model"):
        semmap.compare_numerics(BERT / "model.onnx", bad, manifest=BERT / "manifest.json")


def test_an_unknown_provider_is_refused():
    with pytest.raises(NumericsError, match="no execution provider 'NoSuchExecutionProvider'"):
        semmap.compare_numerics(BERT / "model.onnx", BERT / "model.onnx", manifest=BERT / "manifest.json",
                                providers="NoSuchExecutionProvider")


def test_external_data_models(tmp_path):
    proto = onnx.load(str(BERT / "model.onnx"))
    onnx.save(proto, str(tmp_path / "external.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="external.onnx.data")
    assert (tmp_path / "external.onnx.data").stat().st_size > 20_000
    report = semmap.compare_numerics(BERT / "model.onnx", tmp_path / "external.onnx", manifest=BERT / "manifest.json",
                                     max_capture_bytes=4096)
    assert report.final_error == 0
    assert report.to_dict()["pairing"]["leaf"]["paired"] > 10


# ------------------------------------------------------------------ closing the loop


def test_nodes_to_exclude_is_the_subtree_by_node_name(tmp_path):
    """On the torch 2.9 slice's BERT (ONNX Runtime 1.23's quantize_dynamic fails on the
    torch 2.15 dynamo export's shapes, before any node is excluded)."""
    from onnxruntime.quantization import quantize_dynamic

    model, manifest = BERT_TS / "model.onnx", BERT_TS / "manifest.json"
    m = semmap.load(model, manifest)
    modules = ["bert.encoder.layer.1.attention", "classifier"]
    names = semmap.nodes_to_exclude(m, modules)
    expected = {m[n].name for module in modules for n in m.nodes(module, subtree=True)}
    assert expected <= set(names) and len(names) == len(set(names))
    # The classifier is a Gemm, which quantize_dynamic rewrites (and renames) first.
    gemm = next(m[n].name for n in m.nodes("classifier", subtree=True) if m[n].op_type == "Gemm")
    assert set(names) - expected == {gemm + "_MatMul", gemm + "_Add", gemm + "_Transpose"}
    assert semmap.nodes_to_exclude(model, "classifier", manifest=manifest) == \
        [gemm, gemm + "_MatMul", gemm + "_Add", gemm + "_Transpose"]
    with pytest.raises(KeyError):
        semmap.nodes_to_exclude(m, ["no.such.module"])
    # And the quantizer keeps them in float: those modules make no error of their own.
    quantize_dynamic(str(model), str(tmp_path / "int8.onnx"), nodes_to_exclude=names)
    report = semmap.compare_numerics(model, tmp_path / "int8.onnx", manifest=manifest)
    kept = [r for r in report.modules("leaf") if r["module"] == "classifier" or
            r["module"].startswith("bert.encoder.layer.1.attention")]
    assert kept and all(r["local_error"]["rel_l2"] < 1e-5 for r in kept if "local_error" in r)
    quantized = [r for r in report.modules("leaf") if r["module"].startswith("bert.encoder.layer.0.attention.self.")]
    assert quantized and all(r["local_error"]["rel_l2"] > 1e-4 for r in quantized)


# ------------------------------------------------------------------ command line and page


def test_the_command_prints_the_table_and_the_suggestion(semmap_tool, tmp_path):
    ref, manifest = files("bert-seqcls.dynamo")
    dep = files("bert-seqcls.dynamo.quantized")[0]
    out = subprocess.run([semmap_tool, "compare-numerics", str(ref), str(dep), "--manifest", str(manifest),
                          "--top", "3", "--suggest-float", "2"], capture_output=True, text=True, check=True)
    assert "modules by the error they make on their own" in out.stdout
    assert re.search(r"^keep in float \(--suggest-float 2\): \S+, \S+$", out.stdout, re.M)
    js = subprocess.run([semmap_tool, "compare-numerics", str(ref), str(dep), "--manifest", str(manifest),
                         "--json", "--suggest-float", "2"], capture_output=True, text=True, check=True)
    doc = json.loads(js.stdout)
    assert doc["format"] == "semmap.numerics" and len(doc["suggest_float"]) == 2
    # --suggest-float K repairs the first 3 K of the ranking and names the K whose
    # repair lowers the final error most.
    measured = [r for r in doc["views"]["leaf"] if "impact" in r]
    assert len(measured) == 6 and measured == doc["views"]["leaf"][:6]
    by_impact = sorted((r for r in measured if r["impact"] > 0), key=lambda r: -r["impact"])
    assert doc["suggest_float"][:len(by_impact)] == [r["module"] for r in by_impact][:2]


def test_the_command_fails_with_the_reason(semmap_tool, tmp_path):
    out = subprocess.run([semmap_tool, "compare-numerics", str(BERT / "model.onnx"), str(RESNET / "model.onnx"),
                          "--manifest", str(BERT / "manifest.json")], capture_output=True, text=True)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("semmap compare-numerics: ") and "is not a copy of" in out.stderr
    assert "Traceback" not in out.stderr
    missing = subprocess.run([semmap_tool, "compare-numerics", str(tmp_path / "no.onnx"), str(BERT / "model.onnx")],
                             capture_output=True, text=True)
    assert missing.returncode == 2 and "no.onnx" in missing.stderr and "Traceback" not in missing.stderr


def test_other_commands_still_reach_the_cpp_tool(semmap_tool):
    out = subprocess.run([semmap_tool, "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("semmap ")
    # The bundled C++ tool itself points to the Python package.
    from semmap._cli import tool_path

    cpp = subprocess.run([str(tool_path()), "compare-numerics", "a.onnx", "b.onnx"], capture_output=True, text=True)
    assert cpp.returncode == 2 and "pip install 'semmap[onnxruntime]'" in cpp.stderr


@pytest.mark.parametrize("doc", ["docs/numerics.md", "README.md"])
def test_the_documented_command_runs(doc, semmap_tool):
    """The command block of docs/numerics.md and of README.md, as written, from the
    repository's root."""
    text = (REPO / doc).read_text()
    block = re.search(r"<!-- doctest: tested-by python/tests/package/test_numerics.py -->\n```sh\n(.*?)```",
                      text, re.S).group(1)
    commands = [c for c in block.replace("\\\n", " ").splitlines() if c.strip() and not c.startswith("#")]
    assert commands
    for command in commands:
        argv = shlex.split(command)
        assert argv[0] == "semmap" and argv[1] == "compare-numerics"
        out = subprocess.run([semmap_tool, *argv[1:]], cwd=REPO, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert "modules by the error they make on their own" in out.stdout
        if "--suggest-float" in argv:
            assert "keep in float (--suggest-float" in out.stdout


def test_the_page_renders_in_a_browser(bert_quantized, tmp_path):
    path = tmp_path / "numerics.html"
    bert_quantized.write_html(path, top=5)
    text = path.read_text()
    assert "<svg" in text and "<script" not in text and "http" not in text.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium not found (scripts/setup-browser installs it)")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--window-size=1100,1400"]
    # Nothing here is timed: the timeout only stops a browser that hangs, as
    # model_explorer_browser's does (a busy machine takes minutes, not hours).
    hang_guard = 1200
    dom = subprocess.run([chromium, *flags, "--dump-dom", path.as_uri()], capture_output=True, text=True,
                         timeout=hang_guard, check=True).stdout
    assert dom.count('class="bar worst"') == 5  # the five worst modules marked in the plot
    assert "Which module hurts accuracy" in dom and "<polyline" in dom
    shot = tmp_path / "numerics.png"
    subprocess.run([chromium, *flags, f"--screenshot={shot}", path.as_uri()], capture_output=True,
                   timeout=hang_guard, check=True)
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000  # a page with a plot, not a blank one
