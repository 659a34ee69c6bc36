#!/usr/bin/env python3
"""The provenance record through the real deployment tools.

Embeds the record into plain exports of the corpus (`semmap embed`), runs
each tool people process exports with (today's releases, .venv-current),
and checks for every output:
  - the record survives: the model-level metadata entry is byte for byte
    the one embedded;
  - `semmap map OUT --json` (no other file) uses it (provenance.record
    "used", or "source" where the tool left the graph as it was);
  - accuracy with the record alone, against the truth carried over from the
    export's truth as the corpus builder carries it (tools/corpus matching),
    beside what `--reference` to the export (with the manifest) gives.

  check_record_survival.py SEMMAP FIXTURES [--markdown] [--only NAME]

Exits 1 when a record is lost by a tool not listed in DROPS, or the file
maps fewer nodes right with it (used, or rejected by the checks) than with
`--reference` to the export. The absolute figures (docs/record.md) are reported,
not gated: the transfer's own limits show in both columns alike. --markdown prints the table of
docs/record.md instead of the per-file lines.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "corpus"))

from semmap_corpus.matching import matched_truth, positional_truth  # noqa: E402
from semmap_corpus.strip import strip_names  # noqa: E402

RECORD_KEY = "semmap.record"
# Plain exports of the torch 2.15 slice: a transformer from each exporter and
# a CNN (BatchNorm, fused by ORT into Conv).
# (The vision libraries' fixtures carry no weights: ONNX Runtime cannot run
# them.)
SOURCES = ["bert-seqcls.dynamo", "bert-seqcls.torchscript", "resnet-imgcls.dynamo",
           "llama-causal-lm.torchscript"]
# Tools known to drop model metadata, with the reason; none today.
DROPS: dict[str, str] = {}


RECORD_DOC_LINE = "semmap.record="


def record_of(model: onnx.ModelProto) -> str | None:
    """The record semmap reads from `model`: the model-level metadata entry,
    else its copy on a line of the graph's doc_string (kept by tools that
    rebuild the model and drop its metadata_props)."""
    values = [p.value for p in model.metadata_props if p.key == RECORD_KEY]
    if values:
        return values[-1]
    lines = [line[len(RECORD_DOC_LINE):] for line in model.graph.doc_string.split("\n")
             if line.startswith(RECORD_DOC_LINE)]
    return lines[-1] if lines else None


def feeds(path: Path) -> list[dict[str, np.ndarray]]:
    """A few inputs for calibration: small integers for integer inputs (ids,
    masks: ones), normal floats otherwise; unknown dimensions 1 (batch) or 8."""
    import onnxruntime as ort
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    out = []
    for _ in range(4):
        feed = {}
        for i in session.get_inputs():
            shape = [d if isinstance(d, int) and d > 0 else (1 if k == 0 else 8)
                     for k, d in enumerate(i.shape)]
            if "int" in i.type:
                dtype = np.int64 if "int64" in i.type else np.int32
                feed[i.name] = (np.ones(shape, dtype) if "mask" in i.name
                                else rng.integers(0, 10, shape).astype(dtype))
            elif "bool" in i.type:
                feed[i.name] = np.ones(shape, bool)
            else:
                dtype = np.float16 if "float16" in i.type else np.float32
                feed[i.name] = rng.standard_normal(shape).astype(dtype)
        out.append(feed)
    return out


# Each tool: (name, function(src, dest)).
def onnxslim_tool(src: Path, dest: Path) -> None:
    import onnxslim
    onnx.save(onnxslim.slim(onnx.load(str(src))), str(dest))


def ort_session(level: str) -> Callable[[Path, Path], None]:
    def run(src: Path, dest: Path) -> None:
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
        so.optimized_model_filepath = str(dest)
        ort.InferenceSession(str(src), so, providers=["CPUExecutionProvider"])
    return run


def ort_transformers(src: Path, dest: Path) -> None:
    from onnxruntime.transformers import optimizer
    optimizer.optimize_model(str(src), model_type="bert", num_heads=0, hidden_size=0).save_model_to_file(str(dest))


def quantize_dynamic(src: Path, dest: Path) -> None:
    from onnxruntime.quantization import quantize_dynamic as qd
    qd(str(src), str(dest))


def quantize_static_qdq(src: Path, dest: Path) -> None:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter(feeds(src))

        def get_next(self):  # type: ignore[no-untyped-def]
            return next(self.it, None)

    quantize_static(str(src), str(dest), Reader(), quant_format=QuantFormat.QDQ)


def matmul_nbits(src: Path, dest: Path) -> None:
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
    q = MatMulNBitsQuantizer(onnx.load(str(src)), block_size=16, is_symmetric=True)
    q.process()
    q.model.save_model_to_file(str(dest))


def fp16_converter_common(src: Path, dest: Path) -> None:
    from onnxconverter_common import float16
    onnx.save(float16.convert_float_to_float16(onnx.load(str(src)), keep_io_types=True), str(dest))


def fp16_ort(src: Path, dest: Path) -> None:
    from onnxruntime.transformers.float16 import convert_float_to_float16
    onnx.save(convert_float_to_float16(onnx.load(str(src)), keep_io_types=True), str(dest))


def onnxscript_optimizer(src: Path, dest: Path) -> None:
    import onnxscript.optimizer
    onnx.save(onnxscript.optimizer.optimize(onnx.load(str(src))), str(dest))


def version_converter(src: Path, dest: Path) -> None:
    from onnx import version_converter as vc
    model = onnx.load(str(src))
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    onnx.save(vc.convert_version(model, opset + 1), str(dest))


def strip(src: Path, dest: Path) -> None:
    """Node and value names replaced as the corpus strips them; the model's
    own metadata kept (the corpus's stripper removes it too: a tool that
    does takes the record with it, and the file maps as it would without)."""
    model = onnx.load(str(src))
    stripped = strip_names(model)
    stripped.metadata_props.extend(model.metadata_props)
    onnx.save(stripped, str(dest))


def external_data(src: Path, dest: Path) -> None:
    onnx.save(onnx.load(str(src)), str(dest), save_as_external_data=True, all_tensors_to_one_file=True,
              location=dest.name + ".data", size_threshold=0)


def chain(*steps: Callable[[Path, Path], None]) -> Callable[[Path, Path], None]:
    def run(src: Path, dest: Path) -> None:
        current = src
        for k, step in enumerate(steps):
            out = dest if k == len(steps) - 1 else dest.with_name(f"{dest.stem}.step{k}.onnx")
            step(current, out)
            current = out
    return run


TOOLS: list[tuple[str, Callable[[Path, Path], None]]] = [
    ("onnxslim", onnxslim_tool),
    ("ORT session, basic", ort_session("ORT_ENABLE_BASIC")),
    ("ORT session, extended", ort_session("ORT_ENABLE_EXTENDED")),
    ("ORT session, all", ort_session("ORT_ENABLE_ALL")),
    ("ORT transformer optimizer", ort_transformers),
    ("quantize_dynamic", quantize_dynamic),
    ("quantize_static (QDQ)", quantize_static_qdq),
    ("4-bit MatMulNBits", matmul_nbits),
    ("fp16 (onnxconverter-common)", fp16_converter_common),
    ("fp16 (ONNX Runtime)", fp16_ort),
    ("onnxscript optimizer", onnxscript_optimizer),
    ("ONNX version converter (+1 opset)", version_converter),
    ("names stripped", strip),
    ("saved with external data", external_data),
    ("onnxslim, then fp16", chain(onnxslim_tool, fp16_converter_common)),
    ("ORT extended, then quantize_dynamic", chain(ort_session("ORT_ENABLE_EXTENDED"), quantize_dynamic)),
    ("onnxslim, then 4-bit MatMulNBits", chain(onnxslim_tool, matmul_nbits)),
    ("names stripped, then onnxslim", chain(strip, onnxslim_tool)),
]


def owners_of(manifest: dict) -> dict[str, str]:
    out = {}
    for m in manifest["modules"]:
        for p in m.get("parameters", []) + m.get("buffers", []):
            out[f"{m['path']}.{p['name']}" if m["path"] else p["name"]] = m["path"]
    return out


def truth_for(name: str, dest: Path, processed: onnx.ModelProto, original: onnx.ModelProto, truth: dict,
              source: str, manifest: dict) -> dict:
    """The export's truth carried to `processed` as the corpus carries it: by
    position through a name stripping (the first step of a chain), by
    matching through the other tools."""
    if name.startswith("names stripped"):
        if ", then" not in name:
            return positional_truth(processed, original, truth, source)
        stripped = onnx.load(str(dest.with_name(f"{dest.stem}.step0.onnx")))
        truth = positional_truth(stripped, original, truth, source)
        original = stripped
    return matched_truth(processed, original, truth, source, in_place_fusions=True, owners=owners_of(manifest))


def answers_of(semmap: Path, model: Path, extra: list[str]) -> dict[str, str | None] | None:
    """Node id -> module path of `semmap sidecar` (None when semmap refuses)."""
    out = subprocess.run([str(semmap), "sidecar", str(model), "--compact", *extra], capture_output=True,
                         text=True, check=False)
    if out.returncode != 0:
        return None
    return answers_from_sidecar(out.stdout)


def answers_from_sidecar(text: str) -> dict[str, str | None]:
    """Node id -> module path of a `semmap sidecar` JSON text (also used by check_tool_zoo.py)."""
    return {n["id"]: n.get("module") for n in json.loads(text)["nodes"]}


def score(answers: dict[str, str | None] | None, truth: dict) -> tuple[int, int]:
    known = correct = 0
    for node, path in truth["nodes"].items():
        if path is None:
            continue
        known += 1
        correct += answers is not None and answers.get(node) == path
    return known, correct


def provenance_of(semmap: Path, model: Path) -> dict:
    mapped = subprocess.run([str(semmap), "map", str(model), "--json"], capture_output=True, text=True,
                            check=True)
    return json.loads(mapped.stdout)["provenance"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("semmap")
    ap.add_argument("fixtures")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--only", action="append", default=[], help="run only the tools whose name contains this")
    args = ap.parse_args()
    semmap = Path(args.semmap)
    fixtures = Path(args.fixtures) / "torch-2.15"
    failures: list[str] = []
    # files, kept, used, known, correct, tool failures, correct with --reference
    rows: dict[str, list] = {name: [0, 0, 0, 0, 0, "", 0] for name, _ in TOOLS}
    warnings.filterwarnings("ignore")
    with tempfile.TemporaryDirectory(prefix="semmap-survival-") as tmp:
        work = Path(tmp)
        for source in SOURCES:
            fixture = fixtures / source
            embedded = work / f"{source}.onnx"
            subprocess.run([str(semmap), "embed", str(fixture / "model.onnx"), "--manifest",
                            str(fixture / "manifest.json"), "-o", str(embedded)], check=True,
                           capture_output=True)
            original = onnx.load(str(embedded))
            record = record_of(original)
            assert record is not None
            truth = json.loads((fixture / "truth.json").read_text())
            manifest = json.loads((fixture / "manifest.json").read_text())
            for name, tool in TOOLS:
                if args.only and not any(o in name for o in args.only):
                    continue
                dest = work / f"{source}.{len(list(work.iterdir()))}.onnx"
                try:
                    tool(embedded, dest)
                except Exception as e:  # a tool that cannot process this model says so
                    rows[name][5] = f"{source}: {type(e).__name__}"
                    print(f"{source} / {name}: the tool failed: {type(e).__name__}: {str(e)[:200]}")
                    continue
                processed = onnx.load(str(dest), load_external_data=False)
                row = rows[name]
                row[0] += 1
                kept = record_of(processed) == record
                row[1] += kept
                if not kept:
                    if name not in DROPS:
                        failures.append(f"{source} / {name}: the record did not survive")
                    continue
                t = truth_for(name, dest, processed, original, truth, source, manifest)
                provenance = provenance_of(semmap, dest)
                known, correct = score(answers_of(semmap, dest, []), t)
                # What --reference to the export gives the same file, for comparison.
                _, with_reference = score(answers_of(semmap, dest, [
                    "--no-record", "--manifest", str(fixture / "manifest.json"),
                    "--reference", str(fixture / "model.onnx")]), t)
                used = provenance["record"] in ("used", "source")
                row[2] += used
                row[3] += known
                row[4] += correct
                row[6] += with_reference
                share = correct / known if known else 1.0
                print(f"{source} / {name}: record {provenance['record']}, {correct}/{known} "
                      f"({100 * share:.2f}%), with --reference {with_reference}")
                if correct < with_reference:
                    failures.append(f"{source} / {name}: {correct} right with the record, {with_reference} "
                                    "with --reference")
    if args.markdown:
        print("| tool | files | record survives | record used | nodes known | accuracy, record alone "
              "| accuracy, `--reference` |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, _ in TOOLS:
            files, kept, used, known, correct, note, with_reference = rows[name]
            acc = f"{100 * correct / known:.2f}%" if known else "–"
            ref = f"{100 * with_reference / known:.2f}%" if known else "–"
            print(f"| {name} | {files} | {kept} of {files} | {used} of {kept} | {known} | {acc} | {ref} |"
                  + (f" the tool failed on {note}" if note else ""))
    for f in failures:
        print(f"check_record_survival: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
