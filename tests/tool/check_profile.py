"""Checks `semmap profile` on real ONNX Runtime profiles made at run time.

Two sessions: a TorchScript export run with every graph optimization off
(the profile names the file's own nodes), and the same export run through
ONNX Runtime's optimizer with the session's graph saved
(optimized_model_filepath): mapped with --reference to the export, every
profiled node must be attributed; mapped as the unoptimized export, the
fused nodes' time must be reported as not in the graph, with counts.

For each, the per-module, per-class, per-category and per-layer totals are
checked against the kernel time summed here from the profile itself, and
each module's own time against the node -> module table of `semmap sidecar`.

    check_profile.py SEMMAP_BINARY FIXTURES_DIR
"""
import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np
import onnxruntime as ort

from semmap_testlib import run

RUNS = 3
OPTIMIZED = ["bert-seqcls.torchscript", "gpt2-causal-lm.torchscript"]
SUFFIX = "_kernel_time"


def profile_session(model, tmp, tag, level, optimized=None):
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.log_severity_level = 3  # the exports declare shapes ORT warns about
    options.profile_file_prefix = str(tmp / f"{tag}-profile")
    options.graph_optimization_level = level
    if optimized is not None:
        options.optimized_model_filepath = str(optimized)
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    feeds = {}
    for i in session.get_inputs():
        feeds[i.name] = np.ones((2, 7), np.int64)
    for _ in range(RUNS):
        session.run(None, feeds)
    return Path(session.end_profiling())


def kernel_times(profile_path):
    """node name -> (microseconds, calls), from the profile's kernel events."""
    times = defaultdict(lambda: [0, 0])
    for e in json.loads(profile_path.read_text()):
        if e.get("cat") == "Node" and e["name"].endswith(SUFFIX):
            t = times[e["name"][: -len(SUFFIX)]]
            t[0] += e["dur"]
            t[1] += 1
    return times


def check_sums(tag, report, times):
    kernel = sum(t[0] for t in times.values())
    assert report["kernel_us"] == kernel, f"{tag}: kernel_us {report['kernel_us']} != {kernel}"
    assert report["profiled_nodes"] == len(times), tag
    unattributed = sum(u["us"] for u in report["unattributed"])
    assert report["attributed_us"] + unattributed == kernel, f"{tag}: attributed + unattributed"
    attributed = report["attributed_us"]
    root = [m for m in report["modules"] if m["module"] == ""]
    assert root and root[0]["subtree_us"] == attributed, f"{tag}: root subtree != attributed"
    assert sum(m["own_us"] for m in report["modules"]) == attributed, f"{tag}: own times"
    for key in ("classes", "categories", "op_types"):
        assert sum(g["us"] for g in report[key]) == attributed, f"{tag}: {key} sum"
    # Each module's subtree is its own time plus its children's subtrees.
    by_path = {m["module"]: m for m in report["modules"]}
    children = defaultdict(int)
    for m in report["modules"]:
        if m["module"]:
            parent = m["module"].rsplit(".", 1)[0] if "." in m["module"] else ""
            while parent not in by_path and parent:
                parent = parent.rsplit(".", 1)[0] if "." in parent else ""
            children[parent] += m["subtree_us"]
    for m in report["modules"]:
        assert m["subtree_us"] == m["own_us"] + children[m["module"]], f"{tag}: {m['module']}"
    # Layers: the items of a container add up to at most its subtree.
    per_container = defaultdict(int)
    for layer in report["layers"]:
        assert layer["us"] == by_path.get(layer["module"], {"subtree_us": 0})["subtree_us"], tag
        per_container[layer["container"]] += layer["us"]
    for container, us in per_container.items():
        assert us <= by_path[container]["subtree_us"], f"{tag}: layers of {container}"
    assert report["layers"], f"{tag}: no layers found"
    return kernel


def check_own_times(tag, binary, model, manifest, reference, report, times):
    """Each module's own time equals the profile's time of the nodes semmap maps to it."""
    args = ["sidecar", str(model), "--manifest", str(manifest)]
    if reference:
        args += ["--reference", str(reference)]
    sidecar = json.loads(run(binary, *args))
    module_of = {n["name"]: n["module"] for n in sidecar["nodes"] if n["name"]}
    expected = defaultdict(int)
    for name, (us, _calls) in times.items():
        if module_of.get(name) is not None:
            expected[module_of[name]] += us
    got = {m["module"]: m["own_us"] for m in report["modules"] if m["own_us"]}
    assert got == {k: v for k, v in expected.items() if v}, f"{tag}: own times differ from the sidecar's"


def profile_json(binary, *args):
    done = subprocess.run([binary, "profile", *args, "--json"], capture_output=True, text=True)
    assert done.returncode == 0, f"profile {args}: exit {done.returncode}: {done.stderr}"
    return json.loads(done.stdout), done.stderr


def expect_failure(binary, args, code, *needles):
    done = subprocess.run([binary, *args], capture_output=True, text=True)
    assert done.returncode == code, f"{args}: exit {done.returncode}, expected {code}: {done.stderr}"
    for needle in needles:
        assert needle in done.stderr, f"{args}: {needle!r} not in {done.stderr!r}"


