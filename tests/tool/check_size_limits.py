"""Hostile input, second round: each defect of the audit as a CLI contract.

Run by ctest with the project's .venv:
    check_size_limits.py SEMMAP SEMMAP_EVAL FIXTURES_DIR
Models are written byte by byte (the wire format), so a case can hold what
onnx would refuse to build.
"""

import json
import os
import resource
import stat
import subprocess
import sys
import tempfile
import threading
import time

from semmap_testlib import SANITIZED, budget, field, model, node, write

semmap, semmap_eval, fixtures = sys.argv[1:4]
bert = os.path.join(fixtures, "bert-seqcls.torchscript")
failures = []



# Under AddressSanitizer (SEMMAP_SANITIZED=1, set by the sanitizer build's
# ctest) an address-space limit stops the shadow memory from being mapped and
# every run is several times slower: the memory bounds and time limits are
# checked by the release build's run of this test, the rest by both.


def run(*args, memory_mb=None, timeout=60, stdout=subprocess.PIPE):
    if memory_mb and SANITIZED:
        return None
    def limit():
        if memory_mb:
            resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
    return subprocess.run([*args], stdout=stdout, stderr=subprocess.PIPE,
                          timeout=budget(timeout), preexec_fn=limit)


def check(name, done, code, fragment=""):
    if done is None:
        print(f"{name}: memory bound checked by the release build only")
        return
    err = done.stderr.decode(errors="replace")
    if done.returncode != code or fragment not in err:
        failures.append(f"{name}: exit {done.returncode} (expected {code}), stderr: {err[:300]!r}")


def manifest(modules):
    return json.dumps({"format": "semmap.manifest", "schema_version": 1,
                       "model": {"class": "M", "qualified_class": "t.M"}, "modules": modules})


def module(path, parent, children=(), parameters=()):
    return {"path": path, "class": "C", "qualified_class": "t.C", "parent": parent,
            "children": list(children), "parameters": list(parameters), "buffers": []}


