"""Which module hurts accuracy: a model and its deployed copy run side by side with
ONNX Runtime, compared module by module (`semmap compare-numerics`).

    >>> import semmap
    >>> r = semmap.compare_numerics("model.onnx", "model.int8.onnx", manifest="manifest.json")
    >>> print(r.to_text(top=5))
    >>> r.suggest_float(2)          # the two modules to keep in float
    ['classifier', 'bert.embeddings.position_embeddings']
    >>> semmap.nodes_to_exclude(semmap.load("model.onnx", "manifest.json"), r.suggest_float(2))

Both files are mapped by semmap (the deployed one with the reference as its
``reference=``, which refuses a file of another model). The values each module
hands to the rest of the graph (its *boundary outputs*) are captured in both
runs and paired by module, position and shape, never by tensor name alone, so that
copies whose names changed (onnxslim, quantizers, ONNX Runtime's fusions) pair
as well as the plain one. Per module: relative L2 error, SQNR, cosine
similarity and maximum absolute error of its outputs, and the error it *adds*:
its output error minus the worst error of its inputs, so that the modules after
a damaged one are not blamed. docs/numerics.md has the design, the JSON schema
and the figures measured on the corpus.

Needs onnxruntime, onnx and numpy (``pip install 'semmap[onnxruntime]'``); the
rest of semmap does not.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Mapping, Sequence

import numpy as np

from . import _numerics_capture as C
from . import _numerics_doc as D
from . import _numerics_graph as G
from . import _numerics_run as R
from ._numerics_run import NumericsError

__all__ = ["NumericsError", "NumericsReport", "compare_numerics", "main"]

FORMAT, FORMAT_VERSION = D.FORMAT, D.FORMAT_VERSION
DEFAULT_CAPTURE_BYTES = 512 * 2**20
VIEWS = D.VIEWS


def compare_numerics(
    reference: Any,
    deployed: Any,
    *,
    inputs: Any = None,
    manifest: Any = None,
    deployed_manifest: Any = None,
    providers: Sequence[str] | str | None = None,
    seed: int = 0,
    samples: int = 1,
    max_capture_bytes: int = DEFAULT_CAPTURE_BYTES,
    isolate: bool = True,
    rank_by: str | None = None,
    optimization: str = "all",
    impact: int = 0,
) -> "NumericsReport":
    """Runs `reference` (the export) and `deployed` (a copy made from it: onnxslim,
    ONNX Runtime's optimizers, a quantizer, fp16) with ONNX Runtime on the same
    inputs and compares them module by module.

    reference, deployed: paths, or semmap.MappedModel objects (already mapped).
    inputs: a .npz file, a directory of NAME.npy files, a dict of arrays keyed by
    the reference's input names, or a list of those (several samples); None
    makes `samples` samples from the reference's input types and shapes with
    `seed` (the report says how). manifest: the reference's manifest (None: its
    provenance record, or the node names alone); deployed_manifest: the deployed
    copy's, by default `manifest`. providers: ONNX Runtime execution providers by
    name (default CPU). max_capture_bytes: how many bytes of captured values are
    held at once (docs/numerics.md, "Memory"). isolate: also run the deployed copy
    with each module fed the reference's inputs, for the leaf view's local error
    (one more run of the deployed copy per sample). rank_by: "local" (the isolated
    run's error; needs isolate) or "added" (output error minus the worst input
    error) orders the leaf view; None (the default) is "local" with isolate, else
    "added". The subtree view is always by added error.
    optimization: ONNX Runtime's graph optimization level for every session, "all"
    (its default), "extended", "basic" or "disabled". impact: for the first
    `impact` modules of the leaf ranking, also run the deployed copy with that
    module repaired (its outputs replaced by the reference's, for every sample):
    the final error then (`repaired_final_error`) and how much lower it is
    (`impact`), which suggest_float orders by (one more session and run per
    module; docs/numerics.md, "Impact").

    Returns a NumericsReport. Raises FileNotFoundError for a missing file and
    NumericsError (a ValueError) for files of two different models, inputs of the
    wrong names, types or shapes, or a file ONNX Runtime cannot load or run, with
    a message naming the file.
    """
    try:
        import onnxruntime as ort
    except ImportError as e:
        raise ImportError("semmap.compare_numerics needs ONNX Runtime: pip install 'semmap[onnxruntime]' "
                          f"({e})") from e

    if rank_by is None:
        rank_by = "local" if isolate else "added"
    if rank_by not in ("added", "local"):
        raise ValueError(f"rank_by is 'added' or 'local', not {rank_by!r}")
    if rank_by == "local" and not isolate:
        raise ValueError("rank_by='local' needs isolate=True")
    if int(impact) < 0:
        raise ValueError(f"impact is 0 or more, not {impact}")
    if int(samples) < 1:
        raise ValueError(f"samples is at least 1, not {samples}")
    if optimization not in ("all", "extended", "basic", "disabled"):
        raise ValueError(f"optimization is 'all', 'extended', 'basic' or 'disabled', not {optimization!r}")
    timer = R.Timer()
    start_all = time.perf_counter()
    t = time.perf_counter()
    ref_map, dep_map = _mappings(reference, deployed, manifest, deployed_manifest)
    timer.add("mapping", t)
    ref_path, dep_path = ref_map.path, dep_map.path
    if isinstance(providers, str):
        providers = [providers]
    providers = list(providers or ["CPUExecutionProvider"])
    available = ort.get_available_providers()
    for p in providers:
        if p not in available:
            raise NumericsError(f"ONNX Runtime has no execution provider {p!r} here "
                                f"(it has {', '.join(available)})")
    if "CPUExecutionProvider" not in providers:
        providers.append("CPUExecutionProvider")  # for the nodes the others do not take

    t = time.perf_counter()
    ref_proto, dep_proto = R.load_proto(ref_path), R.load_proto(dep_path)
    given = None
    if inputs is not None:
        read, source, note = R.read_inputs(inputs)
        given = R.Inputs(read, source, note=note)
        if not given.samples:
            raise NumericsError("no inputs given (an empty list)")
        R.check_inputs(given.samples, R.input_specs(ref_proto), ref_path)
    timer.add("inputs", t)

    ref_run = R.Runner(ref_path, ref_proto, providers, "reference", optimization)
    dep_run = R.Runner(dep_path, dep_proto, providers, "deployed", optimization)
    maps = [ref_map, dep_map]
    del ref_map, dep_map, ref_proto, dep_proto  # _compare drops them once read (their files unmapped)
    doc = _compare(maps, ref_run, dep_run, given, (seed, int(samples)),
                   max(1, int(max_capture_bytes)), timer, isolate, rank_by, int(impact))
    timer.add("total", start_all)
    doc["cost"] = D.cost(timer.seconds, doc.pop("_batches"))
    doc["provider"] = providers[0]
    doc["optimization"] = optimization
    return NumericsReport(doc)


def _mappings(reference: Any, deployed: Any, manifest: Any, deployed_manifest: Any) -> tuple[Any, Any]:
    """Both files mapped; files of two different models refused with the mapping's reason."""
    import semmap

    ref_map = reference if isinstance(reference, semmap.MappedModel) else semmap.load(reference, manifest)
    if isinstance(deployed, semmap.MappedModel):
        dep_map = deployed
    else:
        dep_manifest = deployed_manifest if deployed_manifest is not None else manifest
        try:
            dep_map = semmap.load(deployed, dep_manifest, reference=ref_map.path)
        except ValueError as e:
            raise NumericsError(f"{os.fsdecode(deployed)} is not a copy of {ref_map.path} that can be "
                                f"compared: {e}") from None
    if ref_map.model_class and dep_map.model_class and ref_map.model_class != dep_map.model_class:
        raise NumericsError(f"{dep_map.path} is a {dep_map.model_class}, {ref_map.path} a "
                            f"{ref_map.model_class}: two different models")
    if not (ref_map.has_manifest and dep_map.has_manifest):
        try:  # module paths from the names alone: the diff's check that they overlap
            semmap.diff(ref_map, dep_map)
        except ValueError as e:
            raise NumericsError(f"{dep_map.path} and {ref_map.path} look like two different models: "
                                f"{e}") from None
    return ref_map, dep_map


def _compare(maps: list[Any], ref_run: R.Runner, dep_run: R.Runner,
             given: R.Inputs | None, generate: tuple[int, int], budget: int,
             timer: R.Timer, isolate: bool, rank_by: str, impact: int) -> dict[str, Any]:
    # Plain inference: the files as they are, for the final outputs and the cost.
    t = time.perf_counter()
    ref_plain, dep_plain = ref_run.plain(), dep_run.plain()
    timer.add("plain_sessions", t)
    ref_out_names = [o.name for o in ref_plain.get_outputs()]
    dep_out_names = [o.name for o in dep_plain.get_outputs()]
    if len(ref_out_names) != len(dep_out_names):
        raise NumericsError(f"{dep_run.path} has {len(dep_out_names)} outputs, {ref_run.path} "
                            f"{len(ref_out_names)}: not the same model")
    ref_specs, dep_specs = R.input_specs(ref_run.proto), R.input_specs(dep_run.proto)

    def first_runs(g: R.Inputs) -> tuple[list[dict[str, np.ndarray]], list, list]:
        ds = [R.deployed_feeds(x, ref_specs, dep_specs, dep_run.path) for x in g.samples]
        t = time.perf_counter()
        ra = ref_run.run(ref_plain, g.samples[0], None)
        timer.add("plain_run_reference", t)
        t = time.perf_counter()
        da = dep_run.run(dep_plain, ds[0], None)
        timer.add("plain_run_deployed", t)
        return ds, ra, da

    if given is not None:
        dep_samples, ra0, da0 = first_runs(given)
    else:
        # Made-up inputs: the first sequence length both files run with (an export
        # traced at one length may take no other, whatever its declared dimensions).
        ref_run.hint = dep_run.hint = (" (the inputs were made up from the input types: give real ones, "
                                       "inputs= or --inputs)")
        failed: list[tuple[int, NumericsError]] = []
        for size in R.SEQUENCE_SIZES:
            given = R.generate_inputs(ref_run.proto, ref_specs, generate[0], generate[1], size)
            try:
                dep_samples, ra0, da0 = first_runs(given)
            except NumericsError as e:
                if not given.varies:
                    raise
                failed.append((size, e))
                continue
            break
        else:
            raise failed[0][1]
        if failed:
            given.note += (f"; named dimensions of size {given.sequence} (with "
                           f"{', '.join(str(n) for n, _ in failed)} the files did not run: {failed[0][1]})")
    samples = given.samples
    out_stats = [R.Stats() for _ in ref_out_names]
    first_plain = (ra0, da0)
    for n, (rs, ds) in enumerate(zip(samples, dep_samples)):
        if n == 0:
            ra, da = ra0, da0
        else:
            t = time.perf_counter()
            ra = ref_run.run(ref_plain, rs, None)
            timer.add("plain_run_reference", t)
            t = time.perf_counter()
            da = dep_run.run(dep_plain, ds, None)
            timer.add("plain_run_deployed", t)
        for i, (a, b) in enumerate(zip(ra, da)):
            if np.shape(a) != np.shape(b):
                raise NumericsError(f"output {i} ({ref_out_names[i]!r} / {dep_out_names[i]!r}) has shape "
                                    f"{list(np.shape(a))} in {ref_run.path} and {list(np.shape(b))} in "
                                    f"{dep_run.path}: not the same model")
            if C.is_float(a) and C.is_float(b):
                out_stats[i].add(a, b)
    ref_plain = dep_plain = None  # the plain sessions are not needed any more

    # The graphs, their values' types and, where inference can tell, their shapes.
    t = time.perf_counter()
    bound = _bound_dims(ref_run.proto, samples[0])
    ref_types, ref_shapes_est = R.inferred_types_and_shapes(ref_run.proto, bound, samples[0])
    dep_types, dep_shapes_est = R.inferred_types_and_shapes(
        dep_run.proto, _bound_dims(dep_run.proto, dep_samples[0]), dep_samples[0])
    ref_map, dep_map = maps
    ref = G.read_graph(ref_run.path, ref_run.proto, ref_map, ref_types)
    dep = G.read_graph(dep_run.path, dep_run.proto, dep_map, dep_types)
    G.merge_fusions(ref, dep)
    G.stand_in_removed_activations(ref, dep)
    G.find_candidates(ref)
    G.find_candidates(dep)
    for graph, m in ((ref, ref_map), (dep, dep_map)):
        for row in m.tree()["modules"]:
            if row.get("class"):
                graph.classes.setdefault(row["path"], row["class"])
    models = D.model_doc(ref_map, ref), D.model_doc(dep_map, dep)
    # The mappings are read: dropped (unless the caller holds them), with what they map.
    maps.clear()
    del ref_map, dep_map, m
    timer.add("analysis", t)

    # Phase 1: every candidate of each graph on the first sample, for shapes and types.
    cache: dict[tuple[str, str], np.ndarray] = {}
    room = [budget]
    batches = {"discovery": 0, "capture": 0, "isolation": 0}
    ref_info = C.discover(ref_run, ref, samples[0], ref_shapes_est, budget, cache, room, timer, batches)
    dep_info = C.discover(dep_run, dep, dep_samples[0], dep_shapes_est, budget, cache, room, timer, batches)
    drift = {"reference": C.drift(ref, ref_out_names, cache, "r", first_plain[0] if first_plain else None),
             "deployed": C.drift(dep, dep_out_names, cache, "d", first_plain[1] if first_plain else None)}

    # Pairing, per view and module.
    t = time.perf_counter()
    floats_r = {n for n, (_, dt) in ref_info.shapes.items() if dt.kind == "f"}
    floats_d = {n for n, (_, dt) in dep_info.shapes.items() if dt.kind == "f"}
    shapes_r = {n: s for n, (s, _) in ref_info.shapes.items()}
    shapes_d = {n: s for n, (s, _) in dep_info.shapes.items()}
    paired: dict[str, dict[str, tuple[list[G.Pair], list[G.Unpaired]]]] = {}
    for view in VIEWS:
        paired[view] = {}
        for module in G.iter_modules(ref, dep, view):
            if view == "subtree" and module == "":
                continue  # the whole model: its outputs, below
            paired[view][module] = G.pair_module(module, view, ref, dep, shapes_r, shapes_d,
                                                 floats_r, floats_d)
    unique: dict[tuple[str, str], None] = {}
    for view in VIEWS:
        for pairs, _ in paired[view].values():
            for p in pairs:
                unique.setdefault((p.reference, p.deployed), None)
    timer.add("analysis", t)

    # Phase 2: the paired values on every sample; phase 3 (in the same runs when one
    # batch holds everything): the isolating copy.
    stats = {k: R.Stats() for k in unique}
    local: dict[tuple[str, str, str], R.Stats] = {}
    iso = C.Isolation(dep, paired["leaf"], dep_info) if isolate else None
    C.measure(list(unique), stats, local, iso, ref_run, dep_run, samples, dep_samples, ref_info,
             dep_info, cache, budget, timer, batches)
    ref_info.session = dep_info.session = None

    t = time.perf_counter()
    doc = D.document(*models, ref, dep, given, paired, stats, local, iso, out_stats,
                    ref_out_names, dep_out_names, ref_info, dep_info, drift, rank_by)
    timer.add("compare", t)
    if impact and doc["final_error"] is not None:
        rows = [r for r in doc["views"]["leaf"] if r["rank"] is not None][:impact]
        repaired = C.repaired_final_errors([r["module"] for r in rows], paired["leaf"], dep, dep_info, iso,
                                           ref_run, dep_run, samples, dep_samples, ref_out_names,
                                           dep_out_names, timer, batches, budget)
        for r in rows:
            if r["module"] in repaired:
                r["repaired_final_error"] = repaired[r["module"]]
                r["impact"] = doc["final_error"] - repaired[r["module"]]
    doc["_batches"] = batches
    return doc


def _bound_dims(proto: Any, sample: Mapping[str, np.ndarray]) -> dict[str, int]:
    bound: dict[str, int] = {}
    for s in R.input_specs(proto):
        if s.name in sample:
            for d, n in zip(s.dims, sample[s.name].shape):
                if isinstance(d, str):
                    bound.setdefault(d, int(n))
    return bound


class NumericsReport:
    """The result of :func:`compare_numerics`: the "semmap.numerics" document
    (docs/numerics.md) and views of it."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self._doc = doc

    def to_dict(self) -> dict[str, Any]:
        """The JSON document as dicts and lists (infinite figures as None)."""
        return json.loads(self.to_json())

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(D.finite(self._doc), indent=indent)

    @property
    def final_error(self) -> float | None:
        """The largest relative L2 error of the model's outputs (from the files as they
        are, not the capturing copies)."""
        return self._doc["final_error"]

    def modules(self, view: str = "leaf") -> list[dict[str, Any]]:
        """The modules of a view ('leaf': each module's own nodes; 'subtree': a module and
        everything below it), ranked by added error; unranked ones (nothing paired) last."""
        if view not in VIEWS:
            raise ValueError(f"view is 'leaf' or 'subtree', not {view!r}")
        return self._doc["views"][view]

    def ranking(self, view: str = "leaf") -> list[str]:
        """Module paths by the view's ranking (``ranked_by``: the leaf view's local
        or added error, the subtree view's added error), largest first."""
        return [r["module"] for r in self.modules(view) if r["rank"] is not None]

    def suggest_float(self, k: int, view: str = "leaf") -> list[str]:
        """The `k` modules to keep in float (:func:`semmap.nodes_to_exclude`): where
        compare_numerics measured it (impact=N), those whose repair lowers the final
        error most; else the first in the ranking that make some error by its
        measure (local or added error)."""
        self.modules(view)  # checks the view
        return D.suggestions(self._doc, k, view)

    @property
    def unpaired(self) -> list[dict[str, Any]]:
        return self._doc["unpaired"]

    def write_html(self, path: Any, *, top: int = 10) -> None:
        """A self-contained HTML page: error along the model, the worst modules marked."""
        from ._numerics_html import page

        text = page(self.to_dict(), top=top)
        with open(os.fsdecode(path), "w", encoding="utf-8") as f:
            f.write(text)

    def to_text(self, top: int = 10, suggest: int = 0) -> str:
        return D.text(self._doc, top, suggest)

    def __repr__(self) -> str:
        d = self._doc
        return (f"<semmap.NumericsReport {d['reference']['path']!r} vs {d['deployed']['path']!r}: "
                f"final error {D.num(d['final_error'])}>")



