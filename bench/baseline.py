"""The naive Python way to map ONNX nodes to modules, as a baseline for semmap.

  python bench/baseline.py MODEL.onnx MANIFEST.json

onnx.load() the whole model, json.load() the manifest, then for every node
split its name on '/', join the scope segments with '.', and look the module
up in a dict of the manifest's modules. Prints one JSON line with the time of
each step and the peak RSS. Needs the onnx package (the repo's .venv).
"""
from __future__ import annotations

import json
import resource
import sys
import time


def peak_rss_mb() -> float:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> int:
    model_path, manifest_path = sys.argv[1], sys.argv[2]
    import onnx  # noqa: PLC0415  (timed apart from the import)

    t0 = time.perf_counter()
    model = onnx.load(model_path)
    t1 = time.perf_counter()
    with open(manifest_path) as f:
        manifest = json.load(f)
    modules = {m["path"]: m for m in manifest["modules"]}
    t2 = time.perf_counter()
    mapped = 0
    nodes = 0
    for node in model.graph.node:
        nodes += 1
        name = node.name
        if not name.startswith("/"):
            continue
        segments = name.split("/")[1:-1]
        module = modules.get(".".join(segments))
        if module is not None:
            mapped += 1
    t3 = time.perf_counter()
    print(json.dumps({
        "nodes": nodes,
        "mapped": mapped,
        "load_s": t1 - t0,
        "manifest_s": t2 - t1,
        "map_s": t3 - t2,
        "total_s": t3 - t0,
        "peak_rss_mb": peak_rss_mb(),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
