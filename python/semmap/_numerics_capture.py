"""Capturing and measuring for :func:`semmap.compare_numerics`: the three phases.

1. Discovery: each model runs the first sample once with every candidate value
   (docs/numerics.md) as an extra output, in batches of at most half the capture
   budget, for the values' shapes and types; the arrays are kept while they fit
   in the budget.
2. Measurement: the paired values on every sample, from the discovery sessions
   when one batch held everything, else in batches of pairs of at most the budget,
   each a new session of each model; running sums only (Stats), no array kept.
3. Isolation (leaf view): the deployed copy with each module's paired inputs
   replaced by the reference's values (graph inputs fed on each run), for the
   error a module makes on its own (local error).
"""

from __future__ import annotations

import time
from typing import Any, Mapping

import numpy as np

from . import _numerics_graph as G
from . import _numerics_run as R

def is_float(a: Any) -> bool:
    return isinstance(a, np.ndarray) and a.dtype.kind == "f"


class Info:
    """What phase 1 learnt of one graph: each candidate's runtime shape and dtype, and
    the session that captures them all when one batch did."""

    def __init__(self) -> None:
        self.shapes: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
        self.session: Any = None
        self.single = False


def discover(runner: R.Runner, graph: G.GraphView, feeds: Mapping[str, np.ndarray],
              est_shapes: dict[str, tuple], budget: int, cache: dict, room: list[int],
              timer: R.Timer, batches: dict[str, int]) -> Info:
    key = "r" if runner.label == "reference" else "d"
    names = [c.name for c in sorted(graph.candidates.values(), key=lambda c: c.pos)]
    known = [R.estimate_bytes(graph.elem_type.get(n, 0), est_shapes.get(n), 0) for n in names]
    fallback = max(known) if any(known) else 2**20
    sizes = [k or fallback for k in known]
    groups: list[list[str]] = [[]]
    total = 0
    for n, size in zip(names, sizes):
        if groups[-1] and total + size > budget // 2:
            groups.append([])
            total = 0
        groups[-1].append(n)
        total += size
    info = Info()
    info.single = len(groups) == 1
    for group in groups:
        if not group:
            continue
        t = time.perf_counter()
        session = runner.capturing(group)
        timer.add("capture_sessions", t)
        t = time.perf_counter()
        arrays = runner.run(session, feeds, group)
        timer.add("capture_runs", t)
        batches["discovery"] += 1
        for n, a in zip(group, arrays):
            a = np.asarray(a)
            info.shapes[n] = (tuple(a.shape), a.dtype)
            if a.nbytes <= room[0]:
                cache[(key, n)] = a
                room[0] -= a.nbytes
        del arrays
        if info.single:
            info.session = session
    return info


def drift(graph: G.GraphView, out_names: list[str], cache: dict, key: str,
           plain: list[np.ndarray] | None) -> float | None:
    """How far the capturing copy's graph outputs are from the file's own (the extra
    outputs can keep ONNX Runtime from fusing across them): the largest relative L2
    difference, on the first sample."""
    if plain is None:
        return None
    worst = None
    for name, a in zip(out_names, plain):
        b = cache.get((key, name))
        if b is None or not is_float(a) or b.shape != np.shape(a):
            continue
        s = R.Stats()
        s.add(a, b)
        worst = max(worst or 0.0, s.rel_l2)
    return worst


FEED = "semmap.reference:"  # graph inputs of the isolating copy: the reference's values


