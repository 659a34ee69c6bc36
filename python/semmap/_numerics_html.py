"""The HTML page of a "semmap.numerics" document (NumericsReport.write_html): one
self-contained file, no script, an inline SVG plot of the error along the model
(leaf modules in graph order) with the worst modules marked, and the tables."""

from __future__ import annotations

import html
import math
from typing import Any

from ._numerics_doc import ranking_score

WIDTH, HEIGHT = 960, 320
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 30, 40  # the rank marks sit above TOP
FLOOR = 1e-8  # errors below it sit on the plot's floor (identical values)


def _num(x: Any) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        if math.isinf(x):
            return "inf"
        if x == 0:
            return "0"
        return f"{x:.3g}" if abs(x) >= 1e-3 else f"{x:.2e}"
    return str(x)


def _y(value: float, lo: float, hi: float) -> float:
    v = math.log10(max(value, FLOOR))
    span = hi - lo or 1.0
    return TOP + (HEIGHT - TOP - BOTTOM) * (1 - (v - lo) / span)


def _plot(rows: list[dict[str, Any]], top: int, by: str) -> str:
    """The leaf modules in graph order: a bar for what each is ranked by (its local
    or added error), the line of its output's error."""
    points = [r for r in sorted(rows, key=lambda r: r["order"]) if r["output_error"] is not None]
    if not points:
        return "<p>No module has a paired boundary output.</p>"
    worst = {r["module"] for r in sorted((r for r in rows if r["rank"] is not None),
                                         key=lambda r: r["rank"])[:top]}
    values = [r["output_error"]["rel_l2"] for r in points] + [max(ranking_score(r, by), 0) for r in points]
    finite = [v for v in values if v and math.isfinite(v)]
    lo = math.floor(math.log10(max(min(finite), FLOOR))) if finite else -8
    hi = math.ceil(math.log10(max(finite))) if finite else 0
    if hi <= lo:
        hi = lo + 1
    n = len(points)
    step = (WIDTH - LEFT - RIGHT) / max(1, n)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="error by module">']
    for e in range(lo, hi + 1):
        y = _y(10.0 ** e, lo, hi)
        parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" class="tick" text-anchor="end">1e{e}</text>')
    base = _y(10.0 ** lo, lo, hi)
    line = []
    for i, r in enumerate(points):
        x = LEFT + step * (i + 0.5)
        added = max(ranking_score(r, by), 0.0)
        own = f"local {_num(r['local_error']['rel_l2'])}, " if "local_error" in r else ""
        label = html.escape(f"{r['module'] or '<root>'} ({r['class']}): {own}added {_num(r['added_error'])}, "
                            f"output rel L2 {_num(r['output_error']['rel_l2'])}")
        cls = "bar worst" if r["module"] in worst else "bar"
        if added > 0:
            y = _y(added, lo, hi)
            parts.append(f'<rect x="{x - step * 0.4:.1f}" y="{y:.1f}" width="{max(step * 0.8, 1):.1f}" '
                         f'height="{max(base - y, 0.5):.1f}" class="{cls}"><title>{label}</title></rect>')
        line.append(f"{x:.1f},{_y(r['output_error']['rel_l2'], lo, hi):.1f}")
        if r["module"] in worst:
            parts.append(f'<text x="{x:.1f}" y="{TOP - 10}" class="mark" text-anchor="middle">{r["rank"]}</text>')
    parts.append(f'<polyline points="{" ".join(line)}" class="out"/>')
    parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{base:.1f}" y2="{base:.1f}" class="axis"/>')
    parts.append(f'<text x="{LEFT}" y="{HEIGHT - 12}" class="tick">input</text>')
    parts.append(f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 12}" class="tick" text-anchor="end">output</text>')
    parts.append(f'<text x="{(WIDTH + LEFT) / 2:.0f}" y="{HEIGHT - 12}" class="tick" text-anchor="middle">'
                 f'{n} modules in graph order (leaf view)</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _table(rows: list[dict[str, Any]], top: int, local_column: bool) -> str:
    ranked = [r for r in rows if r["rank"] is not None][:top]
    if not ranked:
        return "<p>No module has a paired boundary output.</p>"
    head = ("<tr><th>#</th><th>module</th><th>class</th><th>added</th><th>output rel L2</th>"
            "<th>input rel L2</th>" + ("<th>local rel L2</th>" if local_column else "") +
            "<th>SQNR dB</th><th>cosine</th><th>max abs</th></tr>")
    body = []
    for r in ranked:
        e = r["output_error"]
        local = r.get("local_error", {}).get("rel_l2")
        flag = ' class="nonfinite"' if r.get("introduces_nonfinite") else ""
        fused = f" <small>(+ {html.escape(', '.join(r['fused']))})</small>" if r.get("fused") else ""
        sqnr = "identical" if e["sqnr_db"] is None else f"{e['sqnr_db']:.1f}"
        body.append(
            f"<tr{flag}><td>{r['rank']}</td><td><code>{html.escape(r['module'] or '<root>')}</code>{fused}</td>"
            f"<td>{html.escape(r['class'])}</td><td>{_num(r['added_error'])}</td><td>{_num(e['rel_l2'])}</td>"
            f"<td>{_num(r['input_error'])}</td>" + (f"<td>{_num(local)}</td>" if local_column else "") +
            f"<td>{sqnr}</td>"
            f"<td>{e['cosine']:.6f}</td><td>{_num(e['max_abs'])}</td></tr>")
    return f"<table>{head}{''.join(body)}</table>"


CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
table { border-collapse: collapse; font-size: 13px; }
td, th { padding: 3px 8px; border-bottom: 1px solid #ddd; text-align: right; white-space: nowrap; }
td:nth-child(2), th:nth-child(2), td:nth-child(3), th:nth-child(3) { text-align: left; }
tr.nonfinite { background: #fde2e2; }
.grid { stroke: #eee; } .axis { stroke: #999; } .tick { font-size: 11px; fill: #666; }
.bar { fill: #8fb3d9; } .bar.worst { fill: #d62728; } .out { fill: none; stroke: #555; stroke-width: 1.2; }
.mark { font-size: 11px; fill: #d62728; font-weight: bold; }
.legend span { display: inline-block; width: 12px; height: 12px; margin: 0 4px -2px 12px; }
dl { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; }
dt { color: #666; }
"""


def page(doc: dict[str, Any], top: int = 10) -> str:
    ref, dep = doc["reference"], doc["deployed"]
    outputs = "".join(
        f"<li><code>{html.escape(o['reference'])}</code>: rel L2 {_num(o.get('rel_l2'))}, "
        f"cosine {_num(o.get('cosine'))}, max abs {_num(o.get('max_abs'))}</li>" for o in doc["outputs"])
    leaf, subtree = doc["views"]["leaf"], doc["views"]["subtree"]
    unpaired = "".join(
        f"<tr><td>{u['view']}</td><td><code>{html.escape(u['module'] or '<root>')}</code></td><td>{u['side']}</td>"
        f"<td><code>{html.escape(u['value'])}</code></td><td>{html.escape(u['reason'])}</td></tr>"
        for u in doc["unpaired"])
    cost = doc.get("cost", {})
    p = doc["pairing"]
    by = doc["ranked_by"]["leaf"]
    bar_what = ("error the module makes on its own (its output with the reference's inputs fed)"
                if by == "local" else "error the module adds")
    leaf_title = ("Modules by the error they make on their own" if by == "local"
                  else "Modules by the error they add")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>semmap compare-numerics</title>
<style>{CSS}</style></head><body>
<h1>Which module hurts accuracy</h1>
<dl>
<dt>reference</dt><dd><code>{html.escape(ref['path'])}</code> ({ref['nodes']} nodes)</dd>
<dt>deployed</dt><dd><code>{html.escape(dep['path'])}</code> ({dep['nodes']} nodes)</dd>
<dt>inputs</dt><dd>{html.escape(doc['inputs']['note'])}</dd>
<dt>provider</dt><dd>{html.escape(doc['provider'])}</dd>
<dt>final error</dt><dd>{_num(doc['final_error'])} (largest relative L2 error of the outputs)</dd>
<dt>paired</dt><dd>leaf view {p['leaf']['paired']} of {p['leaf']['with_boundary_outputs']} modules,
subtree view {p['subtree']['paired']} of {p['subtree']['with_boundary_outputs']}</dd>
<dt>cost</dt><dd>capture and compare {_num(cost.get('capture_and_compare'))} s, plain inference of both
{_num(cost.get('plain_inference'))} s</dd>
</dl>
<ul>{outputs}</ul>
<h2>Error along the model</h2>
<p class="legend"><span style="background:#8fb3d9"></span>{bar_what}
<span style="background:#d62728"></span>the {top} first in the ranking (numbered by rank)
<span style="background:#555;height:2px"></span>error of its output (relative L2, log scale)</p>
{_plot(leaf, top, by)}
<h2>{leaf_title} (leaf view: each module's own nodes)</h2>
{_table(leaf, top, True)}
<h2>Subtrees by the error they add (a module with everything below it)</h2>
{_table(subtree, top, False)}
<details><summary>{len(doc['unpaired'])} values not paired, with the reason</summary>
<table><tr><th>view</th><th>module</th><th>side</th><th>value</th><th>reason</th></tr>{unpaired}</table>
</details>
</body></html>
"""
