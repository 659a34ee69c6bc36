"""The "semmap.numerics" document (docs/numerics.md, "JSON") made from what
:mod:`semmap._numerics_capture` measured, and its text table."""

from __future__ import annotations

import math
from typing import Any

from . import _numerics_graph as G
from . import _numerics_run as R
from ._numerics_capture import Info, Isolation

FORMAT = "semmap.numerics"
FORMAT_VERSION = 1
VIEWS = ("leaf", "subtree")

def _upstream(ref: G.GraphView, err_of: dict[str, tuple[float, bool]],
              ref_info: Info) -> dict[str, tuple[float, bool]]:
    """For every value of the reference: the error it carries (its own, when it was
    paired), else the worst error of the values it is made from; integer values carry none."""
    up: dict[str, tuple[float, bool]] = {}
    for j in ref.order:
        ins = [up[v] for v in ref.node_inputs[j] if v in up]
        base = (max(e for e, _ in ins), any(f for _, f in ins)) if ins else (0.0, False)
        for o in ref.nodes[j].output:
            if not o:
                continue
            if o in err_of:
                up[o] = err_of[o]
            elif o in ref_info.shapes:
                up[o] = base if ref_info.shapes[o][1].kind == "f" else (0.0, False)
            elif ref.elem_type.get(o) and ref.elem_type[o] not in G.FLOAT_TYPES:
                up[o] = (0.0, False)
            else:
                up[o] = base
    return up


def _worst(outputs: list[dict[str, Any]]) -> dict[str, Any]:
    """A module's figures: those of its worst output, with the largest max abs and the
    lowest cosine of any."""
    worst = max(outputs, key=lambda o: o["rel_l2"])
    out = {k: worst[k] for k in ("rel_l2", "sqnr_db", "cosine", "max_abs")}
    out["max_abs"] = max(o["max_abs"] for o in outputs)
    out["cosine"] = min(o["cosine"] for o in outputs)
    return out


def ranking_score(row: dict[str, Any], rank_by: str) -> float:
    """What a row is ranked by: its local error (the isolated run's output rel L2;
    its added error where it has none) or its added error."""
    if rank_by == "local" and "local_error" in row:
        return row["local_error"]["rel_l2"]
    return row["added_error"]


def suggestions(d: dict[str, Any], k: int, view: str = "leaf") -> list[str]:
    """The `k` modules to keep in float: a module that introduces NaN or Inf first;
    then, where the repaired runs measured it (`impact`), those whose repair lowers
    the final error, most first; then the ranking's first unmeasured modules that
    make some error by its measure."""
    by = d["ranked_by"][view]
    rows = [r for r in d["views"][view] if r["rank"] is not None]
    first = [r for r in rows if r.get("introduces_nonfinite")]
    measured = sorted((r for r in rows if r.get("impact") is not None and r["impact"] > 0
                       and not r.get("introduces_nonfinite")), key=lambda r: -r["impact"])
    rest = [r for r in rows if "impact" not in r and not r.get("introduces_nonfinite")
            and ranking_score(r, by) > 0]
    return [r["module"] for r in (first + measured + rest)[: max(0, k)]]


