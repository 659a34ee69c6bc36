"""semmap annotate edits the model at the wire level; this checks, with the
onnx Python package of the project's .venv (which knows
NodeProto.metadata_props), that the result is field for field the ModelProto
protobuf gives when the same edits are made on the parsed input: same
nodes, same entries in the same order, every other field equal. The edits'
values come from `semmap sidecar` (module, class, confidence, strategy,
category per node), the namespace from the annotated node itself (its
spelling is pinned by the C++ tests). Models: real exports (one with If
bodies) and a model built here with If/Loop bodies, a GRAPHS attribute, a
model-local function, external data and stale entries of semmap (this
version's keys and the earlier semmap.* ones).

    check_annotate_wire.py SEMMAP_BINARY FIXTURES_DIR
"""
import json
import sys
import tempfile
from pathlib import Path

import onnx
from onnx import TensorProto, helper

from semmap_testlib import all_nodes, run

# (fixture, extra annotate arguments): runs in which semmap writes a
# namespace exactly on the mapped nodes (no exporter namespace is kept) or
# on none.
FIXTURE_RUNS = [
    ("bert-seqcls.torchscript", []),
    ("bert-seqcls.torchscript", ["--no-namespace"]),
    ("bert-seqcls.dynamo", ["--overwrite-namespace"]),
    ("t5-seq2seq-lm.dynamo", ["--overwrite-namespace"]),
    ("bart-seq2seq-lm.optimum.optimum-merged", []),
]


def traversal(model):
    """Nodes in semmap's Graph order: the graph (bodies after their node), then functions."""
    yield from all_nodes(model.graph)
    for fn in model.functions:
        yield from all_nodes(fn)  # a FunctionProto lists its nodes as a graph does


def expected(original, annotated, sidecar, namespaces):
    """The input with semmap's edits made through protobuf."""
    model = onnx.ModelProto()
    model.CopyFrom(original)
    nodes, out_nodes = list(traversal(model)), list(traversal(annotated))
    entries = sidecar["nodes"]
    assert len(nodes) == len(out_nodes) == len(entries), "node counts differ"
    for node, out, entry in zip(nodes, out_nodes, entries):
        write_ns = namespaces and entry["module"] is not None
        kept = [(p.key, p.value) for p in node.metadata_props
                if not p.key.startswith("semmap.") and not p.key.endswith("@semmap")
                and not (write_ns and p.key == "namespace")]
        added = []
        if write_ns:
            values = [p.value for p in out.metadata_props if p.key == "namespace"]
            assert values, f"node {node.name!r}: no namespace written"
            added.append(("namespace", values[-1]))
        added += [("module@semmap", entry["module"] or ""),
                  ("class@semmap", entry["qualified_class"] or ""),
                  ("confidence@semmap", "%.6g" % entry["confidence"]),
                  ("strategy@semmap", entry["strategy"])]
        if entry.get("category"):
            added.append(("category@semmap", entry["category"]))
        del node.metadata_props[:]
        for key, value in kept + added:
            node.metadata_props.add(key=key, value=value)
    return model


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(traversal(a), traversal(b))):
        if x != y:
            return f"node {i} ({x.name!r}): {list(x.metadata_props)} != {list(y.metadata_props)}"
    return "outside the nodes"


def check(binary, model_path, manifest, extra, tmp, label):
    base = [str(model_path)] + (["--manifest", str(manifest)] if manifest else [])
    out = Path(tmp) / f"{label}.onnx"
    run(binary, "annotate", *base, "-o", str(out), *extra)
    sidecar = json.loads(run(binary, "sidecar", *base, "--compact"))
    original = onnx.load(model_path, load_external_data=False)
    annotated = onnx.load(out, load_external_data=False)
    want = expected(original, annotated, sidecar, "--no-namespace" not in extra)
    if want != annotated:
        sys.exit(f"{label}: annotated model differs from protobuf's edit: "
                 f"{first_difference(want, annotated)}")
    # Inputs protobuf wrote keep protobuf's field order, and the new entries
    # go last (field 9 is NodeProto's last but one): then even the bytes are
    # protobuf's. Reported, not required: other writers may order fields
    # differently, which the splice keeps.
    same_bytes = out.read_bytes() == want.SerializeToString()
    print(f"ok {label} {' '.join(extra)}: equal to protobuf's edit"
          f"{', byte for byte' if same_bytes else ' (fields in the input order)'}")


def every_place_model(directory):
    """If/Loop bodies, a GRAPHS attribute, a function, external data, old entries."""
    def node(name, op, inputs, outputs, **attrs):
        return helper.make_node(op, inputs, outputs, name=name, **attrs)

    then_g = helper.make_graph([node("/enc/then/Neg", "Neg", ["a"], ["t"])], "then", [], [
        helper.make_tensor_value_info("t", TensorProto.FLOAT, [4])])
    body = helper.make_graph([node("", "Abs", ["a"], ["b"])], "body", [], [])
    loop = node("/dec/Loop", "Loop", ["n", "c"], ["l"], body=body)
    else_g = helper.make_graph([loop], "else", [], [])
    cond = node("/enc/If", "If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)
    multi = node("/dec/Multi", "Custom", ["y"], ["m"], domain="custom.domain")
    multi.attribute.append(helper.make_attribute("branches", [
        helper.make_graph([node("/dec/b0/Relu", "Relu", ["m"], ["m0"])], "b0", [], []),
        helper.make_graph([node("/dec/b1/Tanh", "Tanh", ["m"], ["m1"])], "b1", [], [])]))
    matmul = node("/enc/fc/MatMul", "MatMul", ["x", "enc.fc.weight"], ["a"])
    matmul.doc_string = "exporter's doc"
    # "semmap.module": the key as earlier versions wrote it.
    for key, value in [("semmap.module", "stale"), ("exporter.key", "kept"),
                       ("namespace", "old/namespace"), ("class@semmap", "stale too")]:
        matmul.metadata_props.add(key=key, value=value)
    weight = helper.make_tensor("enc.fc.weight", TensorProto.FLOAT, [4], [0.0] * 4)
    weight.ClearField("float_data")
    weight.data_location = TensorProto.EXTERNAL
    weight.external_data.add(key="location", value="weights.bin")
    graph = helper.make_graph(
        [matmul, cond, multi, node("/dec/Add", "Add", ["m", "x"], ["z"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [4])], [weight])
    fn = helper.make_function("local", "Gelu", ["u"], ["v"], [
        node("fn/Erf", "Erf", ["u"], ["e"]), node("fn/Mul", "Mul", ["e", "u"], ["v"])],
        [helper.make_opsetid("", 17)])
    model = helper.make_model(graph, functions=[fn], opset_imports=[helper.make_opsetid("", 17)])
    path = Path(directory) / "every_place.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def main():
    binary, fixtures = sys.argv[1], Path(sys.argv[2])
    with tempfile.TemporaryDirectory() as tmp:
        for name, extra in FIXTURE_RUNS:
            d = fixtures / name
            check(binary, d / "model.onnx", d / "manifest.json", extra, tmp, name)
        check(binary, every_place_model(tmp), None, [], tmp, "every-place")


if __name__ == "__main__":
    main()
