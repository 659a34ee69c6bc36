"""The manifest reader and its published JSON Schema agree, file by file.

Run by ctest with the project's .venv (jsonschema):
    check_manifest_schema.py SEMMAP SCHEMA
Each hostile manifest below goes through the JSON Schema validator and
through semmap's reader (`semmap tree MODEL --manifest FILE`). Whatever the
schema refuses, the reader refuses, naming the JSON pointer; whatever the
schema accepts, the reader accepts, except the checks no JSON Schema can
state (docs/manifest.md, "What the reader checks beyond the schema"),
which are marked as such here and must pass the schema.
"""

import copy
import json
import os
import subprocess
import sys
import tempfile

import jsonschema

from semmap_testlib import graph_io, model, node, write

semmap, schema_path = sys.argv[1:3]
with open(schema_path) as f:
    schema = json.load(f)
validator = jsonschema.Draft202012Validator(schema)
failures = []


def base(version=2):
    """A valid manifest: the root calls a, a calls a.b then runs a relu,
    a.b (with a weight and a buffer) runs a linear reading its weight."""
    def module(path, parent, children, parameters=(), buffers=()):
        tensor = lambda n: {"name": n, "shape": [2, 2], "dtype": "float32"}
        return {"path": path, "class": "C", "qualified_class": "t.C", "parent": parent,
                "children": children, "parameters": [tensor(p) for p in parameters],
                "buffers": [tensor(b) for b in buffers]}
    doc = {"format": "semmap.manifest", "schema_version": version,
           "generator": {"semmap": "1.2.0", "torch": "2.15.0"},
           "model": {"class": "M", "qualified_class": "t.M", "model_type": "m",
                     "config": {"hidden_size": 2, "act": "gelu", "bias": True, "x": None}},
           "modules": [module("", None, ["a"]), module("a", "", ["a.b"]),
                       module("a.b", "a", [], ["weight"], ["running_mean"])]}
    if version == 2:
        doc["modules"][0]["forward"] = [{"call": "a"}]
        doc["modules"][1]["forward"] = [{"call": "a.b"}, {"op": "relu"}]
        doc["modules"][2]["forward"] = [{"op": "linear", "reads": ["weight", "running_mean"]}]
    return doc


def edited(edits, version=2):
    """base(version) with (path tuple, value) edits; value DELETE removes."""
    doc = base(version)
    for path, value in edits:
        target = doc
        for key in path[:-1]:
            target = target[key]
        if value is DELETE:
            del target[path[-1]]
        else:
            target[path[-1]] = value
    return doc


DELETE = object()
M = "modules"

