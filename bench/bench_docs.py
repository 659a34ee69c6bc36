"""scripts/bench --update-docs: one run's figures written into the documents
that quote them, between `<!-- bench: begin NAME -->` and
`<!-- bench: end NAME -->` lines (the rest of each file is kept).

  README.md             summary   the paragraph of figures and targets
  docs/performance.md   figures   the run's printout and the targets' table

A document without its two lines is refused (nothing is written), so a
heading moved by hand cannot make the run write somewhere else.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

BLOCKS = {"README.md": "summary", "docs/performance.md": "figures"}


def _row(result: dict, synthetic: str, largest: bool = True) -> dict | None:
    rows = [r for r in result["results"] if r["synthetic"] == synthetic and r["case"] != "big"]
    if not rows:
        return None
    return (max if largest else min)(rows, key=lambda r: r["nodes"])


def _target(result: dict, start: str) -> dict | None:
    return next((t for t in result["targets"] if t["target"].startswith(start)), None)


def _num(v, spec: str = ".2f") -> str:
    return "?" if v is None else format(v, spec)


def _state(t: dict | None) -> str:
    if t is None or t["met"] is None:
        return "not measured"
    return "met" if t["met"] else "missed"


def summary(result: dict, command: str) -> str:
    """README's paragraph: each target's figure and whether it is met."""
    big, small = _row(result, "llama"), _row(result, "llama", largest=False)
    fwd, moe = _row(result, "forward"), _row(result, "moe")
    heavy = next((r for r in result["results"] if r["case"] == "big"), None)
    rec = result["record"][-1] if result.get("record") else None
    t = {k: _target(result, k) for k in ("speed-up", "semmap map --json", "us per node",
                                          "peak RSS / model", "manifest alone", "map step",
                                          "record / plain, time", "record / plain, peak",
                                          "reference / plain, time", "embed / plain",
                                          "record, time growth")}
    load = result["machine"].get("load_average") or []
    parts = [
        f"Speed and memory (`{command}`, a {big['nodes']:,}-node {big['file_mb']:.0f} MB synthetic "
        f"Llama-shaped export, {result['machine']['nproc']} cores at load average "
        f"{_num(load[0] if load else None, '.1f')}, against a naive Python baseline in the same "
        f"run): load + manifest + map {_num(big['ratio'], '.1f')}× faster than the baseline "
        f"({big['total_s']:.2f} s; goal 10×, long-run 20×: {_state(t['speed-up'])}), the whole "
        f"`semmap map --json` process {_num(big.get('process_ratio'), '.1f')}× faster than the "
        f"baseline script's ({_num(big.get('tool_map_json_s'))} s; goal 8×: "
        f"{_state(t['semmap map --json'])}), µs per node at {big['nodes']:,} "
        f"{_num(t['us per node']['measured'] if t['us per node'] else None)}× that at "
        f"{small['nodes']:,} (goal 1.3×: {_state(t['us per node'])}), peak memory "
        f"{_num(t['peak RSS / model']['measured'] if t['peak RSS / model'] else None)}× the file "
        f"({big['peak_rss_mb']:.0f} MB; goal 2×: {_state(t['peak RSS / model'])}), the manifest "
        f"alone {_num(t['manifest alone']['measured'] if t['manifest alone'] else None)}× its "
        f"JSON (goal 2×: {_state(t['manifest alone'])})"]
    if heavy:
        parts[-1] += (f"; a file with {heavy['file_mb'] / 1024:.1f} GB of weights maps in "
                      f"{heavy['peak_rss_mb']:.0f} MB ({heavy['rss_pct_of_file']:.0f} % of the file)")
    parts[-1] += "."
    if fwd:
        parts.append(f"A schema 2 manifest (forward signatures) makes the map step "
                     f"{_num(fwd.get('map_vs_schema1'))}× as long (goal ≤ 1.2×: "
                     f"{_state(t['map step'])}).")
    if moe:
        parts.append(f"A mixture of experts of {moe['nodes']:,} nodes and {moe['modules']:,} "
                     f"modules maps at {moe['us_per_node']:.2f} µs a node (the Llama shape "
                     f"{big['us_per_node']:.2f}).")
    if rec:
        parts.append(
            f"A copy whose nodes lost their names maps from its record alone in "
            f"{rec['record_s']:.1f} s at {rec['nodes']:,} nodes, "
            f"{rec['record_over_plain_s']:.1f}× the plain export (goal 1.5×: "
            f"{_state(t['record / plain, time'])}) and {rec['record_over_stripped_s']:.1f}× the same "
            f"copy with its manifest file, at {rec['record_mb']:.0f} MB "
            f"({rec['record_over_plain_mb']:.1f}× the plain map; goal 1.5×: "
            f"{_state(t['record / plain, peak'])}); with `--reference` {rec['reference_s']:.1f} s "
            f"({rec['reference_over_plain_s']:.1f}×: {_state(t['reference / plain, time'])}); "
            f"`semmap embed` {rec['embed_over_plain_s']:.1f}× the plain map (goal 1.5×: "
            f"{_state(t['embed / plain'])}).")
    return _wrap(" ".join(parts))


def figures(result: dict, printed: str, command: str) -> str:
    """docs/performance.md's block: the printout and the targets' table."""
    m = result["machine"]
    load = ", ".join(str(x) for x in (m.get("load_average") or [])) or "unknown"
    lines = [_wrap(f"One run of `{command}` on {m['nproc']} cores ({m['cpu']}, {m['mem_gb']} GB), "
                   f"load average {load} at its end; read the ratios rather than the seconds. "
                   "Written by the run itself (`--update-docs`)."),
             "",
             "<!-- doctest: skip benchmark figures of one run on one machine; scripts/bench "
             "prints them -->",
             "```"]
    lines += printed.rstrip("\n").splitlines()
    lines += ["```", "", "| target (largest size) | goal | measured | |", "|---|---|---:|---|"]
    for t in result["targets"]:
        lines.append(f"| {t['target']} | {t['goal'].replace('>=', '≥').replace('<=', '≤')} "
                     f"| {_num(t['measured'], '.3g')} | {_state(t)} |")
    return "\n".join(lines)


def _wrap(text: str, width: int = 76) -> str:
    out, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            out.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join(out + [line])


def _replace(text: str, name: str, body: str, where: str) -> str:
    pattern = re.compile(rf"(<!-- bench: begin {name} -->\n)(.*?)(<!-- bench: end {name} -->)",
                         re.DOTALL)
    if len(pattern.findall(text)) != 1:
        raise SystemExit(f"bench: {where} needs exactly one pair of '<!-- bench: begin {name} -->' "
                         f"and '<!-- bench: end {name} -->' lines; nothing was written")
    return pattern.sub(lambda m: m.group(1) + body.rstrip("\n") + "\n" + m.group(3), text)


def update(root: Path, result: dict, printed: str, argv: list[str]) -> list[Path]:
    """Writes both documents (each replaced whole once both are ready)."""
    command = " ".join(["scripts/bench"] + [a for a in argv if a != "--update-docs"])
    bodies = {"summary": summary(result, command), "figures": figures(result, printed, command)}
    new = {}
    for rel, name in BLOCKS.items():
        path = root / rel
        new[path] = _replace(path.read_text(encoding="utf-8"), name, bodies[name], rel)
    for path, text in new.items():
        tmp = path.with_name(f".{path.name}.bench-tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    return list(new)