class Isolation:
    """The leaf view's isolated run: the deployed copy with every module's paired
    inputs replaced by the reference's values, so that what a module's outputs are
    off by is its own error alone (docs/numerics.md, "Local error"). An input that is
    a quantized copy of a paired value (QuantizeLinear + DequantizeLinear) is fed
    before its quantization, which stays the module's."""

    def __init__(self, dep: G.GraphView, paired_leaf: dict, dep_info: "Info") -> None:
        d2r: dict[str, str] = {}
        for pairs, _ in paired_leaf.values():
            for p in pairs:
                d2r.setdefault(p.deployed, p.reference)
        unit_nodes: dict[str, list[int]] = {}
        for j, u in enumerate(dep.units):
            if u is not None:
                unit_nodes.setdefault(u, []).append(j)
        # unit -> (its pairs, [(fed deployed value, reference value, [(node, slot)])], inputs not fed)
        self.units: dict[str, tuple[list[G.Pair], list[tuple[str, str, list[tuple[int, int]]]], int]] = {}
        for unit, (pairs, _) in paired_leaf.items():
            if not pairs or unit not in unit_nodes:
                continue
            cuts, uncut = [], 0
            for d in dep.module_inputs(unit, "leaf"):
                if d in d2r:
                    slots = [(j, i) for j in unit_nodes[unit]
                             for i, v in enumerate(dep.nodes[j].input) if v == d]
                    cuts.append((d, d2r[d], slots))
                    continue
                fed = _fed_upstream(dep, d, d2r)
                if fed is not None:
                    cuts.append(fed)
                elif d not in dep.inputs and _carries_floats(dep, dep_info, d):
                    uncut += 1
            self.units[unit] = (pairs, cuts, uncut)
        self.dtype = {n: dt for n, (_, dt) in dep_info.shapes.items()}

    def batch(self, units: list[str]) -> tuple[list[str], list[str], list, list]:
        """For `units`: the reference values to capture, the deployed values to capture,
        the rewiring and the feeds of the isolating copy."""
        ref_names: dict[str, None] = {}
        dep_names: dict[str, None] = {}
        feeds: dict[str, Any] = {}
        rewire: dict[tuple[int, int], str] = {}
        for u in units:
            pairs, cuts, _ = self.units[u]
            for p in pairs:
                ref_names.setdefault(p.reference, None)
                dep_names.setdefault(p.deployed, None)
            for d, r, slots in cuts:
                ref_names.setdefault(r, None)
                feeds[d] = self.dtype[d]
                for j, i in slots:
                    rewire[(j, i)] = FEED + d
        return (list(ref_names), list(dep_names), [(j, i, n) for (j, i), n in rewire.items()],
                [(FEED + d, dt) for d, dt in feeds.items()])

    def feeds(self, units: list[str], ref_arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        out = {}
        for u in units:
            for d, r, _ in self.units[u][1]:
                out[FEED + d] = _cast(np.asarray(ref_arrays[r]), self.dtype[d])
        return out


def _cast(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`a` in the deployed copy's type; float16 saturates at its largest finite value
    (attention masks of float32's lowest value become float16's, as converters write them)."""
    if a.dtype == dtype:
        return a
    if np.dtype(dtype) == np.float16 and a.dtype.kind == "f":
        big = float(np.finfo(np.float16).max)
        a = np.clip(a, -big, big)
    return a.astype(dtype)


# Ops an input may reach a module through unchanged but for its type or layout.
_PASS_THROUGH = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "Cast", "CastLike", "Identity",
                 "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten"}


def _fed_upstream(dep: G.GraphView, d: str, d2r: dict[str, str]) -> tuple[str, str, list[tuple[int, int]]] | None:
    """For an input `d` that was not paired: the paired value it is made from through
    quantization, casts and reshapes (a quantized copy; DynamicQuantizeLinear's
    output, which another module's node may make and share), fed there, so that
    the quantization stays the module's error."""
    v = d
    for _ in range(6):
        p = dep.producer.get(v)
        if p is None or dep.nodes[p].op_type not in _PASS_THROUGH or not dep.nodes[p].input:
            return None
        x = dep.nodes[p].input[0]
        if x in d2r:
            return (x, d2r[x], [(p, 0)])
        v = x
    return None


def _carries_floats(g: G.GraphView, info: "Info", v: str) -> bool:
    if v in info.shapes:
        return info.shapes[v][1].kind == "f"
    t = g.elem_type.get(v, 0)
    return not t or t in G.FLOAT_TYPES


def measure(pairs: list[tuple[str, str]], stats: dict, local: dict, iso: Isolation | None,
             ref_run: R.Runner, dep_run: R.Runner, samples: list, dep_samples: list,
             ref_info: Info, dep_info: Info, cache: dict, budget: int, timer: R.Timer,
             batches: dict[str, int]) -> None:
    size = {("r", n): int(np.prod(s)) * dt.itemsize for n, (s, dt) in ref_info.shapes.items()}
    size.update({("d", n): int(np.prod(s)) * dt.itemsize for n, (s, dt) in dep_info.shapes.items()})
    whole = (ref_info.session is not None and dep_info.session is not None
             and sum(size.values()) <= budget
             and all(("r", r) in cache and ("d", d) in cache for r, d in pairs))
    units = list(iso.units) if iso else []
    if whole:  # one batch holds everything: the discovery sessions again, and the first sample's values
        cut = None
        if units:
            _, dep_names, rewire, feeds = iso.batch(units)  # type: ignore[union-attr]
            t = time.perf_counter()
            cut = dep_run.capturing(dep_names, rewire=rewire, feeds=feeds)
            timer.add("capture_sessions", t)
            batches["isolation"] += 1
        r_out, d_out = list(ref_info.shapes), list(dep_info.shapes)
        for n in range(len(samples)):
            t = time.perf_counter()
            if n == 0:
                ra = {k[1]: v for k, v in cache.items() if k[0] == "r"}
                da = {k[1]: v for k, v in cache.items() if k[0] == "d"}
            else:
                ra = dict(zip(r_out, ref_run.run(ref_info.session, samples[n], r_out)))
                da = dict(zip(d_out, dep_run.run(dep_info.session, dep_samples[n], d_out)))
            timer.add("capture_runs", t)
            t = time.perf_counter()
            for r, d in pairs:
                stats[(r, d)].add(np.asarray(ra[r]), np.asarray(da[d]))
            timer.add("compare", t)
            if cut is not None:
                _isolated_run(cut, iso, units, ra, dep_samples[n], local, dep_run, timer)  # type: ignore[arg-type]
            del ra, da
            cache.clear()  # the first sample's values: done with
        return
    ref_info.session = dep_info.session = None  # two sessions at most, from here on
    cache.clear()
    for group in _batches(pairs, lambda p: [("r", p[0]), ("d", p[1])], size, budget):
        ref_names = list(dict.fromkeys(r for r, _ in group))
        dep_names = list(dict.fromkeys(d for _, d in group))
        t = time.perf_counter()
        rs, ds = ref_run.capturing(ref_names), dep_run.capturing(dep_names)
        timer.add("capture_sessions", t)
        batches["capture"] += 1
        for n in range(len(samples)):
            t = time.perf_counter()
            ra = dict(zip(ref_names, ref_run.run(rs, samples[n], ref_names)))
            da = dict(zip(dep_names, dep_run.run(ds, dep_samples[n], dep_names)))
            timer.add("capture_runs", t)
            t = time.perf_counter()
            for r, d in group:
                stats[(r, d)].add(np.asarray(ra[r]), np.asarray(da[d]))
            del ra, da
            timer.add("compare", t)
        del rs, ds
    if not units:
        return

    def needs(u: str) -> list[tuple[str, str]]:
        pairs_u, cuts, _ = iso.units[u]  # type: ignore[union-attr]
        return ([("r", p.reference) for p in pairs_u] + [("d", p.deployed) for p in pairs_u] +
                [("r", r) for _, r, _ in cuts])

    for group_units in _batches(units, needs, size, budget):
        ref_names, dep_names, rewire, feeds = iso.batch(group_units)  # type: ignore[union-attr]
        t = time.perf_counter()
        rs = ref_run.capturing(ref_names)
        cut = dep_run.capturing(dep_names, rewire=rewire, feeds=feeds)
        timer.add("capture_sessions", t)
        batches["isolation"] += 1
        for n in range(len(samples)):
            t = time.perf_counter()
            ra = dict(zip(ref_names, ref_run.run(rs, samples[n], ref_names)))
            timer.add("capture_runs", t)
            _isolated_run(cut, iso, group_units, ra, dep_samples[n], local, dep_run, timer)  # type: ignore[arg-type]
            del ra
        del rs, cut


def _isolated_run(session: Any, iso: Isolation, units: list[str], ra: Mapping[str, np.ndarray],
                  feeds: Mapping[str, np.ndarray], local: dict, dep_run: R.Runner, timer: R.Timer) -> None:
    names = list(dict.fromkeys(p.deployed for u in units for p in iso.units[u][0]))
    t = time.perf_counter()
    out = dict(zip(names, dep_run.run(session, {**feeds, **iso.feeds(units, ra)}, names,
                                      "deployed (isolating copy)")))
    timer.add("capture_runs", t)
    t = time.perf_counter()
    for u in units:
        for p in iso.units[u][0]:
            local.setdefault((u, p.reference, p.deployed), R.Stats()).add(
                np.asarray(ra[p.reference]), np.asarray(out[p.deployed]))
    timer.add("compare", t)


def _batches(items: list, keys: Any, size: dict, budget: int):
    """Consecutive items whose values (keys(item)) take at most `budget` bytes together."""
    group: list = []
    held: set = set()
    total = 0
    for item in items:
        new = [k for k in keys(item) if k not in held]
        add = sum(size.get(k, 0) for k in new)
        if group and total + add > budget:
            yield group
            group, held, total = [], set(), 0
            new = list(dict.fromkeys(keys(item)))
            add = sum(size.get(k, 0) for k in new)
        group.append(item)
        held.update(new)
        total += add
    if group:
        yield group


def repaired_final_errors(modules: list[str], paired_leaf: dict, dep: G.GraphView, dep_info: Info,
                          iso: Isolation | None, ref_run: R.Runner, dep_run: R.Runner, samples: list,
                          dep_samples: list, ref_out_names: list[str], dep_out_names: list[str],
                          timer: R.Timer, batches: dict[str, int], budget: int) -> dict[str, float]:
    """Per module of `modules` (leaf view): the outputs' largest relative L2 error when
    the deployed copy runs with that module's own error taken out — every reader
    outside it of one of its paired boundary values reads instead the deployed value
    less the module's local error (its isolated run's output minus the reference's:
    what the module would hand on without its own error, its inputs' error kept), or
    the reference's value where the module was not isolated. A graph output that is
    one of them is replaced the same way. What keeping the module in float would
    gain, to first order (docs/numerics.md, "Impact"). Per group of modules whose
    values for every sample fit in the budget: one session of each model capturing
    them, then one isolating session, then one repairing session per module, each
    closed before the next is made."""
    dtype = {n: dt for n, (_, dt) in dep_info.shapes.items()}
    plans: dict[str, tuple[list[tuple[int, int, str]], list[tuple[str, Any]], dict[str, G.Pair]]] = {}
    for m in modules:
        rewire: list[tuple[int, int, str]] = []
        feeds: dict[str, Any] = {}
        fixed: dict[str, G.Pair] = {}  # deployed value -> its pair
        for p in paired_leaf.get(m, ([], []))[0]:
            if p.deployed not in dtype:
                continue
            for k in dep.consumers.get(p.deployed, []):
                if dep.units[k] != m:
                    rewire.extend((k, i, FEED + p.deployed) for i, v in enumerate(dep.nodes[k].input)
                                  if v == p.deployed)
                    feeds[FEED + p.deployed] = dtype[p.deployed]
                    fixed[p.deployed] = p
            if p.deployed in dep_out_names:
                fixed[p.deployed] = p
        if fixed:
            plans[m] = (rewire, list(feeds.items()), fixed)
    if not plans:
        return {}
    stats = {m: [R.Stats() for _ in ref_out_names] for m in plans}

    def needs(m: str) -> list[tuple[str, str]]:
        keys = [("d", d) for d in plans[m][2]]
        if iso is not None and m in iso.units:
            keys += [("d", p.deployed) for p in iso.units[m][0]] + [("c", d) for d, _, _ in iso.units[m][1]]
        return keys

    size = {("d", n): int(np.prod(s)) * 4 for n, (s, _) in dep_info.shapes.items()}
    size.update({("c", n): v for (_, n), v in size.items()})
    # Modules whose values for every sample fit in the budget together; per group,
    # two sessions at most at any time: the captures, then the isolating copy, then
    # one repairing copy after another, each run on the values kept.
    for group in _batches(list(plans), needs, {k: v * 2 * len(samples) for k, v in size.items()}, budget):
        _repair_group(group, plans, stats, iso, ref_run, dep_run, samples, dep_samples, ref_out_names,
                      dep_out_names, dtype, timer, batches)
    return {m: max((s.rel_l2 for s in ss if s.elements), default=0.0) for m, ss in stats.items()}


def _repair_group(group: list[str], plans: dict, stats: dict, iso: Isolation | None, ref_run: R.Runner,
                  dep_run: R.Runner, samples: list, dep_samples: list, ref_out_names: list[str],
                  dep_out_names: list[str], dtype: dict, timer: R.Timer, batches: dict[str, int]) -> None:
    isolated = [m for m in group if iso is not None and m in iso.units]
    iso_ref, iso_dep, iso_rewire, iso_feeds = iso.batch(isolated) if isolated else ([], [], [], [])
    dep_names = list(dict.fromkeys(d for m in group for d in plans[m][2]))
    ref_names = list(dict.fromkeys([*ref_out_names, *iso_ref,
                                    *(p.reference for m in group for p in plans[m][2].values())]))
    t = time.perf_counter()
    rs, ds = ref_run.capturing(ref_names), dep_run.capturing(dep_names)
    timer.add("capture_sessions", t)
    t = time.perf_counter()
    ra = [dict(zip(ref_names, ref_run.run(rs, samples[n], ref_names))) for n in range(len(samples))]
    da = [dict(zip(dep_names, dep_run.run(ds, dep_samples[n], dep_names))) for n in range(len(samples))]
    timer.add("capture_runs", t)
    del rs, ds
    alone: list[dict] = [{} for _ in samples]
    if isolated:
        t = time.perf_counter()
        cut = dep_run.capturing(iso_dep, rewire=iso_rewire, feeds=iso_feeds)
        timer.add("capture_sessions", t)
        t = time.perf_counter()
        alone = [dict(zip(iso_dep, dep_run.run(cut, {**dep_samples[n], **iso.feeds(isolated, ra[n])},  # type: ignore[union-attr]
                                               iso_dep, "deployed (isolating copy)")))
                 for n in range(len(samples))]
        timer.add("capture_runs", t)
        del cut
    for m in group:
        rewire, feed_types, fixed = plans[m]
        t = time.perf_counter()
        session = dep_run.capturing([], rewire=rewire, feeds=feed_types)
        timer.add("capture_sessions", t)
        batches["repair"] = batches.get("repair", 0) + 1
        t = time.perf_counter()
        for n in range(len(samples)):
            value = {}
            for d, p in fixed.items():
                r = np.asarray(ra[n][p.reference], np.float32)
                if m in isolated and d in alone[n]:
                    v = np.asarray(da[n][d], np.float32) - (np.asarray(alone[n][d], np.float32) - r)
                else:
                    v = r
                value[d] = _cast(v, dtype[d])
            feeds = {name: value[name[len(FEED):]] for name, _ in feed_types}
            out = dep_run.run(session, {**dep_samples[n], **feeds}, dep_out_names, "deployed (repairing copy)")
            for i, (rn, dn) in enumerate(zip(ref_out_names, dep_out_names)):
                got = value[dn] if dn in value else out[i]
                if np.asarray(ra[n][rn]).dtype.kind == "f":
                    stats[m][i].add(np.asarray(ra[n][rn]), np.asarray(got))
        timer.add("capture_runs", t)
        del session