with tempfile.TemporaryDirectory() as tmp:
    t = lambda name: os.path.join(tmp, name)
    small = write(t("small.onnx"), model(node("/a/MatMul")))
    bert_model, bert_manifest = os.path.join(bert, "model.onnx"), os.path.join(bert, "manifest.json")

    # 1. Parameter counts saturate instead of overflowing.
    big = write(t("big.json"), manifest([
        module("", None, ["a"]),
        module("a", "", [], [{"name": "w", "shape": [2**32, 2**32], "dtype": "f"}])]))
    done = run(semmap, "sidecar", small, "--manifest", big)
    check("1 sidecar huge parameter", done, 0)
    if done.returncode == 0:
        tree = json.loads(done.stdout)["tree"]["modules"]
        if min(m["subtree_parameters"] for m in tree) < 2**62:
            failures.append("1 subtree_parameters did not saturate")
    check("1 tree huge parameter", run(semmap, "tree", small, "--manifest", big), 0)

    # 2. A 50,000-deep module chain prints; a parent that is not the path's prefix is refused.
    deep = write(t("deep.onnx"), model(node("/" + "a." * 50000 + "b/MatMul")))
    check("2 tree deep chain", run(semmap, "tree", deep), 0)
    wrong_parent = write(t("parent.json"), manifest([module("", None, ["x", "x.y"]),
                                                       module("x", ""), module("x.y", "")]))
    check("2 parent not the path's prefix", run(semmap, "map", small, "--manifest", wrong_parent),
          2, "is not the module's path without its last atom")

    # 3. Many op types under a deep chain: bounded histograms, in bounded memory.
    paths = [".".join(f"m{i}" for i in range(d + 1)) for d in range(1000)]
    chain = [module("", None, [paths[0]])]
    for d, path in enumerate(paths):
        chain.append(module(path, paths[d - 1] if d else "", paths[d + 1:d + 2]))
    deepest = chain[-1]["path"]
    ops = b"".join(node("/" + deepest.replace(".", "/") + f"/Op{i}", f"Op{i}") for i in range(4500))
    many_ops = write(t("ops.onnx"), model(ops))
    chain_json = write(t("chain.json"), manifest(chain))
    done = run(semmap, "sidecar", many_ops, "--manifest", chain_json, "--compact", memory_mb=3000)
    check("3 sidecar deep chain x many op types", done, 0)
    if done is not None and done.returncode == 0 and json.loads(done.stdout)["tree"].get("subtree_op_types_complete", True):
        failures.append("3 subtree op types not bounded")

    # 4. Root binding: 10,000 scopes under 'a', 20,000 modules named 'a'.
    scopes = b"".join(node(f"/a/s{i}/MatMul") for i in range(10000))
    many_a = [module("", None, [f"m{i}" for i in range(20000)])]
    many_a += [module(f"m{i}", "", [f"m{i}.a"]) for i in range(20000)]
    many_a += [module(f"m{i}.a", f"m{i}") for i in range(20000)]
    start = time.time()
    check("4 root binding", run(semmap, "map", write(t("scopes.onnx"), model(scopes)),
                                "--manifest", write(t("many_a.json"), manifest(many_a)),
                                "--allow-manifest-mismatch"), 0)
    if time.time() - start > budget(30):
        failures.append(f"4 root binding took {time.time() - start:.0f} s")

    # 5. A 16 MB name of 8M atoms, no manifest: linear, in bounded memory.
    name16 = write(t("name16.onnx"), model(node("/" + "a." * ((8 << 20) - 16) + "b/MatMul")))
    check("5 16 MB name", run(semmap, "tree", name16, memory_mb=1024), 0)

    # 6. Limits bound memory (docs/robustness.md); out of memory is a status.
    write(t("inputs.onnx"), model(field(1, field(1, b"") * 5_000_000)))
    check("6 5M inputs under 1 GB", run(semmap, "map", t("inputs.onnx"), memory_mb=1024), 0)
    write(t("nodes.onnx"), model(field(1, b"") * 4_000_000))
    check("6 4M nodes under 512 MB", run(semmap, "map", t("nodes.onnx"), memory_mb=512), 2,
          "out of memory")

    # 8. FIFOs are streamed into, never replaced.
    fifo = t("fifo")
    os.mkfifo(fifo)
    got = {}
    reader = threading.Thread(target=lambda: got.setdefault("bytes", open(fifo, "rb").read()))
    reader.start()
    check("8 sidecar -o FIFO", run(semmap, "sidecar", small, "-o", fifo), 0)
    reader.join(10)
    if not stat.S_ISFIFO(os.stat(fifo).st_mode) or not got.get("bytes", b"").startswith(b"{"):
        failures.append("8 the FIFO was replaced or got no sidecar")
    os.symlink(small, t("link.onnx"))
    check("8 -o a socket-free symlink to the model", run(semmap, "sidecar", small, "-o", t("link.onnx")),
          2, "--allow-overwrite")

    # 9. Every input is protected: the manifest too.
    man_copy = write(t("manifest.json"), open(bert_manifest).read())
    before = open(man_copy, "rb").read()
    check("9 annotate -o manifest", run(semmap, "annotate", bert_model, "--manifest", man_copy,
                                        "-o", man_copy), 2, "--allow-overwrite")
    check("9 extract -o manifest", run(semmap, "extract", bert_model, "--manifest", man_copy,
                                       "--module", "bert.pooler", "-o", man_copy), 2, "the manifest")
    if open(man_copy, "rb").read() != before:
        failures.append("9 the manifest was overwritten")

    # 10. A failed write on stdout is exit 2.
    if os.path.exists("/dev/full"):
        for args in (["sidecar", small], ["map", small], ["tree", small, "--json"]):
            with open("/dev/full", "wb") as full:
                check(f"10 {args[0]} > /dev/full", run(semmap, *args, stdout=full), 2, "standard output")

    # 12. The truth file: a directory, a FIFO, deep nesting.
    check("12 truth is a directory", run(semmap_eval, small, "--truth", tmp), 2, "is a directory")
    check("12 truth is a FIFO", run(semmap_eval, small, "--truth", fifo, timeout=10), 2,
          "not a regular file")
    check("12 truth nested deep", run(semmap_eval, small, "--truth",
                                      write(t("deep.json"), "[" * 1_000_000 + "]" * 1_000_000)),
          2, "nested")

    # 13. Output names up to NAME_MAX.
    long_name = t("o" * 250 + ".json")
    check("13 a 250-byte output name", run(semmap, "sidecar", small, "-o", long_name), 0)

    # Also: a file as the output's directory; flags blamed for their values;
    # control characters escaped; an empty graph and a bad opset refused.
    check("also -o afile/x", run(semmap, "sidecar", small, "-o", small + "/x.json"), 2,
          "is a file, not a directory")
    for args, flag in ((["--pattern", "("], "--pattern: invalid pattern"),
                       (["--pattern", ""], "--pattern: empty"), (["--layer", "-1"], "--layer: ")):
        check(f"also query {args}", run(semmap, "query", bert_model, "--manifest", bert_manifest,
                                        *args), 2, flag)
    hostile = write(t("esc.json"), manifest([module("", None, ["\x1b[2J\x07"])]))
    done = run(semmap, "map", small, "--manifest", hostile)
    if b"\x1b" in done.stderr or b"\x07" in done.stderr or b"\\x1b" not in done.stderr:
        failures.append(f"also control characters not escaped: {done.stderr[:200]!r}")
    check("also empty graph", run(semmap, "map", write(t("4byte.onnx"), b"\x08\x07\x3a\x00")), 2,
          "no graph")
    check("also opset overflow", run(semmap, "map", write(t("opset.onnx"),
                                                          model(node("/a/MatMul"), 2**64 - 1))),
          2, "out of range")

    # Also: a file name that is not UTF-8 is written to JSON with U+FFFD,
    # not an abort.
    bad_name = os.path.join(tmp.encode(), b"bad\xffname.onnx")
    with open(bad_name, "wb") as f:
        f.write(model(node("/a/MatMul")))
    for args in (["map", "--json"], ["query", "--json", "--pattern", "."],
                 ["annotate", "--json", "-o", t("annotated.onnx")]):
        done = run(semmap, args[0], bad_name, *args[1:])
        check(f"also non-UTF-8 file name, {' '.join(args)}", done, 0)
        try:
            if json.loads(done.stdout)["model"] != os.path.join(tmp, "bad\ufffdname.onnx"):
                failures.append(f"also non-UTF-8 file name: {done.stdout[:200]!r}")
        except (ValueError, KeyError) as e:
            failures.append(f"also non-UTF-8 file name, {' '.join(args)}: {e}: {done.stdout[:200]!r}")

    # Also: stale temporaries of a dead writer are removed, old or fresh
    # (no lock held on them); live ones kept, however old (check_hostile_cli3.py
    # has the locked ones and the look-alikes).
    out = t("side.json")
    dead = t(f".side.json.tmp-{2**22 - 7}-0-1")
    live = t(f".side.json.tmp-{os.getpid()}-0-1")
    fresh = t(f".side.json.tmp-{2**22 - 7}-1-2")
    for path in (dead, live, fresh):
        write(path, "partial")
    old = time.time() - 7200
    os.utime(dead, (old, old))
    os.utime(live, (old, old))
    check("also stale temporaries", run(semmap, "sidecar", small, "-o", out), 0)
    if os.path.exists(dead) or os.path.exists(fresh) or not os.path.exists(live):
        failures.append("also stale temporaries: wrong files removed")

for f in failures:
    print("FAIL:", f)
print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