def document(ref_doc: dict[str, Any], dep_doc: dict[str, Any], ref: G.GraphView, dep: G.GraphView, given: R.Inputs,
              paired: dict, stats: dict, local: dict, iso: Isolation | None, out_stats: list,
              ref_out_names: list[str], dep_out_names: list[str], ref_info: Info, dep_info: Info,
              drift: dict, rank_by: str) -> dict[str, Any]:
    # The error each paired reference value carries: from its own module's pairing first.
    err_of: dict[str, tuple[float, bool]] = {}
    for view in VIEWS:
        for pairs, _ in paired[view].values():
            for p in pairs:
                s = stats[(p.reference, p.deployed)]
                err_of.setdefault(p.reference, (s.rel_l2, s.new_nonfinite > 0))
    up = _upstream(ref, err_of, ref_info)
    classes = {**dep.classes, **ref.classes}
    first = ref.first_pos()
    dep_first = dep.first_pos()
    order_of = {m: (0, first[m]) if m in first else (1, dep_first.get(m, 0)) for m in
                {*first, *dep_first}}
    views: dict[str, list[dict[str, Any]]] = {}
    unpaired_doc: list[dict[str, Any]] = []
    counts: dict[str, dict[str, int]] = {}
    for view in VIEWS:
        rows = []
        n_with, n_paired, n_ref, n_ref_paired = 0, 0, 0, 0
        for module, (pairs, unpaired) in paired[view].items():
            outputs = []
            for p in pairs:
                s = stats[(p.reference, p.deployed)]
                o = {"reference": p.reference, "deployed": p.deployed, "shape": list(p.shape),
                     **s.figures()}
                if s.mismatch:
                    o["note"] = s.mismatch
                outputs.append(o)
            for u in unpaired:
                unpaired_doc.append({"view": view, "module": module, "side": u.side, "value": u.value,
                                     "shape": list(u.shape) if u.shape is not None else None,
                                     "reason": u.reason})
            if pairs or unpaired:
                n_with += 1
                n_paired += bool(pairs)
            if pairs or any(u.side == "reference" for u in unpaired):
                n_ref += 1
                n_ref_paired += bool(pairs)
            ins = ref.module_inputs(module, view)
            in_err = max((up.get(v, (0.0, False))[0] for v in ins), default=0.0)
            in_nonfinite = any(up.get(v, (0.0, False))[1] for v in ins)
            row: dict[str, Any] = {
                "module": module,
                "class": classes.get(module, ""),
                "depth": module.count(".") + 1 if module else 0,
                "fused": ref.fused.get(module, []) if view == "leaf" else [],
                "order": order_of.get(module, (1, 0))[1],
                "rank": None,
                "added_error": None,
                "output_error": None,
                "input_error": in_err,
                "outputs": outputs,
                "unpaired": len(unpaired),
            }
            if view == "leaf" and iso is not None and module in iso.units:
                _, cuts, uncut = iso.units[module]
                lo = [{**local[(module, p.reference, p.deployed)].figures()} for p in pairs
                      if (module, p.reference, p.deployed) in local]
                if lo:
                    row["local_error"] = _worst(lo)
                    row["local_error"]["inputs_fed"] = len(cuts)
                    row["local_error"]["inputs_not_fed"] = uncut
            if outputs:
                worst = max(outputs, key=lambda o: o["rel_l2"])
                row["output_error"] = _worst(outputs)
                added = worst["rel_l2"] - in_err
                row["added_error"] = added if math.isfinite(added) else (
                    worst["rel_l2"] if math.isinf(worst["rel_l2"]) and not math.isinf(in_err) else 0.0)
                new_nf = sum(o.get("nonfinite", {}).get("deployed_only", 0) for o in outputs)
                if new_nf:
                    row["nonfinite"] = {"deployed_only": new_nf, "inputs_have_nonfinite": in_nonfinite}
                    row["introduces_nonfinite"] = not in_nonfinite
            rows.append(row)
        by = rank_by if view == "leaf" else "added"
        ranked = sorted((r for r in rows if r["added_error"] is not None),
                        key=lambda r: (not r.get("introduces_nonfinite", False), -ranking_score(r, by),
                                       order_of.get(r["module"], (1, 0))))
        for i, r in enumerate(ranked, 1):
            r["rank"] = i
        rest = sorted((r for r in rows if r["added_error"] is None),
                      key=lambda r: order_of.get(r["module"], (1, 0)))
        views[view] = ranked + rest
        counts[view] = {"modules": len(rows), "with_boundary_outputs": n_with, "paired": n_paired,
                        "reference_with_boundary_outputs": n_ref, "reference_paired": n_ref_paired}
    outputs_doc = []
    for i, (rn, dn) in enumerate(zip(ref_out_names, dep_out_names)):
        s = out_stats[i]
        o: dict[str, Any] = {"reference": rn, "deployed": dn}
        o.update(s.figures() if s.elements or s.nonfinite_ref or s.nonfinite_dep else {"note": "not floating point"})
        outputs_doc.append(o)
    final = max((o["rel_l2"] for o in outputs_doc if "rel_l2" in o), default=None)
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "reference": ref_doc,
        "deployed": dep_doc,
        "inputs": _inputs_doc(given),
        "provider": "",
        "final_error": final,
        "outputs": outputs_doc,
        "instrumentation_drift": drift,
        "pairing": counts,
        "ranked_by": {"leaf": rank_by, "subtree": "added"},
        "views": views,
        "unpaired": unpaired_doc,
        "captured_values": {"reference": len(ref_info.shapes), "deployed": len(dep_info.shapes)},
    }


