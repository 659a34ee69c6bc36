"""The record and reference cases of the benchmark (scripts/bench's `record`
synthetic and scripts/bench-record): what it costs to map a copy that
carries its provenance record, or with its export beside it, against a
plain map of the export. Standard library only (and onnx in the Python
that writes the stripped copy).

For one size: a synthetic Llama-shaped model and its manifest
(bench/semmap_synth, weightless: the case where the record weighs most
against the file), the record embedded (`semmap embed`), and a copy of the
embedded file whose nodes lost their names and node metadata
(bench/strip_names.py: the copy a renaming tool leaves, which only the
record or the export can map). Then, in fresh processes, alternating, the
median wall time and peak RSS of `repeat` runs of:
  plain       `semmap map MODEL --manifest M --json` (the export, its names)
  stripped    `semmap map STRIPPED --manifest M --no-record --json` (the
              copy with its manifest file: what its own names say)
  record      `semmap map STRIPPED --json` (the copy alone: its record read,
              checked, paired with its graph and carried over)
  reference   `semmap map STRIPPED --manifest M --reference MODEL
              --no-record --json` (the same with the export beside it)
  embed       `semmap embed MODEL --manifest M -o OUT`
and the phases of the plain, record and reference maps
(`semmap_bench --open`, the fastest of `repeat` rounds: the mapper's own
phases, side-by-side ones overlapping).
"""
from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = ("plain", "stripped", "record", "reference", "embed")
PHASE_CASES = ("plain", "record", "reference")
# (figure, op, goal): judged on the largest size.
TARGETS = (
    ("record / plain, time", "<=", 1.5),
    ("record / plain, peak RSS", "<=", 1.5),
    ("reference / plain, time", "<=", 1.5),
    ("reference / plain, peak RSS", "<=", 1.5),
    ("embed / plain, time", "<=", 1.5),
    ("record, time growth per doubling (largest step)", "<=", 2.3),
)


def run(cmd: list[str]) -> tuple[float, float]:
    """Wall time in seconds and peak RSS in MB of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({code}): {err[-300:]}")
    return elapsed, usage.ru_maxrss / 1024.0


def run_json(cmd: list[str]) -> dict:
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {out.returncode}: {out.stderr.strip()[-300:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def prepare(semmap: str, synth: str, python: str, work: Path, nodes: int) -> dict:
    """Writes the model, its manifest, the embedded file and its stripped
    copy into `work`; their paths and what embed reported."""
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run([synth, "--nodes", str(nodes), str(work)], check=True, stdout=subprocess.DEVNULL)
    files = {k: str(work / f) for k, f in (("model", "model.onnx"), ("manifest", "manifest.json"),
                                           ("embedded", "embedded.onnx"),
                                           ("stripped", "stripped.onnx"), ("scratch", "out.onnx"))}
    out = subprocess.run([semmap, "embed", files["model"], "--manifest", files["manifest"], "-o",
                          files["embedded"], "--json"], check=True, capture_output=True, text=True)
    files["embed_info"] = json.loads(out.stdout)
    subprocess.run([python, str(ROOT / "bench" / "strip_names.py"), files["embedded"],
                    files["stripped"]], check=True)
    return files


def commands(semmap: str, f: dict) -> dict:
    model, manifest, stripped = f["model"], f["manifest"], f["stripped"]
    return {
        "plain": [semmap, "map", model, "--manifest", manifest, "--json"],
        "stripped": [semmap, "map", stripped, "--manifest", manifest, "--no-record", "--json"],
        "record": [semmap, "map", stripped, "--json"],
        "reference": [semmap, "map", stripped, "--manifest", manifest, "--reference", model,
                      "--no-record", "--json"],
        "embed": [semmap, "embed", model, "--manifest", manifest, "-o", f["scratch"]],
    }


def phase_commands(bench: str, f: dict, repeat: int) -> dict:
    model, manifest, stripped = f["model"], f["manifest"], f["stripped"]
    rounds = ["--repeat", str(repeat)]
    return {
        "plain": [bench, "--open", model, manifest] + rounds,
        "record": [bench, "--open", stripped, "-"] + rounds,
        "reference": [bench, "--open", stripped, manifest, "--reference", model,
                      "--no-record"] + rounds,
    }


def measure(semmap: str, bench: str | None, files: dict, repeat: int) -> dict:
    """One size's row: per case the median time and peak RSS, the ratios,
    and (with `bench`) each map's phases."""
    cmds = commands(semmap, files)
    samples = {case: [] for case in CASES}
    for _ in range(repeat):
        for case in CASES:
            samples[case].append(run(cmds[case]))
            if case == "embed":
                os.remove(files["scratch"])
    info = files["embed_info"]
    row = {"nodes": info["nodes"], "file_bytes": os.path.getsize(files["model"]),
           "record_bytes": info["record_bytes"]}
    for case in CASES:
        row[f"{case}_s"] = statistics.median(s for s, _ in samples[case])
        row[f"{case}_mb"] = statistics.median(m for _, m in samples[case])
    for case in ("record", "reference", "embed", "stripped"):
        row[f"{case}_over_plain_s"] = row[f"{case}_s"] / row["plain_s"]
        row[f"{case}_over_plain_mb"] = row[f"{case}_mb"] / row["plain_mb"]
    for case in ("record", "reference"):
        row[f"{case}_over_stripped_s"] = row[f"{case}_s"] / row["stripped_s"]
        row[f"{case}_over_stripped_mb"] = row[f"{case}_mb"] / row["stripped_mb"]
    if bench:
        row["phases"] = {}
        for case, cmd in phase_commands(bench, files, repeat).items():
            opened = run_json(cmd)
            row["phases"][case] = {"open_s": opened["open_s"], "write_s": opened["write_s"],
                                   "record": opened["record"], "mapped": opened["mapped"],
                                   "steps": opened["phases"]}
    return row