def check_optimized(binary, d, tmp, fixture):
    model, manifest = d / "model.onnx", d / "manifest.json"
    optimized = tmp / f"{fixture}.optimized.onnx"
    opt = profile_session(model, tmp, fixture, ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
                          optimized)
    times = kernel_times(opt)
    fused = [n for n in times if not n.startswith("/")]
    assert fused, f"{fixture}: the optimizer fused nothing: the case tests nothing"
    report, stderr = profile_json(binary, str(optimized), "--manifest", str(manifest),
                                  "--reference", str(model), "--ort-profile", str(opt))
    kernel = check_sums(fixture, report, times)
    assert report["attributed_us"] == kernel, f"{fixture}: unattributed {report['unattributed']}"
    assert report["reference"] == str(model)
    check_own_times(fixture, binary, optimized, manifest, model, report, times)
    print(f"ok {fixture} optimized + --reference: {len(times)} nodes ({len(fused)} fused), "
          f"{kernel} us, all attributed")

    report, stderr = profile_json(binary, str(model), "--manifest", str(manifest),
                                  "--ort-profile", str(opt))
    check_sums(fixture, report, times)
    missing = [u for u in report["unattributed"] if u["reason"] == "not_in_graph"]
    assert missing and missing[0]["nodes"] == len(fused), report["unattributed"]
    assert missing[0]["us"] == sum(times[n][0] for n in fused), "not_in_graph time"
    assert "optimized_model_filepath" in stderr and f"{len(fused)} profiled nodes" in stderr, stderr
    print(f"ok {fixture} optimized profile vs the export: {missing[0]['nodes']} fused nodes, "
          f"{missing[0]['us']} us reported not in the graph")


def main():
    binary, fixtures = sys.argv[1], Path(sys.argv[2])
    d = fixtures / "bert-seqcls.torchscript"
    model, manifest = d / "model.onnx", d / "manifest.json"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # 1. The plain export, no graph optimization.
        plain = profile_session(model, tmp, "plain", ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
        times = kernel_times(plain)
        report, stderr = profile_json(binary, str(model), "--manifest", str(manifest),
                                      "--ort-profile", str(plain))
        kernel = check_sums("plain", report, times)
        assert report["attributed_us"] == kernel and not report["unattributed"], "plain: all attributed"
        assert report["runs"] == RUNS, report["runs"]
        assert all(calls == RUNS for _us, calls in times.values()), "plain: calls per node"
        check_own_times("plain", binary, model, manifest, None, report, times)
        print(f"ok plain: {len(times)} nodes, {kernel} us, all attributed, "
              f"{len(report['modules'])} modules")

        # 2. Through ONNX Runtime's optimizer, the session's graph saved; two
        # fixtures. 3. The same profile against the export on disk: fused
        # nodes are not in that graph; their time is reported, with counts.
        for fixture in OPTIMIZED:
            check_optimized(binary, fixtures / fixture, tmp, fixture)
        optimized, opt = tmp / "bert-seqcls.torchscript.optimized.onnx", \
            next(tmp.glob("bert-seqcls.torchscript-profile*.json"))

        # 4. The text table.
        text = run(binary, "profile", str(optimized), "--manifest", str(manifest),
                   "--reference", str(model), "--ort-profile", str(opt), "--top", "3")
        for needle in ("attributed:", "modules by subtree time", "modules by own time",
                       "layers (items of repeated containers", "classes (own time)",
                       "categories (top 3 of", "bert.encoder.layer.1 (BertLayer)"):
            assert needle in text, f"{needle!r} not in:\n{text}"

        # 5. Refusals.
        bad = tmp / "bad.json"
        bad.write_text('[{"cat": "Node", "name": "x_kernel_time", "dur": 1},')
        expect_failure(binary, ["profile", str(model), "--ort-profile", str(bad)], 2,
                       str(bad), "not valid JSON at byte")
        bad.write_text('[{"cat": "Node", "name": "x_kernel_time", "dur": "12"}]')
        expect_failure(binary, ["profile", str(model), "--ort-profile", str(bad)], 2,
                       f"{bad}: /0/dur: expected a number")
        bad.write_text('{"events": []}')
        expect_failure(binary, ["profile", str(model), "--ort-profile", str(bad)], 2,
                       "not an ONNX Runtime profile")
        bad.write_text(json.dumps([{"cat": "Node", "name": "nowhere_kernel_time", "dur": 5,
                                    "ph": "X", "args": {"op_name": "Add"}}]))
        expect_failure(binary, ["profile", str(model), "--ort-profile", str(bad)], 2,
                       "none of its 1 profiled nodes is a node of", "optimized_model_filepath")
        expect_failure(binary, ["profile", str(model)], 2, "missing --ort-profile")
        expect_failure(binary, ["profile", str(model), "--ort-profile", str(tmp / "absent.json")],
                       2, str(tmp / "absent.json"))
        done = subprocess.run([binary, "profile", "--help"], capture_output=True, text=True)
        assert done.returncode == 0 and "--ort-profile" in done.stdout
        print("ok refusals")


if __name__ == "__main__":
    main()