# (name, document, the pointer the reader names or None when it accepts,
#  True when the check is beyond what a JSON Schema can say)
CASES = [
    ("valid version 2", base(), None, False),
    ("valid version 1", base(1), None, False),
    ("extra top-level field", edited([(("aliases",), {"x": "a"})]), None, False),
    ("extra model field", edited([(("model", "future"), [1])]), None, False),
    ("model_type null", edited([(("model", "model_type"), None)]), None, False),
    ("empty forward", edited([((M, 1, "forward"), [])]), None, False),
    # The document and the model.
    ("format other", edited([(("format",), "x")]), "/format", False),
    ("version 3", edited([(("schema_version",), 3)]), "schema version 3", False),
    ("version as a string", edited([(("schema_version",), "2")]), "/schema_version", False),
    ("generator value a number", edited([(("generator", "torch"), 2)]), "/generator/torch", False),
    ("generator a list", edited([(("generator",), ["x"])]), "/generator", False),
    ("model class empty", edited([(("model", "class"), "")]), "/model/class", False),
    ("model_type a number", edited([(("model", "model_type"), 1)]), "/model/model_type", False),
    ("config a list", edited([(("model", "config"), [1])]), "/model/config", False),
    ("config value an object", edited([(("model", "config", "x"), {"y": 1})]),
     "/model/config/x", False),
    ("no modules", edited([((M,), [])]), "/modules", False),
    # Modules and tensors.
    ("unknown module field", edited([((M, 1, "future"), 1)]), "/modules/1/future", False),
    ("module class empty", edited([((M, 1, "class"), "")]), "/modules/1/class", False),
    ("children not strings", edited([((M, 0, "children"), [1])]), "/modules/0/children/0", False),
    ("no buffers", edited([((M, 2, "buffers"), DELETE)]), "/modules/2", False),
    ("unknown tensor field", edited([((M, 2, "parameters", 0, "grad"), True)]),
     "/modules/2/parameters/0/grad", False),
    ("negative dim", edited([((M, 2, "parameters", 0, "shape"), [-1])]),
     "/modules/2/parameters/0/shape/0", False),
    ("dtype empty", edited([((M, 2, "parameters", 0, "dtype"), "")]),
     "/modules/2/parameters/0/dtype", False),
    # Forward signatures.
    ("forward in version 1", edited([((M, 1, "forward"), [{"op": "relu"}])], 1),
     "/modules/1/forward", False),
    ("version 2 without forward", base(1) | {"schema_version": 2}, "/schema_version", False),
    ("10,001 events", edited([((M, 1, "forward"), [{"op": "add"}] * 10_001)]),
     "/modules/1/forward", False),
    ("10,000 events", edited([((M, 1, "forward"), [{"op": "add"}] * 10_000)]), None, False),
    ("forward an object", edited([((M, 1, "forward"), {"op": "add"})]), "/modules/1/forward", False),
    ("event both call and op", edited([((M, 1, "forward", 1), {"call": "a.b", "op": "x"})]),
     "/modules/1/forward/1", False),
    ("event neither", edited([((M, 1, "forward", 1), {})]), "/modules/1/forward/1", False),
    ("unknown event field", edited([((M, 1, "forward", 1, "time"), 3)]),
     "/modules/1/forward/1/time", False),
    ("reads on a call", edited([((M, 1, "forward", 0, "reads"), ["weight"])]),
     "/modules/1/forward/0/reads", False),
    ("reads of numbers on a call", edited([((M, 1, "forward", 0, "reads"), [1])]),
     "/modules/1/forward/0/reads", False),
    ("reads empty", edited([((M, 2, "forward", 0, "reads"), [])]),
     "/modules/2/forward/0/reads", False),
    ("reads repeated", edited([((M, 2, "forward", 0, "reads"), ["weight", "weight"])]),
     "/modules/2/forward/0/reads/1", False),
    ("reads a number", edited([((M, 2, "forward", 0, "reads"), [7])]),
     "/modules/2/forward/0/reads/0", False),
    ("op empty", edited([((M, 1, "forward", 1), {"op": ""})]), "/modules/1/forward/1/op", False),
    ("call a number", edited([((M, 1, "forward", 0), {"call": 1})]),
     "/modules/1/forward/0/call", False),
    # Beyond the schema: names that must resolve, and the call graph.
    ("reads an unknown name", edited([((M, 2, "forward", 0, "reads"), ["weight", "bias"])]),
     "/modules/2/forward/0/reads/1", True),
    ("call of an unknown module", edited([((M, 1, "forward", 0), {"call": "zz"})]),
     "/modules/1/forward/0/call", True),
    ("a module calling itself", edited([((M, 2, "forward", 0), {"call": "a.b"})]),
     "/modules/2/forward/0/call", True),
    ("a module calling the root", edited([((M, 1, "forward", 1), {"call": ""})]),
     "/modules/1/forward/1/call", True),
    ("a cycle of calls", edited([((M, 2, "forward", 0), {"call": "a"})]),
     "/modules/2/forward/0/call", True),
    ("an unknown parent", edited([((M, 2, "parent"), "zz")]), "/modules/2/parent", True),
    ("a child listed twice", edited([((M, 0, "children"), ["a", "a"])]),
     "/modules/0/children/1", True),
    ("a duplicate path", edited([((M, 2, "path"), "a")]), "/modules/2/path", True),
    # JSON Schema's integer is any number without a fraction (1.0 is one);
    # the reader wants integers written as integers.
    ("a dimension written 2.0", edited([((M, 2, "parameters", 0, "shape"), [2.0])]),
     "/modules/2/parameters/0/shape/0", True),
]

with tempfile.TemporaryDirectory() as tmp:
    graph = write(os.path.join(tmp, "m.onnx"),
                  model(node("/a/b/MatMul", "MatMul", ["x", "x"], ["y"]) + graph_io(["x"], ["y"])))
    agreed = 0
    for name, doc, pointer, beyond in CASES:
        path = write(os.path.join(tmp, "manifest.json"), json.dumps(doc))
        schema_ok = validator.is_valid(doc)
        done = subprocess.run([semmap, "tree", graph, "--manifest", path,
                               "--allow-manifest-mismatch"], capture_output=True, text=True)
        reader_ok = done.returncode == 0
        expected_ok = pointer is None
        if schema_ok != (expected_ok or beyond):
            failures.append(f"{name}: the schema {'accepts' if schema_ok else 'refuses'} it "
                            f"({'beyond the schema' if beyond else 'expected the same as the reader'})")
        if reader_ok != expected_ok:
            failures.append(f"{name}: the reader {'accepts' if reader_ok else 'refuses'} it "
                            f"(exit {done.returncode}): {done.stderr.strip()[:300]}")
        elif not reader_ok and (pointer not in done.stderr or path not in done.stderr):
            failures.append(f"{name}: the message names neither the file nor {pointer}: "
                            f"{done.stderr.strip()[:300]}")
        elif schema_ok == reader_ok:
            agreed += 1
    print(f"{len(CASES)} manifests: schema and reader agree on {agreed}, "
          f"{sum(1 for c in CASES if c[3])} checks beyond the schema")

for f in failures:
    print("FAIL:", f)
print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
