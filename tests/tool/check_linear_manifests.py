"""Mapping work linear in the manifest for every shape the schema allows.

Run by ctest with the project's .venv:
    check_linear_manifests.py SEMMAP BUILD_TYPE [SHAPE...]
Each shape is a generator of a model and its manifest at size n (models
written byte by byte, manifests as JSON); `semmap map --json` runs at n and
2n. The work measured is the number of instructions the run executes,
counted by valgrind's callgrind, less those of mapping a one-node model:
unlike time, wall or CPU, the count does not change with what else the
machine runs, nor with how much of a larger run's tables the caches hold
(a linear pass over hash tables takes 2.3 to 2.5 times the CPU time per
doubling on a 2-core machine once they outgrow the caches, in quiet and
busy runs alike). A shape fails when its count grows more than 2.3 times
per doubling of its input (linear work: 2, quadratic: 4); the figures are
printed. The CPU time of each run is printed beside it.

Sizes are the release build's (a few seconds under callgrind); other
builds run at half of them, under the same bound.
"""

import math
import os
import re
import resource
import subprocess
import sys
import tempfile

from semmap_testlib import (field, graph_io, initializer, manifest, model, module, node,
                            varint, write)

semmap, build_type = sys.argv[1:3]
wanted = set(sys.argv[3:])
SCALE = 1 if build_type in ("Release", "RelWithDebInfo") else 2
BOUND = 2.3
failures = []








# Each generator returns (model bytes, manifest text) for size n.

def tensors_one_reader(n):
    """One module of n parameters, all read by one node (schema 1)."""
    params = [f"p{i}" for i in range(n)]
    graph = (node("/m/Concat", "Concat", [f"m.{p}" for p in params], ["y"]) +
             b"".join(initializer(f"m.{p}") for p in params) + graph_io([], ["y"]))
    return model(graph), manifest([module("", None, ["m"]), module("m", "", [], params)])


def own_reads(n):
    """A module whose forward reads each of its n parameters (schema 2): one
    operation reading them all, read by one node."""
    params = [f"p{i}" for i in range(n)]
    graph = (node("/m/Concat", "Concat", [f"m.{p}" for p in params], ["y"]) +
             b"".join(initializer(f"m.{p}") for p in params) + graph_io([], ["y"]))
    return model(graph), manifest([
        module("", None, ["m"], forward=[{"call": "m"}]),
        module("m", "", [], params, forward=[{"op": "cat", "reads": params}])])


