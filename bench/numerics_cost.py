"""What semmap.compare_numerics costs against running the two files (issue 50's cost
target): time and peak memory of whole processes, alternating, in one run.

  PY bench/numerics_cost.py [--torch-python PY] [--samples 16] [--tokens 128]
                            [--repeat 3] [--layers 6] [--keep DIR] [--json]

The model: a BertForSequenceClassification built from its configuration (6
layers, hidden 384, 6 heads, intermediate 1536, BERT's vocabulary; seeded
weights), exported with torch.onnx.export (TorchScript) and its manifest written
by --torch-python (default: the repo's .venv-current) with python/ on its path,
and its deployed copy made by ONNX Runtime's quantize_dynamic. Inputs: --samples
samples of --tokens tokens, seeded, in one .npz per sample that every child reads.

In fresh processes of PY (a Python with the semmap wheel, onnxruntime and numpy),
alternating, --repeat times each, the median of:
  plain      both files in ONNX Runtime sessions (from their paths, as deployed),
             every sample run through each: the baseline
  compare    semmap.compare_numerics(export, copy, manifest=..., inputs=...), the
             defaults (isolated run, 512 MiB capture budget)
  no-isolate the same with isolate=False
  impact     the same with impact=6 (the repaired runs of --suggest-float 2)
Printed: wall time and peak RSS of each process, the compare's own figure of
"capture and compare" against "plain inference of both" (cost in its JSON),
and the peak against the baseline's peak plus the largest module's boundary
outputs for one sample (the target), met or missed. Nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

BUILD = r'''
import sys, torch, transformers
from semmap.manifest._export import export_onnx
from semmap.manifest._build import write_manifest
out, layers, tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.manual_seed(0)
cfg = transformers.BertConfig(num_hidden_layers=layers, hidden_size=384, num_attention_heads=6,
                              intermediate_size=1536, vocab_size=30522, num_labels=2)
m = transformers.BertForSequenceClassification(cfg).eval()
inputs = {"input_ids": torch.randint(0, 30522, (1, tokens)),
          "attention_mask": torch.ones(1, tokens, dtype=torch.long)}
export_onnx(m, inputs, out + "/model.onnx", exporter="torchscript")
write_manifest(m, out + "/manifest.json", inputs=inputs)
from onnxruntime.quantization import quantize_dynamic
quantize_dynamic(out + "/model.onnx", out + "/model.int8.onnx")
'''

# The children: each prints one JSON line.
PLAIN = r'''
import json, sys, time, resource
import numpy as np, onnxruntime as ort
ref, dep, *npz = sys.argv[1:]
samples = [dict(np.load(p)) for p in npz]
t = time.perf_counter()
o = ort.SessionOptions()
sessions = [ort.InferenceSession(p, o, providers=["CPUExecutionProvider"]) for p in (ref, dep)]
loaded = time.perf_counter() - t
t = time.perf_counter()
for s in sessions:
    names = [i.name for i in s.get_inputs()]
    for x in samples:
        s.run(None, {k: x[k] for k in names})
print(json.dumps({"sessions": loaded, "runs": time.perf_counter() - t,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
'''

COMPARE = r'''
import json, sys, resource
import numpy as np, semmap
ref, dep, manifest, options, *npz = sys.argv[1:]
r = semmap.compare_numerics(ref, dep, manifest=manifest, inputs=list(npz), **json.loads(options))
d = r.to_dict()
largest = 0
for row in d["views"]["leaf"]:
    size = sum(int(np.prod(o["shape"])) * 4 for o in row["outputs"] if o.get("shape"))
    largest = max(largest, size)
print(json.dumps({"cost": d["cost"], "final_error": d["final_error"], "largest_module_outputs": largest,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
'''

CASES = {
    "compare": {},
    "no-isolate": {"isolate": False},
    "impact": {"impact": 6},
}


def child(py: str, code: str, argv: list[str]) -> tuple[float, dict]:
    start = time.perf_counter()
    proc = subprocess.run([py, "-c", code, *argv], capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"numerics_cost: a child failed:\n{proc.stderr[-3000:]}")
    return wall, json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--torch-python", default=str(ROOT / ".venv-current" / "bin" / "python"))
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", default="", help="build the model in (or reuse it from) this directory")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    import numpy as np

    work = Path(args.keep or tempfile.mkdtemp(prefix="semmap-numerics-cost-"))
    work.mkdir(parents=True, exist_ok=True)
    ref, dep, manifest = work / "model.onnx", work / "model.int8.onnx", work / "manifest.json"
    if not (ref.exists() and dep.exists() and manifest.exists()):
        env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
        subprocess.run([args.torch_python, "-c", BUILD, str(work), str(args.layers), str(args.tokens)],
                       check=True, env=env, capture_output=True)
    rng = np.random.default_rng(0)
    npz = []
    for n in range(args.samples):
        p = work / f"sample{n}.npz"
        np.savez(p, input_ids=rng.integers(0, 30522, (1, args.tokens), dtype=np.int64),
                 attention_mask=np.ones((1, args.tokens), np.int64))
        npz.append(str(p))
    py = sys.executable
    runs: dict[str, list[tuple[float, dict]]] = {k: [] for k in ["plain", *CASES]}
    for _ in range(args.repeat):
        runs["plain"].append(child(py, PLAIN, [str(ref), str(dep), *npz]))
        for name, options in CASES.items():
            runs[name].append(child(py, COMPARE, [str(ref), str(dep), str(manifest), json.dumps(options), *npz]))
    med = {k: {"wall_s": statistics.median(w for w, _ in v), "peak_mb": statistics.median(r["peak_mb"] for _, r in v)}
           for k, v in runs.items()}
    plain = runs["plain"][0][1]
    base_peak = med["plain"]["peak_mb"]
    rows = []
    for name in CASES:
        results = [r for _, r in runs[name]]
        largest_mb = results[0]["largest_module_outputs"] / 2**20
        ratio = statistics.median(r["cost"]["ratio_to_plain_inference"] for r in results)
        target = base_peak + largest_mb
        rows.append({"case": name, **med[name], "capture_and_compare_vs_plain_inference": ratio,
                     "largest_module_outputs_mb": largest_mb, "peak_target_mb": target,
                     "peak_vs_target": med[name]["peak_mb"] / target,
                     "peak_met": med[name]["peak_mb"] <= target, "cost_met": ratio <= 3.0})
    load = os.getloadavg()[0]
    if args.json:
        print(json.dumps({"plain": med["plain"], "plain_runs_s": plain["runs"], "cases": rows,
                          "model_mb": ref.stat().st_size / 2**20, "deployed_mb": dep.stat().st_size / 2**20,
                          "samples": args.samples, "tokens": args.tokens, "load": load}, indent=2))
        return 0
    print(f"model: BertForSequenceClassification, {args.layers} layers, hidden 384 "
          f"({ref.stat().st_size / 2**20:.0f} MB; quantize_dynamic copy {dep.stat().st_size / 2**20:.0f} MB), "
          f"{args.samples} samples of {args.tokens} tokens, median of {args.repeat}, load {load:.1f}")
    print(f"plain (both files, sessions and runs): {med['plain']['wall_s']:.2f} s, peak {base_peak:.0f} MB")
    print(f"{'case':<11} {'wall s':>7} {'peak MB':>8} {'target MB':>10} {'peak/target':>12} "
          f"{'capture+compare / plain inference':>34}")
    for r in rows:
        print(f"{r['case']:<11} {r['wall_s']:>7.2f} {r['peak_mb']:>8.0f} {r['peak_target_mb']:>10.0f} "
              f"{r['peak_vs_target']:>11.2f}× {r['capture_and_compare_vs_plain_inference']:>33.2f}×  "
              f"peak {'met' if r['peak_met'] else 'missed'}, cost {'met' if r['cost_met'] else 'missed'}")
    print("target: peak <= the plain process's peak + the largest module's boundary outputs for one sample; "
          "capture and compare <= 3x the plain inference of both")
    return 0


if __name__ == "__main__":
    sys.exit(main())
