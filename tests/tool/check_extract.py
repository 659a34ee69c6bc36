"""Checks `semmap extract` with the reference tools: each extracted module
passes onnx.checker and computes, under onnxruntime, what the same nodes
compute inside the full model.

For each case: the full model gets onnx shape inference (TorchScript
exports state no inner types; the mapping does not change), semmap
extracts the module, and the full model is run on random inputs with the
region's boundary values exposed as extra outputs. The captured boundary
inputs are fed to the extracted model, whose outputs must match the
captured boundary outputs.

    check_extract.py SEMMAP_BINARY FIXTURES_DIR
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

# (fixture, module, run shape inference on the source first)
CASES = [
    ("bert-seqcls.torchscript", "bert.encoder.layer.1", True),
    ("gpt2-causal-lm.torchscript", "transformer.h.1", True),
    ("vit-imgcls.torchscript", "vit.encoder.layer.1", True),
    ("vit-imgcls.torchscript", "vit.encoder.layer.0.attention", True),
    # The dynamo exporter writes value_info: types come from the file itself.
    ("bert-seqcls.dynamo", "bert.encoder.layer.0", False),
]
BATCH, SEQUENCE = 2, 7
DTYPES = {1: np.float32, 6: np.int32, 7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64}


def run(binary, *args):
    done = subprocess.run([binary, *args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"semmap {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def random_input(value, rng):
    t = value.type.tensor_type
    shape = []
    for i, d in enumerate(t.shape.dim):
        shape.append(d.dim_value if d.HasField("dim_value") else (BATCH if i == 0 else SEQUENCE))
    dtype = DTYPES[t.elem_type]
    if value.name == "attention_mask":
        return np.ones(shape, dtype)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, 100, size=shape).astype(dtype) if shape else np.array(0, dtype)
    return rng.standard_normal(shape).astype(dtype)


def check(binary, fixtures, tmp, fixture, module, infer):
    d = fixtures / fixture
    source = d / "model.onnx"
    if infer:
        source = tmp / f"{fixture}.inferred.onnx"
        onnx.shape_inference.infer_shapes_path(str(d / "model.onnx"), str(source))
    region_path = tmp / f"{fixture}.{module}.onnx"
    report = json.loads(run(binary, "extract", str(source), "--manifest", str(d / "manifest.json"),
                            "--module", module, "-o", str(region_path), "--json"))
    assert report["untyped"] == 0, f"{fixture} {module}: {report['untyped']} untyped boundary values"
    region = onnx.load(region_path)
    onnx.checker.check_model(region, full_check=True)
    names_in = [i.name for i in region.graph.input]
    names_out = [o.name for o in region.graph.output]
    assert names_in == report["inputs"] and names_out == report["outputs"], f"{fixture}: boundary"
    assert names_out, f"{fixture} {module}: no outputs"

    # The full model with every boundary value exposed.
    full = onnx.load(source)
    rng = np.random.default_rng(0)
    feeds = {i.name: random_input(i, rng) for i in full.graph.input}
    typed = {v.name: v for v in [*full.graph.value_info, *full.graph.output, *full.graph.input]}
    existing = {o.name for o in full.graph.output}
    for name in [*names_in, *names_out]:
        if name not in existing and name not in feeds:
            full.graph.output.append(typed.get(name) or onnx.ValueInfoProto(name=name))
            existing.add(name)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    full_session = ort.InferenceSession(full.SerializeToString(), options,
                                        providers=["CPUExecutionProvider"])
    wanted = [n for n in [*names_in, *names_out] if n not in feeds]
    captured = dict(zip(wanted, full_session.run(wanted, feeds)))
    captured.update(feeds)

    region_session = ort.InferenceSession(region.SerializeToString(), options,
                                          providers=["CPUExecutionProvider"])
    got = region_session.run(names_out, {n: captured[n] for n in names_in})
    for name, value in zip(names_out, got):
        expected = captured[name]
        assert value.shape == expected.shape, f"{fixture} {module}: {name}: shape {value.shape} != {expected.shape}"
        if not np.allclose(value, expected, rtol=1e-4, atol=1e-5):
            sys.exit(f"{fixture} {module}: output {name!r} differs from the full model's "
                     f"(max abs diff {np.max(np.abs(value - expected))})")
    print(f"ok {fixture} {module}: {report['nodes']} nodes, {len(names_in)} inputs, "
          f"{len(names_out)} outputs match the full model")


def main():
    binary, fixtures = sys.argv[1], Path(sys.argv[2])
    with tempfile.TemporaryDirectory() as tmp:
        for fixture, module, infer in CASES:
            check(binary, fixtures, Path(tmp), fixture, module, infer)


if __name__ == "__main__":
    main()
