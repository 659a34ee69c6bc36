#!/usr/bin/env python3
"""Writes the seed corpora of semmap's fuzz targets from fixtures/.

    .venv/bin/python fuzz/make_seeds.py [--fixtures fixtures] [--out fuzz/corpus]

Seeds stay small (the corpora are committed): models of fewer than
MAX_NODES nodes with tensor payloads, value_info, doc strings and the dynamo
exporter's stack traces removed; minified manifests; a sample of real node
names; the default rule file and a few hostile patterns. Rerun after adding
fixtures; the output is deterministic.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import shutil

import onnx
from onnx import helper

MAX_NODES = 300
MAX_SEED_BYTES = 64 * 1024          # keep below scripts/fuzz's -max_len
MAX_PIPELINE_BYTES = 128 * 1024
MAX_NAMES = 150
# One small export per exporter and optimizer variant; the names of every
# fixture below MAX_NODES feed the node-name sample.
SEED_MODELS = ("bert-seqcls.torchscript", "bert-seqcls.dynamo.stripped",
               "bert-seqcls.torchscript.ort-optimized", "vit-imgcls.torchscript.quantized",
               "resnet-imgcls.torchscript", "convnext-imgcls.dynamo",
               "t5-seq2seq-lm.optimum.optimum-encoder", "gpt2-causal-lm.dynamo.stripped")
PIPELINE_MODELS = SEED_MODELS[:5]
MANIFESTS = ("resnet-imgcls", "bert-seqcls", "t5-seq2seq-lm")
SEPARATOR = b"#SEMMAP#MANIFEST#"    # fuzz_pipeline.cc's kSeparator
DROPPED_METADATA = {"pkg.torch.onnx.stack_trace", "pkg.torch.onnx.fx_node"}


def strip_tensor(t: onnx.TensorProto) -> None:
    for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data",
                  "uint64_data", "string_data"):
        t.ClearField(field)
    t.ClearField("doc_string")


def strip_graph(g: onnx.GraphProto) -> None:
    g.ClearField("value_info")
    g.ClearField("doc_string")
    for t in g.initializer:
        strip_tensor(t)
    for st in g.sparse_initializer:
        strip_tensor(st.values)
        strip_tensor(st.indices)
    for n in g.node:
        n.ClearField("doc_string")
        kept = [p for p in n.metadata_props if p.key not in DROPPED_METADATA]
        del n.metadata_props[:]
        n.metadata_props.extend(kept)
        for a in n.attribute:
            if a.HasField("t"):
                strip_tensor(a.t)
            for t in a.tensors:
                strip_tensor(t)
            if a.HasField("g"):
                strip_graph(a.g)
            for sub in a.graphs:
                strip_graph(sub)


def node_count(g: onnx.GraphProto) -> int:
    total = len(g.node)
    for n in g.node:
        for a in n.attribute:
            if a.HasField("g"):
                total += node_count(a.g)
            total += sum(node_count(sub) for sub in a.graphs)
    return total


def all_names(g: onnx.GraphProto):
    for n in g.node:
        yield n.name
        for a in n.attribute:
            if a.HasField("g"):
                yield from all_names(a.g)
            for sub in a.graphs:
                yield from all_names(sub)


def hand_made_models() -> dict[str, bytes]:
    """Shapes real exports rarely have: subgraphs, functions, external data."""
    out = {}
    then_body = helper.make_graph(
        [helper.make_node("Neg", ["h"], ["t"], name="/inner/Neg"),
         helper.make_node("If", ["c"], ["t2"], name="/inner/If",
                          then_branch=helper.make_graph(
                              [helper.make_node("Abs", ["t"], ["t3"], name="/inner/deep/Abs")],
                              "deep", [], [helper.make_tensor_value_info("t3", 1, None)]),
                          else_branch=helper.make_graph(
                              [helper.make_node("Relu", ["h"], ["t4"], name="/inner/deep/Relu")],
                              "deep2", [], [helper.make_tensor_value_info("t4", 1, None)]))],
        "then", [], [helper.make_tensor_value_info("t2", 1, None)])
    else_body = helper.make_graph(
        [helper.make_node("Identity", ["h"], ["e"], name="Identity_3")],
        "else", [], [helper.make_tensor_value_info("e", 1, None)])
    main = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["h"], name="/pre/Relu"),
         helper.make_node("If", ["c"], ["y"], name="/If", then_branch=then_body,
                          else_branch=else_body),
         helper.make_node("MyFn", ["y"], ["z"], name="node_MyFn_0", domain="local"),
         helper.make_node("Relu", ["z"], ["w"], name="/pre/Relu")],  # duplicate name
        "g", [helper.make_tensor_value_info("x", 1, [2]), helper.make_tensor_value_info("c", 9, [])],
        [helper.make_tensor_value_info("w", 1, [2])])
    fn = helper.make_function("local", "MyFn", ["a"], ["b"],
                              [helper.make_node("Sigmoid", ["a"], ["b"], name="/fn/Sigmoid")],
                              [helper.make_opsetid("", 17)])
    model = helper.make_model(main, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("local", 1)],
                              functions=[fn])
    out["subgraphs_functions"] = model.SerializeToString()

    ext = helper.make_graph(
        [helper.make_node("MatMul", ["x", "/dense/weight"], ["y"], name="/dense/MatMul")],
        "ext", [helper.make_tensor_value_info("x", 1, [1, 4])],
        [helper.make_tensor_value_info("y", 1, [1, 4])])
    w = ext.initializer.add()
    w.name, w.data_type = "/dense/weight", 1
    w.dims.extend([4, 4])
    w.data_location = onnx.TensorProto.EXTERNAL
    for k, v in (("location", "missing.bin"), ("offset", "0"), ("length", "64")):
        entry = w.external_data.add()
        entry.key, entry.value = k, v
    out["external_data"] = helper.make_model(ext).SerializeToString()
    return out


def write(path: pathlib.Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def signature_seeds(fixtures: pathlib.Path, out: pathlib.Path, stripped_model: bytes) -> None:
    """Manifest schema version 2 (forward signatures) and the rule file's
    calibration: a real signed manifest alone and after a stripped model
    (the structural step's gaps), small manifests the reader refuses (calls
    of the caller, the root, in a cycle; reads on a call, of no tensor,
    twice; forward in version 1, version 2 without forward; 10,001 events
    would not fit -max_len: the catalogue has them), and calibration tables valid and refused (decreasing, an
    inferred strategy at the confident floor, a table for "unmapped")."""
    signed = json.loads((fixtures / "bert-seqcls.torchscript" / "manifest.json").read_text())
    assert signed["schema_version"] == 2, "the seed needs forward signatures"
    text = json.dumps(signed, separators=(",", ":")).encode()
    write(out / "fuzz_manifest" / "bert-seqcls.v2.json", text)
    if len(stripped_model) + len(SEPARATOR) + len(text) <= MAX_PIPELINE_BYTES:
        write(out / "fuzz_pipeline" / "bert-seqcls.dynamo.stripped.v2",
              stripped_model + SEPARATOR + text)

    def small(version=2):
        mod = lambda path, parent, children, params=(): {
            "path": path, "class": "C", "qualified_class": "t.C", "parent": parent,
            "children": children, "buffers": [],
            "parameters": [{"name": p, "shape": [2, 2], "dtype": "float32"} for p in params]}
        doc = {"format": "semmap.manifest", "schema_version": version,
               "model": {"class": "M", "qualified_class": "t.M"},
               "modules": [mod("", None, ["a"]), mod("a", "", ["a.b"]), mod("a.b", "a", [], ["weight"])]}
        if version == 2:
            doc["modules"][0]["forward"] = [{"call": "a"}]
            doc["modules"][1]["forward"] = [{"call": "a.b"}, {"op": "relu"}]
            doc["modules"][2]["forward"] = [{"op": "linear", "reads": ["weight"]}]
        return doc

    variants = {
        "v2_small": [],
        "v2_self_call": [(2, 0, {"call": "a.b"})],
        "v2_root_call": [(1, 1, {"call": ""})],
        "v2_call_cycle": [(2, 0, {"call": "a"})],
        "v2_reads_on_call": [(1, 0, {"call": "a.b", "reads": ["weight"]})],
        "v2_unknown_read": [(2, 0, {"op": "linear", "reads": ["weight", "bias"]})],
        "v2_repeated_read": [(2, 0, {"op": "linear", "reads": ["weight", "weight"]})],
    }
    for name, edits in variants.items():
        doc = small()
        for module, event, value in edits:
            doc["modules"][module]["forward"][event] = value
        write(out / "fuzz_manifest" / f"{name}.json", json.dumps(doc).encode())
    doc = small(1)
    write(out / "fuzz_manifest" / "v2_without_forward.json",
          json.dumps(doc | {"schema_version": 2}).encode())
    doc["modules"][1]["forward"] = [{"op": "relu"}]
    write(out / "fuzz_manifest" / "v1_with_forward.json", json.dumps(doc).encode())

    tables = {
        "calibration": {"structure": [[0.4, 0.5], [0.8, 0.7]], "exact_scope": [[0.5, 1.0]]},
        "calibration_decreasing": {"op_rule": [[0.0, 0.8], [1.0, 0.01]]},
        "calibration_inferred_certain": {s: [[0.0, 1.0]] for s in
                                         ("tensor_names", "scope_prefix", "op_rule",
                                          "neighbourhood", "structure", "reference")},
        "calibration_unmapped": {"unmapped": [[0.5, 0.5]]},
    }
    for name, table in tables.items():
        doc = {"format": "semmap.rules", "version": 1, "calibration": table}
        write(out / "fuzz_rules" / f"{name}.json", json.dumps(doc).encode())


def numerics_seeds(document: pathlib.Path, out: pathlib.Path) -> None:
    """fuzz_report_numerics: the real compare-numerics document of tests/data,
    minified (each row's outputs cut to one), and small edits of one row:
    hostile names, a module of no tree, nulls, the other ranking."""
    shutil.rmtree(out, ignore_errors=True)
    doc = json.loads(document.read_text())
    for rows in doc["views"].values():
        for r in rows:
            r["outputs"] = r["outputs"][:1]
    write(out / "bert-quantized.json", json.dumps(doc, separators=(",", ":")).encode())
    row = dict(doc["views"]["leaf"][0])
    small = {k: doc[k] for k in ("format", "version", "reference", "deployed", "provider",
                                 "final_error", "ranked_by")}
    edits = {
        "hostile": dict(row, module="encoder</script><img src=x>", fused=["<!--&amp;"]),
        "tree-module": dict(row, module="encoder.layer", rank=None, output_error=None),
        "nulls": dict(row, added_error=None, input_error=None, local_error=None, impact=None,
                      introduces_nonfinite=True, order=None),
    }
    for name, r in edits.items():
        d = dict(small, views={"leaf": [r], "subtree": [dict(r, module="")]},
                 ranked_by={"leaf": "added", "subtree": "added"})
        write(out / f"{name}.json", json.dumps(d, separators=(",", ":")).encode())


def main() -> None:
    root = pathlib.Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fixtures", type=pathlib.Path, default=root / "fixtures")
    ap.add_argument("--out", type=pathlib.Path, default=root / "fuzz" / "corpus")
    args = ap.parse_args()
    for target in ("fuzz_onnx_load", "fuzz_pipeline", "fuzz_manifest", "fuzz_scope_path",
                   "fuzz_rules"):
        shutil.rmtree(args.out / target, ignore_errors=True)

    names: set[str] = set()
    stripped = b""
    for d in sorted(p for p in args.fixtures.iterdir() if (p / "model.onnx").is_file()):
        model = onnx.load(str(d / "model.onnx"), load_external_data=False)
        if node_count(model.graph) >= MAX_NODES:
            continue
        strip_graph(model.graph)
        for f in model.functions:
            for n in f.node:
                n.ClearField("doc_string")
        names.update(all_names(model.graph))
        data = model.SerializeToString()
        if len(data) > MAX_SEED_BYTES or d.name not in SEED_MODELS:
            continue
        write(args.out / "fuzz_onnx_load" / f"{d.name}.onnx", data)
        manifest_path = d / "manifest.json"
        if not manifest_path.is_file():
            continue
        manifest = json.dumps(json.loads(manifest_path.read_text()), separators=(",", ":"),
                              sort_keys=False).encode()
        if len(data) + len(SEPARATOR) + len(manifest) <= MAX_PIPELINE_BYTES and \
                d.name in PIPELINE_MODELS:
            write(args.out / "fuzz_pipeline" / d.name, data + SEPARATOR + manifest)
        base = d.name.split(".")[0]
        if len(manifest) <= MAX_SEED_BYTES and base in MANIFESTS:
            write(args.out / "fuzz_manifest" / f"{base}.json", manifest)

        if d.name == "bert-seqcls.dynamo.stripped":
            stripped = data

    signature_seeds(args.fixtures, args.out, stripped)
    for name, data in hand_made_models().items():
        write(args.out / "fuzz_onnx_load" / f"{name}.onnx", data)
        write(args.out / "fuzz_pipeline" / name, data)

    # Node names: a deterministic sample spread over every kind of name.
    sample = sorted(n for n in names if n)
    step = max(1, len(sample) // MAX_NAMES)
    for i, n in enumerate(sample[::step][:MAX_NAMES]):
        write(args.out / "fuzz_scope_path" / f"name_{i:03d}", n.encode())
    for i, n in enumerate(["", "/", "//", "/a//b/", "node_", "node_MatMul_12", "Constant_94",
                           "/layer1/layer1.0/conv1/Conv", "/a/relu_1/Relu_3_output_0",
                           "/x/MatMul_99999999999999999999", "/" * 64 + "Op"]):
        write(args.out / "fuzz_scope_path" / f"edge_{i:02d}", n.encode())

    rules = (root / "rules" / "default.json").read_bytes()
    write(args.out / "fuzz_rules" / "default.json", rules)
    hostile = {
        "nested_repetition": "((((a{1,100}){1,100}){1,100}){1,100})",
        "big_counted": "a{1000}b{1000}",
        "alternation": "|".join(f"op{i}" for i in range(300)),
        "backtracking_classic": "(a+)+$",
        "unicode_classes": "\\p{L}+\\p{Greek}*[^\\x{10FFFF}]",
        "invalid": "(?P<n>",
    }
    for key, pattern in hostile.items():
        doc = {"format": "semmap.rules", "version": 1,
               "derived_node_names": [{"pattern": pattern}],
               "follow_consumers_ops": {"pattern": pattern},
               "categories": [{"category": "x", "class": pattern, "repeated_child": True}]}
        write(args.out / "fuzz_rules" / f"{key}.json", json.dumps(doc).encode())

    numerics_seeds(root / "tests" / "data" / "bert-seqcls.dynamo.quantized.numerics.json",
                   args.out / "fuzz_report_numerics")

    total = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"wrote {sum(1 for p in args.out.rglob('*') if p.is_file())} seeds, {total} bytes, "
          f"to {args.out}")


if __name__ == "__main__":
    main()