def model_doc(m: Any, g: G.GraphView) -> dict[str, Any]:
    """The document's part on one model: `m` its semmap.MappedModel, `g` its graph."""
    prov = m.provenance
    return {"path": m.path, "nodes": len(g.nodes), "manifest": m.manifest_path,
            "manifest_from": prov.get("manifest"), "reference_from": prov.get("reference"),
            "model_class": m.model_class, "mapped_nodes": m.mapped_count}


def _inputs_doc(given: R.Inputs) -> dict[str, Any]:
    first = given.samples[0]
    return {
        "source": given.source,
        "note": given.note,
        "samples": len(given.samples),
        "inputs": [{"name": k, "dtype": str(v.dtype), "shape": list(v.shape),
                    **({"how": given.how[k]} if k in given.how else {})} for k, v in first.items()],
    }


def cost(seconds: dict[str, float], batches: dict[str, int]) -> dict[str, Any]:
    plain = seconds.get("plain_run_reference", 0.0) + seconds.get("plain_run_deployed", 0.0)
    capture = sum(seconds.get(k, 0.0) for k in ("capture_sessions", "capture_runs", "compare"))
    out = {k: round(v, 4) for k, v in seconds.items()}
    out["plain_inference"] = round(plain, 4)
    out["capture_and_compare"] = round(capture, 4)
    out["ratio_to_plain_inference"] = round(capture / plain, 2) if plain > 0 else None
    plain_all = plain + seconds.get("plain_sessions", 0.0)
    out["ratio_to_plain_with_sessions"] = round(capture / plain_all, 2) if plain_all > 0 else None
    out["batches"] = batches
    return out


def finite(x: Any) -> Any:
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite(v) for v in x]
    return x


def num(x: float | None, digits: int = 3) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and math.isinf(x):
        return "inf"
    if x == 0:
        return "0"
    return f"{x:.{digits}g}" if abs(x) >= 1e-3 else f"{x:.{digits - 1}e}"


def _figures_text(f: dict[str, Any]) -> str:
    sq = "identical" if f.get("sqnr_db") is None else f"SQNR {f['sqnr_db']:.1f} dB"
    text = f"rel L2 {num(f['rel_l2'])}, {sq}, cosine {f['cosine']:.6f}, max abs {num(f['max_abs'])}"
    nf = f.get("nonfinite")
    if nf:
        text += f", NaN/Inf: {nf['reference']} in the reference, {nf['deployed']} in the deployed run"
    return text


