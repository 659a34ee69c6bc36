"""Checks semmap's files with the reference tools: every annotated model
passes onnx.checker and carries semmap's metadata the onnx library itself
reads; every sidecar validates against schema/sidecar.schema.json.

    validate_outputs.py SEMMAP_BINARY FIXTURES_DIR SCHEMA_FILE
"""
import json
import sys
import tempfile
from pathlib import Path

import jsonschema
import onnx

from semmap_testlib import all_nodes, run

FIXTURES = [
    "bert-seqcls.torchscript",
    "t5-seq2seq-lm.torchscript",
    "bert-seqcls.dynamo",
    "gpt2-causal-lm.optimum.optimum-with-past",
    # Folded BatchNorms: fused nodes carry origins@semmap (payloads dropped
    # by the corpus builder: zeros go back before the checker runs).
    "torch-2.15/tv-resnet18.torchscript",
]
SEMMAP_KEYS = {"module@semmap", "class@semmap", "confidence@semmap", "strategy@semmap"}


def checkable(model):
    """The model, with zeros in initializers whose payload the corpus dropped."""
    import numpy as np
    from onnx import helper, numpy_helper

    data = ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data", "string_data")
    for t in model.graph.initializer:
        if not any(getattr(t, f) for f in data) and t.data_location != onnx.TensorProto.EXTERNAL:
            dtype = helper.tensor_dtype_to_np_dtype(t.data_type)
            t.CopyFrom(numpy_helper.from_array(np.zeros(tuple(t.dims), dtype=dtype), t.name))
    return model


def check_annotated(fixture_dir, annotated, sidecar):
    original = onnx.load(fixture_dir / "model.onnx", load_external_data=False)
    model = onnx.load(annotated, load_external_data=False)
    onnx.checker.check_model(checkable(onnx.load(annotated, load_external_data=False)), full_check=True)
    before, after = list(all_nodes(original.graph)), list(all_nodes(model.graph))
    assert len(before) == len(after), f"{annotated}: node count changed"
    assert [t.name for t in original.graph.initializer] == [t.name for t in model.graph.initializer]
    for i, (b, a, entry) in enumerate(zip(before, after, sidecar["nodes"])):
        assert (a.name, a.op_type, list(a.input), list(a.output)) == (
            b.name, b.op_type, list(b.input), list(b.output)), f"{annotated}: node {i} changed"
        props = {p.key: p.value for p in a.metadata_props}
        missing = SEMMAP_KEYS - props.keys()
        assert not missing, f"{annotated}: node {a.name!r} lacks {sorted(missing)}"
        assert props["module@semmap"] == (entry["module"] or ""), (
            f"{annotated}: node {a.name!r}: module@semmap {props['module@semmap']!r} "
            f"!= sidecar {entry['module']!r}")
        origins = json.loads(props["origins@semmap"]) if "origins@semmap" in props else []
        assert origins == entry.get("origins", []), f"{annotated}: node {a.name!r}: origins differ"
        # The exporter's own entries survive, apart from a namespace naming
        # no module (the exporter's empty-stack marker), which semmap
        # replaces on the nodes it maps.
        for p in b.metadata_props:
            if p.key.startswith("semmap.") or p.key.endswith("@semmap"):
                continue
            if p.key == "namespace" and p.value.startswith("_empty_nn_module_stack") and entry["module"] is not None:
                assert props.get(p.key) != p.value, f"{annotated}: node {a.name!r} kept a marker namespace"
                continue
            assert props.get(p.key) == p.value, f"{annotated}: node {a.name!r} lost {p.key}"


def main():
    binary, fixtures, schema_file = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    schema = json.loads(schema_file.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    with tempfile.TemporaryDirectory() as tmp:
        for name in FIXTURES:
            d = fixtures / name
            args = [str(d / "model.onnx"), "--manifest", str(d / "manifest.json")]
            for view in ([], ["--model-specific"]):
                side = Path(tmp) / f"{name.replace('/', '_')}{''.join(view)}.json"
                run(binary, "sidecar", *args, "-o", str(side), *view)
                doc = json.loads(side.read_text())
                errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
                if errors:
                    e = errors[0]
                    sys.exit(f"{side}: /{'/'.join(map(str, e.path))}: {e.message}")
            # Without a manifest the sidecar still validates (manifest: null).
            bare = json.loads(run(binary, "sidecar", str(d / "model.onnx"), "--compact"))
            validator.validate(bare)
            assert bare["manifest"] is None
            annotated = Path(tmp) / f"{name.replace('/', '_')}.onnx"
            run(binary, "annotate", *args, "-o", str(annotated), "--doc-string")
            check_annotated(d, annotated, doc)
            fused = sum(1 for n in doc["nodes"] if "origins" in n)
            assert fused == (20 if name.endswith("tv-resnet18.torchscript") else 0), (name, fused)
            print(f"ok {name}: sidecar valid, annotated model passes onnx.checker ({fused} fused nodes)")


if __name__ == "__main__":
    main()
