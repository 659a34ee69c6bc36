"""Hostile input, fourth round: each defect of the audit as a CLI contract.

Run by ctest with the project's .venv:
    check_linear_time_and_stdout.py SEMMAP FIXTURES_DIR
The reproducers are generated here (models written byte by byte, manifests
as JSON): mapping time must stay linear in the graph and the manifest, and
the times measured are printed.
"""

import json
import os
import subprocess
import sys
import tempfile

from semmap_testlib import (SANITIZED, budget, fastest, field, graph_io, initializer, manifest,
                            model, module, node, varint, write)

semmap, fixtures = map(os.path.abspath, sys.argv[1:3])
bert = os.path.join(fixtures, "bert-seqcls.torchscript")
failures = []

# Under the sanitizers every run is several times slower: the time bounds
# are the release build's to check (as in check_size_limits.py).


def run(*args, stdout=subprocess.PIPE, cwd=None, timeout=120):
    return subprocess.run([semmap, *args], stdout=stdout, stderr=subprocess.PIPE, cwd=cwd,
                          timeout=budget(timeout))


def check(name, done, code, fragment=""):
    err = done.stderr.decode(errors="replace")
    if done.returncode != code or fragment not in err:
        failures.append(f"{name}: exit {done.returncode} (expected {code}), stderr: {err[:300]!r}")


def timed(name, limit, *args):
    """Runs `semmap map ARGS --json`; fails when every one of three runs is
    slower than `limit` seconds (stretched on a busy machine: budget())."""
    seconds, done, over = fastest(limit, lambda: run("map", *args, "--json"),
                                  tries=1 if SANITIZED else 3)
    print(f"{name}: {seconds:.2f} s")
    check(name, done, 0)
    if not SANITIZED and over is not None:
        failures.append(f"{name}: {seconds:.1f} s in the fastest of 3 runs, above "
                        f"{over:.1f} s ({limit} s on a quiet machine)")
    return json.loads(done.stdout) if done.returncode == 0 else None








def alternating(pairs, a="a", b="b"):
    """Unnamed nodes: a MatMul reading A's weight, an Add, a MatMul reading
    B's weight, an Add, ... `pairs` of each: a gap between two anchors
    after every MatMul."""
    nodes, prev = [], "x"
    for i in range(pairs):
        owner = a if i % 2 == 0 else b
        nodes.append(node("", "MatMul", [prev, f"{owner}.weight"], [f"m{i}"]))
        nodes.append(node("", "Add", [f"m{i}", f"m{i}"], [f"s{i}"]))
        prev = f"s{i}"
    return model(b"".join(nodes) + initializer(f"{a}.weight", [4, 4]) +
                 initializer(f"{b}.weight", [4, 4]) + graph_io(["x"], [prev]))


