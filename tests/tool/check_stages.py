"""Checks `semmap extract --stages` / `--boundaries`: every stage passes
onnx.checker, the stages chained in onnxruntime (each fed by name from the
model's inputs and the earlier stages' outputs) give the whole model's
outputs, every node lands in exactly one stage, no layer is split, and a
stage reads only model inputs and earlier stages' outputs.

    check_stages.py SEMMAP_BINARY FIXTURES_DIR
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

from semmap_testlib import run

HERE = Path(__file__).resolve().parent
# (fixture, layer container, run shape inference on the source first)
CASES = [("bert-seqcls.torchscript", "bert.encoder.layer", True),
         ("gpt2-causal-lm.torchscript", "transformer.h", True),
         ("bert-seqcls.dynamo", "bert.encoder.layer", False)]


def session(model):
    options = ort.SessionOptions()
    options.log_severity_level = 3
    data = model if isinstance(model, bytes) else model.SerializeToString()
    return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def chain(report, feeds):
    values = dict(feeds)
    for stage in report["stages"]:
        model = onnx.load(stage["path"])
        onnx.checker.check_model(model, full_check=True)
        names_in = [i.name for i in model.graph.input]
        names_out = [o.name for o in model.graph.output]
        assert names_in == stage["inputs"] and names_out == stage["outputs"], stage["path"]
        missing = [n for n in names_in if n not in values]
        assert not missing, f"{stage['path']}: inputs from no earlier stage: {missing}"
        got = session(model).run(names_out, {n: values[n] for n in names_in})
        values.update(zip(names_out, got))
    return values


def check_split(tag, binary, source, manifest, report, container):
    """Every node in one stage; layer items whole."""
    model = onnx.load(source)
    sidecar = json.loads(run(binary, "sidecar", str(source), "--manifest", str(manifest)))
    module_of = {n["name"]: n["module"] for n in sidecar["nodes"] if n["subgraph"] == 0}
    stage_of = {}
    for k, stage in enumerate(report["stages"]):
        for node in onnx.load(stage["path"]).graph.node:
            if node.op_type == "Constant" and not node.input:
                continue  # copied into every stage reading it
            assert node.name not in stage_of, f"{tag}: {node.name} in two stages"
            stage_of[node.name] = k
    non_constant = [n.name for n in model.graph.node if not (n.op_type == "Constant" and not n.input)]
    assert sorted(stage_of) == sorted(non_constant), f"{tag}: nodes lost or added"
    items = {}
    for name, k in stage_of.items():
        module = module_of.get(name) or ""
        if module.startswith(container + "."):
            item = ".".join(module.split(".")[: container.count(".") + 2])
            items.setdefault(item, set()).add(k)
    assert items and all(len(s) == 1 for s in items.values()), f"{tag}: a layer split: {items}"
    return items


def main():
    binary, fixtures = sys.argv[1], Path(sys.argv[2])
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for fixture, container, infer in CASES:
            d = fixtures / fixture
            source, manifest = d / "model.onnx", d / "manifest.json"
            if infer:
                source = tmp / f"{fixture}.inferred.onnx"
                onnx.shape_inference.infer_shapes_path(str(d / "model.onnx"), str(source))
            full = onnx.load(source)
            feeds = {i.name: np.ones((2, 7), np.int64) for i in full.graph.input}
            names = [o.name for o in full.graph.output]
            expected = dict(zip(names, session(full).run(names, feeds)))
            for label, extra in [("3 stages", ["--stages", "3"]),
                                 ("boundaries", ["--boundaries", f"{container}.1"])]:
                out = tmp / fixture / label.replace(" ", "-") / "model.onnx"
                out.parent.mkdir(parents=True)
                report = json.loads(run(binary, "extract", str(source), "--manifest", str(manifest),
                                        "-o", str(out), "--json", *extra))
                n = 3 if label == "3 stages" else 2
                assert len(report["stages"]) == n, f"{fixture} {label}: {len(report['stages'])} stages"
                assert all(s["untyped"] == 0 for s in report["stages"]), f"{fixture}: untyped"
                values = chain(report, feeds)
                for name in names:
                    got = values[name]
                    assert got.shape == expected[name].shape, f"{fixture} {label}: {name} shape"
                    diff = float(np.max(np.abs(got - expected[name]))) if got.size else 0.0
                    assert np.allclose(got, expected[name], rtol=1e-4, atol=1e-5), \
                        f"{fixture} {label}: {name} differs from the whole model's (max {diff})"
                items = check_split(f"{fixture} {label}", binary, source, manifest, report, container)
                if label == "boundaries":
                    assert report["stages"][1]["first_unit"] == f"{container}.1", report["stages"][1]
                weights = [s["weight"] for s in report["stages"]]
                print(f"ok {fixture} {label}: stages of {weights} nodes, {len(items)} layers whole, "
                      f"chained outputs equal the whole model's")

        # Balanced by a real profile's kernel time.
        d = fixtures / "bert-seqcls.torchscript"
        source = tmp / "bert-seqcls.torchscript.inferred.onnx"
        profile = tmp / "profile.json"
        subprocess.run([sys.executable, str(HERE.parents[1] / "scripts" / "ort-profile"), str(source), str(profile)],
                       check=True)
        out = tmp / "timed" / "model.onnx"
        out.parent.mkdir()
        report = json.loads(run(binary, "extract", str(source), "--manifest", str(d / "manifest.json"),
                                "-o", str(out), "--stages", "2", "--ort-profile", str(profile), "--json"))
        times = json.loads(run(binary, "profile", str(source), "--manifest", str(d / "manifest.json"),
                               "--ort-profile", str(profile), "--json"))
        assert report["balance"] == "time_us"
        assert sum(s["weight"] for s in report["stages"]) == times["attributed_us"], "time weights"
        full = onnx.load(source)
        feeds = {i.name: np.ones((2, 7), np.int64) for i in full.graph.input}
        names = [o.name for o in full.graph.output]
        values = chain(report, feeds)
        for name, want in zip(names, session(full).run(names, feeds)):
            assert np.allclose(values[name], want, rtol=1e-4, atol=1e-5), "timed stages"
        print(f"ok time-balanced: stages of {[s['weight'] for s in report['stages']]} us")

        # Refusals.
        m = ["extract", str(source), "--manifest", str(d / "manifest.json"), "-o", str(tmp / "r.onnx")]
        for extra, code, needle in [
                (["--stages", "500"], 2, "positions do not split a layer"),
                (["--boundaries", "bert.encoder.layer.1.output"], 2, "would split a layer"),
                (["--boundaries", "bert.pooler,bert.encoder.layer.1"], 2, "model order"),
                (["--boundaries", "no.such"], 1, "no such module"),
                (["--stages", "0"], 2, "--stages needs"),
                (["--stages", "2", "--module", "bert"], 2, "one of --module")]:
            done = subprocess.run([binary, *m, *extra], capture_output=True, text=True)
            assert done.returncode == code and needle in done.stderr, (extra, done.returncode, done.stderr)
        assert not list(tmp.glob("r.stage*.onnx")), "a refused split wrote files"
        print("ok refusals")


if __name__ == "__main__":
    main()