# ------------------------------------------------------------------ command line


def main(argv: Sequence[str] | None = None) -> int:
    """`semmap compare-numerics`: exit 0 when compared, 2 for bad usage or input."""
    parser = argparse.ArgumentParser(
        prog="semmap compare-numerics",
        description="Runs REFERENCE (the export) and DEPLOYED (a copy made from it) with ONNX Runtime "
                    "on the same inputs and ranks the modules by the error they add (docs/numerics.md).")
    parser.add_argument("reference", metavar="REFERENCE.onnx")
    parser.add_argument("deployed", metavar="DEPLOYED.onnx")
    parser.add_argument("--manifest", help="the reference's manifest (default: its provenance record, "
                        "else the node names alone)")
    parser.add_argument("--deployed-manifest", help="the deployed copy's manifest (default: --manifest)")
    parser.add_argument("--inputs", action="append", help="an .npz file or a directory of NAME.npy files "
                        "(repeat for more samples); default: made from the input types and shapes")
    parser.add_argument("--samples", type=int, default=1, help="samples to make when no --inputs (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the made inputs (default 0)")
    parser.add_argument("--top", type=int, default=10, help="modules to list per view (default 10)")
    parser.add_argument("--suggest-float", type=int, default=0, metavar="K",
                        help="name K modules to keep in float: those whose repair lowers the final error "
                             "most, among the first --impact of the ranking")
    parser.add_argument("--impact", type=int, default=None, metavar="N",
                        help="repair each of the first N modules of the ranking in turn and measure the final "
                             "error (default: 3 K with --suggest-float K, else 0)")
    parser.add_argument("--provider", action="append",
                        help="ONNX Runtime execution provider (default CPUExecutionProvider)")
    parser.add_argument("--optimization", choices=("all", "extended", "basic", "disabled"), default="all",
                        help="ONNX Runtime's graph optimization level for every session (default all)")
    parser.add_argument("--rank-by", choices=("added", "local"), default=None,
                        help="order of the leaf view: the isolated run's local error (default) or added "
                             "error (the default with --no-isolate)")
    parser.add_argument("--no-isolate", action="store_true",
                        help="skip the isolated run (no local error; one run less per sample)")
    parser.add_argument("--max-capture-mb", type=float, default=DEFAULT_CAPTURE_BYTES / 2**20,
                        help="captured values held at once, in MiB (default 512)")
    parser.add_argument("--json", action="store_true", help="the semmap.numerics JSON document")
    parser.add_argument("--html", metavar="OUT.html", help="also write a self-contained HTML page")
    args = parser.parse_args(argv)
    try:
        report = compare_numerics(
            args.reference, args.deployed, inputs=args.inputs, manifest=args.manifest,
            deployed_manifest=args.deployed_manifest, providers=args.provider, seed=args.seed,
            samples=args.samples, max_capture_bytes=int(args.max_capture_mb * 2**20),
            isolate=not args.no_isolate, rank_by=args.rank_by, optimization=args.optimization,
            impact=3 * args.suggest_float if args.impact is None else args.impact)
    except ImportError as e:
        sys.stderr.write(f"semmap compare-numerics: {e}\n")
        return 2
    except (ValueError, FileNotFoundError, PermissionError, KeyError) as e:
        sys.stderr.write(f"semmap compare-numerics: {e}\n")
        return 2
    if args.json:
        doc = report.to_dict()
        if args.suggest_float:
            doc["suggest_float"] = report.suggest_float(args.suggest_float)
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        sys.stdout.write(report.to_text(top=args.top, suggest=args.suggest_float))
    if args.html:
        try:
            report.write_html(args.html, top=args.top)
        except OSError as e:
            sys.stderr.write(f"semmap compare-numerics: {args.html}: {e.strerror or e}\n")
            return 2
    return 0