def reads_per_tensor(n):
    """Many reads of each tensor: 64 operations, each reading all of the
    module's n / 64 parameters, and 64 nodes reading them."""
    k = max(1, n // 64)
    params = [f"p{i}" for i in range(k)]
    nodes = b"".join(node(f"/m/Concat_{j}", "Concat", [f"m.{p}" for p in params], [f"y{j}"])
                     for j in range(64))
    graph = nodes + b"".join(initializer(f"m.{p}") for p in params) + graph_io([], ["y0"])
    return model(graph), manifest([
        module("", None, ["m"], forward=[{"call": "m"}]),
        module("m", "", [], params, forward=[{"op": "cat", "reads": params}] * 64)])


def vector_reads(n):
    """A module of n matrices and vectors whose own operation reads them, and
    n / 2 nodes that read a matrix each and gained a bias (a fold)."""
    half = n // 2
    mats = [f"w{i}" for i in range(half)]
    vecs = [f"b{i}" for i in range(half)]
    m = module("m", "", [], mats, forward=[{"op": "linear", "reads": mats}])
    m["parameters"] += [{"name": v, "shape": [4], "dtype": "float32"} for v in vecs]
    nodes = b"".join(node(f"/m/Gemm_{i}", "Gemm", ["x", f"m.{w}", f"fold{i}"], [f"y{i}"])
                     for i, w in enumerate(mats))
    graph = (nodes + b"".join(initializer(f"m.{w}") for w in mats) +
             b"".join(initializer(f"fold{i}", (4,)) for i in range(half)) + graph_io(["x"], ["y0"]))
    return model(graph), manifest([module("", None, ["m"], forward=[{"call": "m"}]), m])


def derived_names(n):
    """One module of n parameters and n initializers named after it but
    none of its tensors, half of them made from one ("m.p2_fold", as an
    exporter names a tensor it derived from "p2"), read by one node."""
    params = [f"p{i}" for i in range(n)]
    names = [f"m.{'p' if i % 2 else 'q'}{i}_fold" for i in range(n)]
    graph = (node("/m/Concat", "Concat", names, ["y"]) + b"".join(initializer(v) for v in names) +
             graph_io([], ["y"]))
    return model(graph), manifest([module("", None, ["m"]), module("m", "", [], params)])


def many_events(n):
    """n events: n / 5,000 modules under the root, each a forward of 5,000
    operations, one reading its weight, and a scoped node each."""
    count = max(1, n // 5000)
    kids = [f"m{i}" for i in range(count)]
    ops = [{"op": "matmul", "reads": ["weight"]}] + [{"op": "add"}] * 4999
    graph = (b"".join(node(f"/{k}/MatMul", "MatMul", ["x", f"{k}.weight"], [f"y{i}"])
                      for i, k in enumerate(kids)) +
             b"".join(initializer(f"{k}.weight") for k in kids) + graph_io(["x"], ["y0"]))
    return model(graph), manifest(
        [module("", None, kids, forward=[{"call": k} for k in kids[:10000]])] +
        [module(k, "", [], ["weight"], forward=ops) for k in kids])


def wide_tree(n):
    """n modules under the root, each with a weight and a scoped node."""
    kids = [f"m{i}" for i in range(n)]
    graph = (b"".join(node(f"/{k}/MatMul", "MatMul", ["x", f"{k}.weight"], [f"y{i}"])
                      for i, k in enumerate(kids)) +
             b"".join(initializer(f"{k}.weight") for k in kids) + graph_io(["x"], ["y0"]))
    return model(graph), manifest([module("", None, kids)] +
                                  [module(k, "", [], ["weight"]) for k in kids])


def deep_tree(n):
    """A chain of modules n bytes of paths deep in all (the depth d with
    d^2 about n: each path repeats its parent's), a node under the deepest."""
    depth = max(2, int(n ** 0.5))
    paths = ["a"]
    for _ in range(depth - 1):
        paths.append(paths[-1] + ".a")
    mods = [module("", None, ["a"])]
    for k, p in enumerate(paths):
        mods.append(module(p, paths[k - 1] if k else "", [paths[k + 1]] if k + 1 < depth else [],
                           ["weight"]))
    leaf = paths[-1]
    graph = (node("/" + leaf.replace(".", "/") + "/MatMul", "MatMul", ["x", f"{leaf}.weight"], ["y"]) +
             initializer(f"{leaf}.weight") + graph_io(["x"], ["y"]))
    return model(graph), manifest(mods)


# name: (generator, size n in the release build)
SHAPES = {
    "tensors_one_reader": (tensors_one_reader, 16_000),
    "own_reads": (own_reads, 16_000),
    "reads_per_tensor": (reads_per_tensor, 256_000),
    "vector_reads": (vector_reads, 16_000),
    "derived_names": (derived_names, 16_000),
    "many_events": (many_events, 400_000),
    "wide_tree": (wide_tree, 16_000),
    "deep_tree": (deep_tree, 2_000_000),
}


def measure(args, timeout=600):
    """(instructions, CPU seconds) of one run of `semmap ARGS` under
    callgrind, or None when it fails (the failure recorded)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                           semmap, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          timeout=timeout)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    counted = re.search(rb"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or counted is None:
        failures.append(f"{' '.join(args[:2])}: exit {done.returncode}: {done.stderr[-300:]!r}")
        return None
    return int(counted.group(1)), (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


with tempfile.TemporaryDirectory() as tmp:
    t = lambda name: os.path.join(tmp, name)
    tiny_model = write(t("tiny.onnx"), model(node("/m/MatMul", "MatMul", ["x", "m.weight"], ["y"]) +
                                            initializer("m.weight") + graph_io(["x"], ["y"])))
    tiny_manifest = write(t("tiny.json"), manifest([module("", None, ["m"]),
                                                     module("m", "", [], ["weight"])]))
    base = measure(["map", tiny_model, "--manifest", tiny_manifest, "--json"])
    if base is None:
        sys.exit(f"FAIL: {failures[0]}")
    base = base[0]
    print(f"one-node model: {base / 1e6:.1f} M instructions (subtracted)")
    for name, (generate, release_n) in SHAPES.items():
        if wanted and name not in wanted:
            continue
        n = release_n // SCALE
        counts = []
        for size in (n, 2 * n):
            graph, text = generate(size)
            paths = write(t(f"{name}.onnx"), graph), write(t(f"{name}.json"), text)
            input_bytes = len(graph) + len(text)
            del graph, text
            got = measure(["map", paths[0], "--manifest", paths[1], "--json"])
            if got is None:
                break
            counts.append((got[0], got[1], input_bytes))
        if len(counts) < 2:
            continue
        (small, small_s, small_bytes), (large, large_s, large_bytes) = counts
        work = max(large - base, 1) / max(small - base, 1)
        # Growth per doubling of the input, whatever its bytes grew by.
        growth = 2 ** (math.log(work) / math.log(large_bytes / small_bytes))
        print(f"{name}: n={n:,} {small / 1e6:.0f} M instructions ({small_s:.1f} s), "
              f"2n {large / 1e6:.0f} M ({large_s:.1f} s); input {small_bytes / 1e6:.1f} -> "
              f"{large_bytes / 1e6:.1f} MB: {growth:.2f}x per doubling")
        if growth > BOUND:
            failures.append(f"{name}: {growth:.2f}x per doubling of the input, above {BOUND}x "
                            f"({small / 1e6:.0f} M instructions at n={n:,}, "
                            f"{large / 1e6:.0f} M at {2 * n:,})")

for f in failures:
    print("FAIL:", f)
print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
