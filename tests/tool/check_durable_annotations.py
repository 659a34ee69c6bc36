"""Checks that `semmap annotate --scoped-names` survives the tools people run
before deploying a model, which drop every node's metadata_props: onnxslim,
ONNX Runtime's transformer optimizer and ONNX Runtime session optimization
saved with optimized_model_filepath.

For each fixture: the annotated model passes onnx.checker (full check) and
computes, under onnxruntime, exactly what the original computes. Then for
each tool: the annotated model goes through the tool, and semmap maps the
result with and without the manifest. Every node that survives the tool
(same name before and after) must keep the module semmap annotated before
the tool ran; the figures are printed, and the share of surviving mapped
nodes that keep their module must reach FLOOR.

    check_durable_annotations.py SEMMAP_BINARY FIXTURES_DIR
"""
import contextlib
import io
import json
import logging
import sys
import tempfile
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

from semmap_testlib import all_nodes, run

# (fixture, model_type for the transformer optimizer)
FIXTURES = [
    ("bert-seqcls.dynamo", "bert"),
    ("vit-imgcls.dynamo", "vit"),
    ("gpt2-causal-lm.dynamo", "gpt2"),
    ("bert-seqcls.torchscript", "bert"),
    ("vit-imgcls.torchscript", "vit"),
]
TOOLS = ["onnxslim", "ort-transformers", "ort-session"]
# Floors. Every renamed node keeps its module, in every fixture, tool and
# manifest mode. Nodes left with their names (mapped below the renaming
# floor: shape computations, neighbourhood guesses at 0.15 to 0.85) are
# mapped afresh from what the tool left, and a few of those guesses move,
# more or fewer as the inference changes: FLOOR_TOTAL of all surviving
# mapped nodes over all cases keep their module, and at least FLOOR_MAPPED
# in each case.
FLOOR_RENAMED = 1.0
FLOOR_MAPPED = 0.95
FLOOR_TOTAL = 0.99
# Renaming carries the answers at or above the confident floor (semmap's
# kConfidentFloor); the file without renaming is the bar for those. Answers
# below it are renamed in neither file and inferred again after the tool.
CONFIDENT = 0.9
BATCH, SEQUENCE = 2, 7
DTYPES = {1: np.float32, 6: np.int32, 7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64}


