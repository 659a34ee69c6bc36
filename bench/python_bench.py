"""Times the semmap Python package on one model; prints one JSON line.

  python bench/python_bench.py MODEL.onnx MANIFEST.json [--repeat N]

load_s: semmap.load() (SemanticMapper::Open underneath, plus the binding).
iterate_first_s: the first pass over every Mapping reading node, op_type,
module, class_name, confidence and strategy (Python strings made on the
way and cached); iterate_s: the same pass once cached; iterate_bare_s: the
pass creating the Mapping objects alone; columns_s: the columns behind
to_pandas(). Each is the fastest of N rounds (the first pass: of N fresh
loads). Run with the Python that has semmap installed.
"""

from __future__ import annotations

import argparse
import json
import time

import semmap


def read_all(model: semmap.MappedModel) -> int:
    n = 0
    for m in model:
        m.node, m.op_type, m.module, m.class_name, m.confidence, m.strategy
        n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("manifest")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    best = {"load_s": float("inf"), "iterate_first_s": float("inf"), "iterate_s": float("inf"),
            "iterate_bare_s": float("inf"), "columns_s": float("inf")}
    nodes = 0
    for _ in range(max(1, args.repeat)):
        t0 = time.perf_counter()
        model = semmap.load(args.model, args.manifest)
        t1 = time.perf_counter()
        nodes = read_all(model)
        t2 = time.perf_counter()
        read_all(model)
        t3 = time.perf_counter()
        for _m in model:
            pass
        t4 = time.perf_counter()
        model._core.columns()
        t5 = time.perf_counter()
        for key, value in (("load_s", t1 - t0), ("iterate_first_s", t2 - t1),
                           ("iterate_s", t3 - t2), ("iterate_bare_s", t4 - t3),
                           ("columns_s", t5 - t4)):
            best[key] = min(best[key], value)
        del model
    print(json.dumps({"nodes": nodes, **{k: round(v, 6) for k, v in best.items()}}))


if __name__ == "__main__":
    main()