with tempfile.TemporaryDirectory() as tmp:
    t = lambda name: os.path.join(tmp, name)
    small = write(t("small.onnx"), model(node("/a/MatMul", "MatMul", ["x", "x"], ["y"]) +
                                         graph_io(["x"], ["y"])))
    bert_model, bert_manifest = os.path.join(bert, "model.onnx"), os.path.join(bert, "manifest.json")

    # 1. Forward signatures looked up in tables, not rescanned per gap: 4,000
    # nodes (2,000 gaps) and 10^6 events on two modules (a read, then
    # 499,999 adds each): 33.9 s before.
    ops = [{"op": "matmul", "reads": ["weight"]}] + [{"op": "add"}] * 499_999
    text = manifest([module("", None, ["a", "b"], forward=[{"call": "a"}, {"call": "b"}]),
                     module("a", "", [], ["weight"], forward=ops),
                     module("b", "", [], ["weight"], forward=ops)])
    # The reader refuses more than 10,000 events per module (item 5), so the
    # manifest written by the audit is refused outright...
    events = write(t("events.json"), text)
    graph = write(t("gaps.onnx"), alternating(2000))
    check("1 a forward of 500,000 events is refused", run("map", graph, "--manifest", events), 2,
          "/modules/1/forward: 500000 events, above the schema's limit of 10000")
    # ... and the same work is reached within the limit: a and b deep in
    # two chains of 50 modules of 10,000 events each, whose call toward the
    # next comes last (each gap looked for it in all 50 forwards: 1 s per
    # 100 gaps before).
    def chain(top, leaf, depth):
        paths = [top]
        for _ in range(depth - 1):
            paths.append(paths[-1] + ".c")
        mods = []
        for k, path in enumerate(paths):
            child = paths[k + 1] if k + 1 < depth else f"{path}.{leaf}"
            mods.append(module(path, path.rsplit(".", 1)[0] if "." in path else "", [child],
                               forward=[{"op": "add"}] * 9_999 + [{"call": child}]))
        mods.append(module(f"{paths[-1]}.{leaf}", paths[-1], [], ["weight"],
                           forward=[{"op": "matmul", "reads": ["weight"]}]))
        return mods, f"{paths[-1]}.{leaf}"
    chain_a, a_path = chain("ca", "a", 50)
    chain_b, b_path = chain("cb", "b", 50)
    deep_text = manifest([module("", None, ["ca", "cb"], forward=[{"call": "ca"}, {"call": "cb"}])] +
                         chain_a + chain_b)
    deep = write(t("deep.json"), deep_text)
    print(f"1 manifest: {len(deep_text) / 1e6:.1f} MB, "
          f"{sum(len(m.get('forward', ())) for m in chain_a + chain_b) / 1e6:.2f} M events")
    deep_graph = write(t("deep.onnx"), alternating(2000, a_path, b_path))
    timed("1 4,000 nodes, 10^6 events in two 50-deep chains", 1.5, deep_graph, "--manifest", deep)

    # 3. One budget per graph for the events visited: 40,000 nodes whose
    # gaps each walk the root's 100,000 calls of an empty module: 15.9 s
    # before (a budget per gap only).
    # (100,000 events on one module are above the schema's limit: the calls
    # go through ten modules of 10,000 calls each.)
    relays = [f"r{k}" for k in range(10)]
    empty_calls = manifest(
        [module("", None, ["a", "e", *relays, "b"],
                forward=[{"call": "a"}] + [{"call": r} for r in relays] + [{"call": "b"}]),
         module("a", "", [], ["weight"], forward=[{"op": "matmul", "reads": ["weight"]}]),
         module("e", "", [], [], forward=[])] +
        [module(r, "", [], [], forward=[{"call": "e"}] * 10_000) for r in relays] +
        [module("b", "", [], ["weight"], forward=[{"op": "matmul", "reads": ["weight"]}])])
    empty_path = write(t("empty_calls.json"), empty_calls)
    graph40k = write(t("gaps40k.onnx"), alternating(20_000))
    timed("3 40,000 nodes, 100,000 empty calls", 1.5, graph40k, "--manifest", empty_path)

    # 2. Sibling pairs in one walk of each parent's children: 400,000
    # modules under the root, each with a weight (25.8 s before).
    n = 400_000
    kids = [f"m{i}" for i in range(n)]
    siblings = manifest([module("", None, kids)] + [module(k, "", [], ["weight"]) for k in kids])
    del kids
    siblings_path = write(t("siblings.json"), siblings)
    print(f"2 manifest: {len(siblings) / 1e6:.1f} MB")
    del siblings
    timed("2 400,000 sibling modules", 4, small, "--manifest", siblings_path,
          "--allow-manifest-mismatch")

    # 6. `-` is standard output for every writer that can stream, the same
    # bytes as the file; the stages of extract cannot stream and say so.
    writers = [
        ["annotate", bert_model, "--manifest", bert_manifest],
        ["sidecar", bert_model, "--manifest", bert_manifest],
        ["extract", bert_model, "--manifest", bert_manifest, "--module", "bert.pooler"],
        ["graphml", bert_model, "--manifest", bert_manifest],
        ["node-data", bert_model, "--manifest", bert_manifest],
        ["report", bert_model, "--manifest", bert_manifest],
    ]
    for args in writers:
        cwd = tempfile.mkdtemp(dir=tmp)
        piped = run(*args, "-o", "-", cwd=cwd)
        check(f"6 {args[0]} -o -", piped, 0)
        if os.listdir(cwd):
            failures.append(f"6 {args[0]} -o - wrote files: {os.listdir(cwd)}")
        to_file = t(f"{args[0]}.out")
        check(f"6 {args[0]} -o FILE", run(*args, "-o", to_file), 0)
        with open(to_file, "rb") as f:
            if f.read() != piped.stdout:
                failures.append(f"6 {args[0]} -o - is not the bytes of -o FILE")
        # Redirected to a file, standard output gets the same bytes.
        redirected = t(f"{args[0]}.redirected")
        with open(redirected, "wb") as f:
            check(f"6 {args[0]} -o - > FILE", run(*args, "-o", "-", stdout=f, cwd=cwd), 0)
        with open(redirected, "rb") as f, open(to_file, "rb") as g:
            if f.read() != g.read():
                failures.append(f"6 {args[0]} -o - > FILE differs from -o FILE")
    # Appended to (>>), a file would be replaced whole: refused, the file
    # kept; the sidecar is printed, and appends.
    kept = write(t("kept.txt"), "earlier output\n")
    for args in writers:
        with open(kept, "ab") as f:
            done = run(*args, "-o", "-", stdout=f)
        if args[0] == "sidecar":
            check("6 sidecar -o - >> FILE", done, 0)
            with open(kept) as f:
                appended = f.read()
            if not appended.startswith("earlier output\n{"):
                failures.append(f"6 sidecar -o - >> FILE did not append: {appended[:40]!r}")
            write(kept, "earlier output\n")
            continue
        check(f"6 {args[0]} -o - >> FILE", done, 2, "appends to a file")
        with open(kept) as f:
            if f.read() != "earlier output\n":
                failures.append(f"6 {args[0]} -o - >> FILE changed the file")
                write(kept, "earlier output\n")
    cwd = tempfile.mkdtemp(dir=tmp)
    check("6 extract --stages -o -",
          run("extract", bert_model, "--manifest", bert_manifest, "--stages", "2", "-o", "-",
              cwd=cwd), 2, "cannot take stages")
    if os.listdir(cwd):
        failures.append(f"6 extract --stages -o - wrote files: {os.listdir(cwd)}")

    # 7. Standard output is checked against the inputs like -o: appending
    # the sidecar (or any output) to the manifest is refused, the file kept.
    with open(bert_manifest, "rb") as f:
        original = f.read()
    target = write(t("manifest.json"), original)
    for args in (["sidecar", bert_model, "--manifest", target],
                 ["sidecar", bert_model, "--manifest", target, "-o", "-"],
                 ["map", bert_model, "--manifest", target],
                 ["tree", bert_model, "--manifest", target],
                 ["annotate", bert_model, "--manifest", target, "-o", t("out.onnx")]):
        with open(target, "ab") as f:
            done = run(*args, stdout=f)
        check(f"7 {' '.join(args[:1] + args[3:])} >> manifest", done, 2, "is also standard output")
        with open(target, "rb") as f:
            if f.read() != original:
                failures.append(f"7 {args[0]} wrote into the manifest")
                write(target, original)
    with open(t("model-copy.onnx"), "wb") as f:
        done = run("sidecar", t("model-copy.onnx"), stdout=f)
    # (An input that is standard output but empty is still refused.)
    check("7 the model itself as standard output", done, 2, "is also standard output")
    with open(target, "ab") as f:
        check("7 --allow-overwrite allows it",
              run("sidecar", small, "--manifest", target, "--allow-manifest-mismatch",
                  "--allow-overwrite", stdout=f), 0)

for f in failures:
    print("FAIL:", f)
print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