def text(d: dict[str, Any], top: int, suggest: int) -> str:
    lines = []
    for side in ("reference", "deployed"):
        m = d[side]
        how = f"manifest {m['manifest']}" if m["manifest"] else (
            "the provenance record's manifest" if m["manifest_from"] == "record" else "no manifest")
        lines.append(f"{side + ':':10} {m['path']} ({m['nodes']} nodes, {m['mapped_nodes']} mapped; {how})")
    i = d["inputs"]
    desc = "; ".join(f"{x['name']} {x['dtype']} {x['shape']}" + (f" {x['how']}" if "how" in x else "")
                     for x in i["inputs"])
    lines.append(f"{'inputs:':10} {i['note']}: {desc}")
    lines.append(f"{'provider:':10} {d['provider']}")
    for o in d["outputs"]:
        name = o["reference"] if o["reference"] == o["deployed"] else f"{o['reference']} / {o['deployed']}"
        lines.append(f"{'output:':10} {name}: " + (_figures_text(o) if "rel_l2" in o else o["note"]))
    p = d["pairing"]
    lines.append(f"{'paired:':10} leaf view {p['leaf']['paired']} of {p['leaf']['with_boundary_outputs']} "
                 f"modules with boundary outputs, subtree view {p['subtree']['paired']} of "
                 f"{p['subtree']['with_boundary_outputs']}; {len(d['unpaired'])} values unpaired "
                 "(--json lists them with the reason)")
    drift = {k: v for k, v in d["instrumentation_drift"].items() if v is not None and v > 1e-5}
    if drift:
        lines.append(f"{'drift:':10} the capturing copy's outputs differ from the file's by " +
                     ", ".join(f"{num(v)} ({k})" for k, v in drift.items()) +
                     " (its extra outputs keep ONNX Runtime from some fusions; module figures are the copy's)")
    c = d.get("cost", {})
    if c:
        b = c["batches"]
        lines.append(f"{'cost:':10} capture and compare {c['capture_and_compare']:.3f} s "
                     f"({b['discovery']} discovery + {b['capture']} capture batches), plain inference of "
                     f"both {c['plain_inference']:.3f} s ({c['ratio_to_plain_inference']}x; "
                     f"{c['ratio_to_plain_with_sessions']}x counting session loading)")
    for view, what in (("leaf", "(leaf view: a module's own nodes)"),
                       ("subtree", "(a module with everything below it)")):
        rows = [r for r in d["views"][view] if r["rank"] is not None][:top]
        local = d["ranked_by"][view] == "local"
        lines.append("")
        if local:
            lines.append(f"modules by the error they make on their own {what}; local = output rel L2 with "
                         "the reference's inputs fed, added = output rel L2 - worst input rel L2:")
        else:
            lines.append(f"{'modules' if view == 'leaf' else 'subtrees'} by the error they add {what}; "
                         "added = output rel L2 - worst input rel L2:")
        width = max([len(r["module"] or "<root>") for r in rows] + [6])
        cw = max([len(r["class"]) for r in rows] + [5])
        lines.append(f"  {'#':>3}  {'module':<{width}}  {'class':<{cw}}  " + (f"{'local':>9}  " if local else "") +
                     f"{'added':>9}  {'out relL2':>9}  {'in relL2':>9}  {'SQNR dB':>8}  {'cosine':>9}  {'max abs':>9}")
        for r in rows:
            e = r["output_error"]
            sq = "inf" if e["sqnr_db"] is None else f"{e['sqnr_db']:.1f}"
            flag = "  NaN/Inf introduced" if r.get("introduces_nonfinite") else (
                "  NaN/Inf" if r.get("nonfinite") else "")
            own = (f"{num(r['local_error']['rel_l2']) if 'local_error' in r else '-':>9}  " if local else "")
            lines.append(f"  {r['rank']:>3}  {r['module'] or '<root>':<{width}}  {r['class']:<{cw}}  {own}"
                         f"{num(r['added_error']):>9}  {num(e['rel_l2']):>9}  {num(r['input_error']):>9}  "
                         f"{sq:>8}  {e['cosine']:>9.6f}  {num(e['max_abs']):>9}{flag}")
        if not rows:
            lines.append("  (no module has a paired boundary output)")
    if suggest:
        keep = suggestions(d, suggest)
        lines.append("")
        measured = [r for r in d["views"]["leaf"] if r.get("impact") is not None]
        if measured:
            lines.append(f"repaired (each module's own error taken out of its outputs), final error "
                         f"{num(d['final_error'])} ->")
            for r in sorted(measured, key=lambda r: -r["impact"])[:top]:
                lines.append(f"  {r['module'] or '<root>'}: {num(r['repaired_final_error'])} "
                             f"(impact {num(r['impact'])})")
        lines.append(f"keep in float (--suggest-float {suggest}): " +
                     (", ".join(m or "<root>" for m in keep) or "(no module adds error)"))
    return "\n".join(lines) + "\n"
