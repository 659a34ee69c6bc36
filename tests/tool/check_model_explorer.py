"""Annotated exports in Google's Model Explorer, through its real ONNX adapter.

For each fixture: annotate it with semmap, convert the original and the
annotated file with the adapter Model Explorer itself runs
(model-explorer-onnx), rebuild the layer hierarchy the viewer draws from each
node's namespace, and check:
  - every module of the manifest appears at one place in the hierarchy;
  - the annotated view has no more one-op layers than the original;
  - the ops left at the top level are exactly those semmap could not place
    (Model Explorer moves Constant nodes next to their users itself).
Prints layers, one-op layers and bytes added per node.

  check_model_explorer.py SEMMAP_BINARY FIXTURES_DIR
"""
import collections
import json
import os
import subprocess
import sys
import tempfile

import onnx
from model_explorer_onnx.main import ONNXAdapter

FIXTURES = [
    "bert-seqcls.torchscript",
    "t5-seq2seq-lm.dynamo",
    "bert-seqcls.torchscript.ort-optimized",
    "torch-2.15/llama-causal-lm.dynamo.onnxslim",
    "torch-2.15/vit-imgcls.dynamo",
]


def run(*args):
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: exit {done.returncode}: {done.stderr}")
    return done.stdout


def view(path):
    """(namespace parts per ONNX op node) as the adapter lays them out."""
    names = {n.name for n in onnx.load(path, load_external_data=False).graph.node}
    graph = ONNXAdapter().convert(path, {})["graphs"][0]
    out = {}
    for node in graph.nodes:
        if node.id in names and node.label != "Constant":
            out[node.id] = [p for p in node.namespace.split("/")[1:] if p]  # drop the graph's name
    return out


def layers(placement):
    """layer path -> number of ops in its subtree."""
    size = collections.Counter()
    for parts in placement.values():
        for i in range(1, len(parts) + 1):
            size["/".join(parts[:i])] += 1
    return size


def module_of(parts, modules):
    """The manifest module a layer path names, or None (an exporter's op group)."""
    dotted = ""
    for element in parts:
        path = element.split(": ", 1)[0]
        if dotted and not path.startswith(dotted + "."):
            path = f"{dotted}.{path}"  # semmap's compact spelling: relative atoms
        dotted = path
    return dotted if dotted in modules else None


def check(semmap, fixtures, name, tmp):
    d = os.path.join(fixtures, name)
    model, manifest = os.path.join(d, "model.onnx"), os.path.join(d, "manifest.json")
    out = os.path.join(tmp, name.replace("/", "_") + ".onnx")
    run(semmap, "annotate", model, "--manifest", manifest, "-o", out)
    sidecar = json.loads(run(semmap, "sidecar", model, "--manifest", manifest))
    unmapped = {n["name"] for n in sidecar["nodes"] if n["module"] is None}
    modules = {m["path"] for m in json.load(open(manifest))["modules"]}

    before, after = view(model), view(out)
    size_before, size_after = layers(before), layers(after)
    errors = []
    where = collections.defaultdict(set)
    for layer in size_after:
        module = module_of(layer.split("/"), modules)
        if module is not None:
            where[module].add(layer)
    for module, places in where.items():
        if len(places) > 1:
            errors.append(f"module {module!r} at {len(places)} places: {sorted(places)[:3]}")
    one_before = sum(1 for n in size_before.values() if n == 1)
    one_after = sum(1 for n in size_after.values() if n == 1)
    # A module with one op (a Linear without bias) is a one-op layer of its
    # own right; a layer for the op itself is not, unless the original view
    # has it too (the dynamo exporter's operator level).
    op_layers = [layer for layer, n in size_after.items()
                 if n == 1 and module_of(layer.split("/"), modules) is None
                 and layer not in size_before]
    if op_layers:
        errors.append(f"{len(op_layers)} layers wrap one op: {op_layers[:3]}")
    at_root = {node for node, parts in after.items() if not parts}
    if at_root != (unmapped & set(after)):
        errors.append(f"top level holds {sorted(at_root - unmapped)[:5]} (placed) "
                      f"and misses {sorted((unmapped & set(after)) - at_root)[:5]} (unplaced)")
    nodes = len(before)
    added = (os.path.getsize(out) - os.path.getsize(model)) / max(1, nodes)
    print(f"{name}: {len(size_before)} -> {len(size_after)} layers, one-op layers "
          f"{one_before} -> {one_after}, {len(at_root)} ops at the top level, "
          f"{added:.0f} bytes added per node")
    return [f"{name}: {e}" for e in errors]


def main():
    semmap, fixtures = sys.argv[1], sys.argv[2]
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in FIXTURES:
            errors += check(semmap, fixtures, name, tmp)
    for e in errors:
        print("FAIL", e)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
