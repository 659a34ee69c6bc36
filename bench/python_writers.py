"""Loads one model with the semmap Python package and runs one writer;
prints one JSON line.

  python bench/python_writers.py MODEL.onnx MANIFEST.json WRITER OUT

WRITER is sidecar (MappedModel.write_sidecar to OUT), report
(MappedModel.report to OUT) or tree (MappedModel.tree(), the dicts built,
OUT unused). load_s: semmap.load(); write_s: the writer. scripts/bench-python
--writers runs it against the tool's `semmap sidecar`, `semmap report` and
`semmap tree --json` in the same run.
"""

from __future__ import annotations

import json
import sys
import time

import semmap


def main() -> None:
    model, manifest, writer, out = sys.argv[1:5]
    start = time.perf_counter()
    m = semmap.load(model, manifest=manifest)
    loaded = time.perf_counter()
    if writer == "sidecar":
        m.write_sidecar(out, allow_overwrite=True)
    elif writer == "report":
        m.report(out, allow_overwrite=True)
    elif writer == "tree":
        modules = len(m.tree()["modules"])
        assert modules > 0, "the tree has no module"
    else:
        sys.exit(f"python_writers: unknown writer {writer!r}")
    done = time.perf_counter()
    print(json.dumps({"writer": writer, "nodes": len(m), "load_s": round(loaded - start, 4),
                      "write_s": round(done - loaded, 4)}))


if __name__ == "__main__":
    main()