def growth(rows: list[dict]) -> list[float]:
    """The record path's time per doubling of the node count, whatever the
    sizes' spacing."""
    return [(b["record_s"] / a["record_s"]) ** (1 / math.log2(b["nodes"] / a["nodes"]))
            for a, b in zip(rows, rows[1:]) if b["nodes"] > a["nodes"]]


def targets(rows: list[dict]) -> list[dict]:
    last, steps = rows[-1], growth(rows)
    figures = {
        "record / plain, time": last["record_over_plain_s"],
        "record / plain, peak RSS": last["record_over_plain_mb"],
        "reference / plain, time": last["reference_over_plain_s"],
        "reference / plain, peak RSS": last["reference_over_plain_mb"],
        "embed / plain, time": last["embed_over_plain_s"],
        "record, time growth per doubling (largest step)": steps[-1] if steps else None,
    }
    out = []
    for name, op, goal in TARGETS:
        value = figures[name]
        met = None if value is None else (value <= goal if op == "<=" else value >= goal)
        out.append({"target": name, "nodes": last["nodes"], "goal": f"{op} {goal}",
                    "measured": None if value is None else round(value, 3), "met": met})
    return out


def markdown(rows: list[dict]) -> list[str]:
    """The record's size per node, and each case against the plain map."""
    lines = ["| nodes | file | record | bytes per node | record / file |",
             "|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['nodes']:,} | {r['file_bytes'] / 1e6:.1f} MB "
                     f"| {r['record_bytes'] / 1e6:.2f} MB | {r['record_bytes'] / r['nodes']:.1f} "
                     f"| {100 * r['record_bytes'] / r['file_bytes']:.1f} % |")
    lines += ["", "| nodes | plain | stripped, manifest | record | reference | embed "
              "| record / plain | reference / plain | record / stripped |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        def cell(c: str) -> str:
            return f"{r[c + '_s']:.2f} s, {r[c + '_mb']:.0f} MB"
        lines.append(f"| {r['nodes']:,} | {cell('plain')} | {cell('stripped')} | {cell('record')} "
                     f"| {cell('reference')} | {cell('embed')} "
                     f"| {r['record_over_plain_s']:.2f}×, {r['record_over_plain_mb']:.2f}× "
                     f"| {r['reference_over_plain_s']:.2f}×, {r['reference_over_plain_mb']:.2f}× "
                     f"| {r['record_over_stripped_s']:.2f}×, {r['record_over_stripped_mb']:.2f}× |")
    return lines


def wrapped_phases(head: str, steps: list, width: int = 110) -> list[str]:
    """`head` then the phases (name and seconds; those under half a
    millisecond left out), wrapped at `width` under an indent."""
    lines, line = [], head
    for name, seconds in steps:
        if seconds < 0.0005:
            continue
        item = f"{name} {seconds:.3f};"
        if len(line) + 1 + len(item) > width and line.strip():
            lines.append(line)
            line = " " * 12 + item
        else:
            line = f"{line} {item}"
    return lines + [line.rstrip(";")]


def phase_lines(rows: list[dict]) -> list[str]:
    """Per size and map, Open's time and each phase's, in the order they
    ended."""
    lines = []
    for r in rows:
        for case, p in r.get("phases", {}).items():
            lines += wrapped_phases(f"{r['nodes']:>8} {case:>9}: Open {p['open_s']:.3f} s, write "
                                    f"{p['write_s']:.3f} s (record {p['record']}):", p["steps"])
    return lines