def random_feeds(model, rng):
    feeds = {}
    for value in model.graph.input:
        t = value.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else (BATCH if i == 0 else SEQUENCE)
                 for i, d in enumerate(t.shape.dim)]
        dtype = DTYPES[t.elem_type]
        if value.name == "attention_mask":
            feeds[value.name] = np.ones(shape, dtype)
        elif np.issubdtype(dtype, np.integer):
            feeds[value.name] = rng.integers(0, 100, size=shape).astype(dtype)
        else:
            feeds[value.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def session(path, **options):
    so = ort.SessionOptions()
    for key, value in options.items():
        setattr(so, key, value)
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def check_annotated(original_path, annotated_path):
    """The annotated model is valid and computes what the original does."""
    onnx.checker.check_model(onnx.load(annotated_path), full_check=True)
    original = onnx.load(original_path)
    feeds = random_feeds(original, np.random.default_rng(0))
    # Without graph optimizations both run the very same kernels in order.
    plain = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = session(original_path, graph_optimization_level=plain).run(None, feeds)
    got = session(annotated_path, graph_optimization_level=plain).run(None, feeds)
    assert len(want) == len(got), f"{annotated_path}: output count differs"
    for w, g in zip(want, got):
        assert np.array_equal(w, g), f"{annotated_path}: outputs differ from the original's"


def run_tool(tool, source, target, model_type):
    if tool == "onnxslim":
        import onnxslim
        # Quiet: its summary table, and shape inference notes on stderr.
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            onnxslim.slim(str(source), str(target))
    elif tool == "ort-transformers":
        from onnxruntime.transformers.optimizer import optimize_model
        with contextlib.redirect_stdout(io.StringIO()):  # shape inference notes
            optimized = optimize_model(str(source), model_type=model_type, num_heads=0,
                                       hidden_size=0)
        optimized.save_model_to_file(str(target))
    elif tool == "ort-session":
        session(source, graph_optimization_level=ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
                optimized_model_filepath=str(target))
    else:
        raise ValueError(tool)


def annotated_modules(path):
    """Node name -> (module, renamed) as `semmap annotate` wrote them."""
    out = {}
    for node in all_nodes(onnx.load(path, load_external_data=False).graph):
        props = {p.key: p.value for p in node.metadata_props}
        if props.get("strategy@semmap", "unmapped") != "unmapped":
            out[node.name] = props["module@semmap"]
    return out


def confident_names(path):
    """Names of the nodes `semmap annotate` answered at or above CONFIDENT."""
    out = set()
    for node in all_nodes(onnx.load(path, load_external_data=False).graph):
        props = {p.key: p.value for p in node.metadata_props}
        if props.get("strategy@semmap", "unmapped") != "unmapped" and \
                float(props.get("confidence@semmap", "0")) >= CONFIDENT:
            out.add(node.name)
    return out


def kept_among(before, after, names):
    """How many of `names` mapped before survive with the module they had."""
    return sum(1 for name in names if name in before and name in after and after[name] == before[name])


def mapped_modules(binary, model, manifest):
    """Node name -> module (None when unmapped), from `semmap sidecar`."""
    args = [str(model), "--compact"] + (["--manifest", str(manifest)] if manifest else [])
    doc = json.loads(run(binary, "sidecar", *args))
    # The tools name some new nodes alike (ONNX Runtime's fusions leave ""):
    # only unique names identify a node.
    count = Counter(n["name"] for n in doc["nodes"])
    return {n["name"]: n["module"] for n in doc["nodes"] if count[n["name"]] == 1}


def compare(before, renamed, after):
    """(kept, surviving) over all mapped nodes, and over renamed nodes."""
    surviving = [name for name in before if name in after]
    kept = [name for name in surviving if after[name] == before[name]]
    surviving_renamed = [name for name in surviving if name in renamed]
    kept_renamed = [name for name in kept if name in renamed]
    lost = sorted(set(surviving) - set(kept))
    return (len(kept), len(surviving), len(kept_renamed), len(surviving_renamed), lost)


def main():
    logging.disable(logging.WARNING)
    warnings.filterwarnings("ignore")
    binary, fixtures = sys.argv[1], Path(sys.argv[2])
    failures = []
    total_kept = total_surviving = 0
    print(f"{'fixture':26} {'tool':17} {'manifest':8} {'mapped nodes kept':>17} "
          f"{'renamed kept':>17} {'unrenamed file':>17}")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for fixture, model_type in FIXTURES:
            d = fixtures / fixture
            original, manifest = d / "model.onnx", d / "manifest.json"
            annotated = tmp / f"{fixture}.annotated.onnx"
            report = json.loads(run(binary, "annotate", str(original), "--manifest", str(manifest),
                                    "-o", str(annotated), "--scoped-names", "--json"))
            check_annotated(original, annotated)
            # The same annotation without renaming, for comparison.
            plain = tmp / f"{fixture}.plain.onnx"
            run(binary, "annotate", str(original), "--manifest", str(manifest), "-o", str(plain))
            before = annotated_modules(annotated)
            plain_before = annotated_modules(plain)
            confident, plain_confident = confident_names(annotated), confident_names(plain)
            original_names = {n.name for n in all_nodes(onnx.load(original).graph)}
            renamed = {name for name in before if name not in original_names}
            assert len(renamed) == report["renamed"], f"{fixture}: renamed count"
            print(f"{fixture}: {report['nodes']} nodes, {report['renamed']} renamed, "
                  f"{report['scoped_names_kept']} already scoped; onnx.checker (full) and "
                  f"onnxruntime outputs ok")
            for tool in TOOLS:
                optimized = tmp / f"{fixture}.{tool}.onnx"
                run_tool(tool, annotated, optimized, model_type)
                plain_optimized = tmp / f"{fixture}.{tool}.plain.onnx"
                run_tool(tool, plain, plain_optimized, model_type)
                left = sum(len(n.metadata_props) for n in all_nodes(onnx.load(optimized).graph))
                for with_manifest in (True, False):
                    m = manifest if with_manifest else None
                    after = mapped_modules(binary, optimized, m)
                    summary = json.loads(run(binary, "map", str(optimized), "--json",
                                             *(["--manifest", str(m)] if m else [])))
                    kept, surviving, kept_r, surviving_r, lost = compare(before, renamed, after)
                    plain_after = mapped_modules(binary, plain_optimized, m)
                    p_kept, p_surviving, _, _, _ = compare(plain_before, set(), plain_after)
                    kept_c = kept_among(before, after, confident)
                    p_kept_c = kept_among(plain_before, plain_after, plain_confident)
                    total_kept += kept
                    total_surviving += surviving
                    share = kept / surviving if surviving else 1.0
                    share_r = kept_r / surviving_r if surviving_r else 1.0
                    share_p = p_kept / p_surviving if p_surviving else 1.0
                    mode = "yes" if with_manifest else "no"
                    print(f"{fixture:26} {tool:17} {mode:8} "
                          f"{kept:4}/{surviving:4} {100 * share:5.1f}% "
                          f"{kept_r:4}/{surviving_r:4} {100 * share_r:5.1f}% "
                          f"{p_kept:4}/{p_surviving:4} {100 * share_p:5.1f}%  "
                          f"(exact_scope {summary['strategies']['exact_scope']} of "
                          f"{summary['nodes']}; node metadata_props left: {left})")
                    case = f"{fixture} {tool} manifest={mode}"
                    if share_r < FLOOR_RENAMED:
                        failures.append(f"{case}: renamed {kept_r}/{surviving_r} below "
                                        f"{FLOOR_RENAMED:.0%}; lost: {lost[:5]}")
                    if share < FLOOR_MAPPED:
                        failures.append(f"{case}: {kept}/{surviving} below {FLOOR_MAPPED:.0%}; "
                                        f"lost: {lost[:5]}")
                    if kept_c < p_kept_c:
                        failures.append(f"{case}: {kept_c} confident answers kept, fewer than "
                                        f"{p_kept_c} without renaming")
    total = total_kept / total_surviving
    print(f"all cases: {total_kept}/{total_surviving} surviving mapped nodes keep their module "
          f"({100 * total:.2f}%)")
    if total < FLOOR_TOTAL:
        failures.append(f"all cases: {100 * total:.2f}% below {FLOOR_TOTAL:.0%}")
    if failures:
        sys.exit("\n".join(failures))
    print("ok: every fixture and tool at or above the floors")


if __name__ == "__main__":
    main()
