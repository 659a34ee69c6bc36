#!/usr/bin/env python3
"""The provenance record through a zoo of third-party ONNX-to-ONNX tools.

A sibling of check_record_survival.py (whose 18 tools are onnxslim, ONNX
Runtime, onnxscript, the fp16 converters and the version converter): the
tools here are the others people run between export and deployment —
onnx-graphsurgeon, Polygraphy, onnxoptimizer, onnxsim, onnx-ir, onnx's
compose.add_prefix, inliner and shape inference, ONNX Runtime's
quant_pre_process, NNCF's post-training quantization, qonnx's cleanup,
onnxconverter-common's auto mixed precision, onnx-tool — with the versions
pinned in python/requirements-current.txt, and a few chains of two.

For each source export (torch 2.15 slice: transformers, torchvision and
timm, both exporters) it embeds the record (`semmap embed SRC --manifest M`;
also `semmap embed --scoped-names` when this semmap has the flag), runs each
tool on the embedded file, and measures for every output:
  - record kept: the record byte for byte, in the model-level `semmap.record`
    entry or its copy on a line of the graph's doc_string (record_of);
  - record used: `semmap map OUT --json` says provenance.record "used" or
    "source";
  - accuracy with the file alone (the record, when kept) and with the
    manifest alone (`--no-record --manifest M`), against the export's truth
    carried as the corpus carries it (tools/corpus semmap_corpus.matching:
    by name matching, by position through a tool that only renames);
  - refusals: semmap exiting 2 because the manifest "is of another model" or
    the record's graph is "not the export": the right manifest and the right
    record are given, so each is printed loudly;
  - names: how many node and initializer names the tool kept, and the
    patterns of the names it made (`q_output_<param>_N`).
And once per tool and source (PROBE_SOURCES), on a copy with a marker planted in every place
ONNX can carry text (model and graph doc_string and metadata_props, every
node's doc_string and metadata_props, an unused model-local function), which
of those places survive the tool: they are where semmap can carry its record.

Vision fixtures whose payloads the corpus dropped (fixtures/torch-2.15/
README.md, "Weights without payloads") get seeded noise put back into those
initializers first, so that tools which run the model (onnxsim's check,
NNCF's calibration, quant_pre_process, auto mixed precision) can; semmap reads
no payload, so the record and the truth are those of the fixture.

  check_tool_zoo.py SEMMAP FIXTURES [--markdown] [--markdown-file F] [--report-only]
                    [--only NAME] [--source DIR] [--all-chains | --no-chains] [--full]
                    [--no-probe | --probe-all] [--scoped-via-annotate] [--no-snapshot] [--jobs N]

The default run (8 sources, 13 tools, 8 chains, the probe on 4 sources) takes
about 4 minutes on 2 cores with --jobs 2. SEMMAP is copied with its shared
library at the start (--no-snapshot: not), so that a rebuild while the zoo
runs changes nothing under it.

Exits 1 (unless --report-only) when semmap refuses the right manifest, fails
on a file whose record a tool kept or dies, when a file that kept its record
maps fewer nodes right alone than with the manifest alone (the record carries
that manifest), or when a tool not listed in DROPS loses the record; a right
record rejected where the file maps as well without it is printed as a note.
Exits 2 when semmap cannot be run. A tool that fails is reported, never
gated: the zoo's tools are not the project's.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_record_survival as survival  # noqa: E402  (puts tools/corpus on the path)
from semmap_testlib import all_nodes  # noqa: E402
from semmap_corpus.matching import matched_truth, positional_truth  # noqa: E402

record_of = survival.record_of
# A representative subset of plain exports of the torch 2.15 slice: BERT of
# both exporters, the TorchScript Llama (the largest graph), HF's ResNet,
# torchvision's ResNet-18 and timm's ViT of both exporters.
SOURCES = ["bert-seqcls.dynamo", "bert-seqcls.torchscript", "llama-causal-lm.torchscript", "resnet-imgcls.dynamo",
           "tv-resnet18.dynamo", "tv-resnet18.torchscript", "timm-vit.dynamo", "timm-vit.torchscript"]
# Tools measured to drop every carrier of the record (the model's
# metadata_props and the graph's doc_string), with the reason. The file then
# maps as it would without a record, and `semmap map` says it carries no
# provenance. (onnx-graphsurgeon and Polygraphy drop the model's
# metadata_props but keep the graph's doc_string, where the record's copy is.)
DROPS: dict[str, str] = {
    "onnx-tool": "onnx_tool.Model rebuilds the model from its own graph: nothing but opsets, IR version, node "
                 "and tensor names stays (not even the producer, the graph's name or its doc_string)",
}
# The metadata probe runs each tool once more per source: on these (a
# dynamo and a TorchScript export of transformers, a dynamo CNN, torchvision's
# TorchScript CNN) unless --probe-all.
PROBE_SOURCES = ("bert-seqcls.dynamo", "bert-seqcls.torchscript", "resnet-imgcls.dynamo", "tv-resnet18.torchscript")
PROBE = "semmap.probe"
PROBE_DOMAIN = "semmap.probe"


@dataclass(frozen=True)
class Step:
    run: Callable[[Path, Path], None]
    renames: bool = False  # keeps every node in order, changes names: truth carried by position


@dataclass(frozen=True)
class Tool:
    name: str
    packages: tuple[str, ...]
    steps: tuple[Step, ...]
    # Computes with the weights (runs the model, or folds constants by
    # evaluating them): needs the payloads the corpus dropped put back.
    needs_weights: bool = False
    # Sources it runs on unless --full (a tool too slow for every source), with the reason.
    only: tuple[str, ...] = ()
    only_reason: str = ""


# ---------------------------------------------------------------- the tools

def graphsurgeon(src: Path, dest: Path) -> None:
    import onnx_graphsurgeon as gs
    graph = gs.import_onnx(onnx.load(str(src)))
    graph.fold_constants().cleanup().toposort()
    onnx.save(gs.export_onnx(graph), str(dest))


def polygraphy_fold(src: Path, dest: Path) -> None:
    """What `polygraphy surgeon sanitize SRC --fold-constants -o DEST` does
    (the same function; the graph written is identical, checked on BERT),
    without the CLI's 5 s of start-up."""
    from polygraphy.backend.onnx import fold_constants
    onnx.save(fold_constants(onnx.load(str(src))), str(dest))


def onnxoptimizer_tool(src: Path, dest: Path) -> None:
    import onnxoptimizer
    onnx.save(onnxoptimizer.optimize(onnx.load(str(src))), str(dest))


def onnxsim_tool(src: Path, dest: Path) -> None:
    import onnxsim
    model, ok = onnxsim.simplify(onnx.load(str(src)))
    if not ok:
        raise RuntimeError("onnxsim's check of the simplified model failed")
    onnx.save(model, str(dest))


def onnx_ir_roundtrip(src: Path, dest: Path) -> None:
    import onnx_ir as ir
    ir.save(ir.load(str(src)), str(dest))


def add_prefix(src: Path, dest: Path) -> None:
    from onnx import compose
    onnx.save(compose.add_prefix(onnx.load(str(src)), "m0/"), str(dest))


def inliner(src: Path, dest: Path) -> None:
    from onnx import inliner as onnx_inliner
    onnx.save(onnx_inliner.inline_local_functions(onnx.load(str(src))), str(dest))


def shape_inference(src: Path, dest: Path) -> None:
    onnx.save(onnx.shape_inference.infer_shapes(onnx.load(str(src)), data_prop=True), str(dest))


def quant_pre_process(src: Path, dest: Path) -> None:
    """ONNX Runtime's recommended step before static quantization
    (`python -m onnxruntime.quantization.preprocess`): symbolic shape
    inference, the basic session optimizations, onnx shape inference."""
    from onnxruntime.quantization.shape_inference import quant_pre_process as qpp
    qpp(str(src), str(dest))


def nncf_quantize(src: Path, dest: Path) -> None:
    import nncf
    nncf.set_log_level(40)
    model = onnx.load(str(src))
    data = survival.feeds(src)
    onnx.save(nncf.quantize(model, nncf.Dataset(data), subset_size=len(data)), str(dest))


def _qonnx(transforms: Callable[[], list]) -> Callable[[Path, Path], None]:
    def run(src: Path, dest: Path) -> None:
        from qonnx.core.modelwrapper import ModelWrapper
        model = ModelWrapper(onnx.load(str(src)))
        for t in transforms():
            model = model.transform(t)
        model.save(str(dest))
    return run


def _qonnx_fold() -> list:
    """qonnx.util.cleanup.cleanup_model's transformations up to the renaming ones."""
    from qonnx.transformation.fold_constants import FoldConstants
    from qonnx.transformation.general import (GiveUniqueParameterTensors, RemoveStaticGraphInputs,
                                              RemoveUnusedTensors)
    from qonnx.transformation.infer_shapes import InferShapes
    from qonnx.transformation.quant_constant_folding import FoldTransposeIntoQuantInit
    return [InferShapes(), GiveUniqueParameterTensors(),
            FoldConstants(exclude_op_types=["Quant", "BipolarQuant", "QuantizeLinear", "DequantizeLinear"]),
            FoldTransposeIntoQuantInit(), RemoveUnusedTensors(), RemoveStaticGraphInputs()]


def _qonnx_rename() -> list:
    """... and its last two: every node and tensor renamed (`Conv_0`, `Conv_0_param0`)."""
    from qonnx.transformation.general import GiveReadableTensorNames, GiveUniqueNodeNames
    return [GiveUniqueNodeNames(), GiveReadableTensorNames()]


def auto_mixed_precision(src: Path, dest: Path) -> None:
    from onnxconverter_common import auto_mixed_precision as amp
    model = amp.auto_convert_mixed_precision(onnx.load(str(src)), survival.feeds(src)[0], rtol=0.01, atol=0.001,
                                             keep_io_types=True)
    onnx.save(model, str(dest))


def onnx_tool_fold(src: Path, dest: Path) -> None:
    import onnx_tool
    onnx_tool.model_constant_folding(str(src), str(dest))


QONNX_SOURCES = ("bert-seqcls.dynamo", "resnet-imgcls.dynamo", "tv-resnet18.dynamo", "tv-resnet18.torchscript")
TOOLS: list[Tool] = [
    Tool("onnx-graphsurgeon", ("onnx-graphsurgeon",), (Step(graphsurgeon),), needs_weights=True),
    Tool("Polygraphy", ("polygraphy",), (Step(polygraphy_fold),), needs_weights=True),
    Tool("onnxoptimizer", ("onnxoptimizer",), (Step(onnxoptimizer_tool),)),
    Tool("onnxsim", ("onnxsim",), (Step(onnxsim_tool),), needs_weights=True),
    Tool("onnx-ir", ("onnx-ir",), (Step(onnx_ir_roundtrip),)),
    Tool("onnx.compose.add_prefix", ("onnx",), (Step(add_prefix, renames=True),)),
    Tool("onnx.inliner", ("onnx",), (Step(inliner),)),
    Tool("onnx shape inference", ("onnx",), (Step(shape_inference),)),
    Tool("ORT quant_pre_process", ("onnxruntime",), (Step(quant_pre_process),), needs_weights=True),
    Tool("NNCF quantize", ("nncf",), (Step(nncf_quantize),), needs_weights=True),
    Tool("qonnx cleanup", ("qonnx",), (Step(_qonnx(_qonnx_fold)), Step(_qonnx(_qonnx_rename), renames=True)),
         needs_weights=True, only=QONNX_SOURCES,
         only_reason="qonnx folds constants by executing each node in Python: 27 s on BERT TorchScript alone"),
    Tool("auto mixed precision", ("onnxconverter-common",), (Step(auto_mixed_precision),), needs_weights=True),
    Tool("onnx-tool", ("onnx-tool",), (Step(onnx_tool_fold),), needs_weights=True),
]
BY_NAME = {t.name: t for t in TOOLS}
# check_record_survival's tools, for chains.
OTHERS: dict[str, Tool] = {
    "onnxslim": Tool("onnxslim", ("onnxslim",), (Step(survival.onnxslim_tool),)),
    "quantize_dynamic": Tool("quantize_dynamic", ("onnxruntime",), (Step(survival.quantize_dynamic),)),
    "fp16 (onnxconverter-common)": Tool("fp16 (onnxconverter-common)", ("onnxconverter-common",),
                                        (Step(survival.fp16_converter_common),)),
    "ORT session, extended": Tool("ORT session, extended", ("onnxruntime",),
                                  (Step(survival.ort_session("ORT_ENABLE_EXTENDED")),)),
}


def chain(*tools: Tool) -> Tool:
    only: tuple[str, ...] = ()
    for t in tools:
        if t.only:
            only = tuple(s for s in (only or t.only) if s in t.only)
    return Tool(", then ".join(t.name for t in tools), tuple(p for t in tools for p in t.packages),
                tuple(s for t in tools for s in t.steps), any(t.needs_weights for t in tools), only,
                "; ".join(t.only_reason for t in tools if t.only_reason))


def _tool(name: str) -> Tool:
    return BY_NAME.get(name) or OTHERS[name]


# Chains people run: a clean-up before a quantizer or a converter, a
# metadata-dropping tool before a keeping one (and after), a renaming first.
CHAINS: list[tuple[str, str]] = [
    ("onnx-graphsurgeon", "onnxsim"),
    ("onnxsim", "NNCF quantize"),
    ("onnxsim", "onnx-graphsurgeon"),
    ("Polygraphy", "quantize_dynamic"),
    ("onnxoptimizer", "fp16 (onnxconverter-common)"),
    ("onnx.compose.add_prefix", "onnxslim"),
    ("NNCF quantize", "onnxslim"),
    ("ORT session, extended", "NNCF quantize"),
]


def all_tools(all_chains: bool) -> list[Tool]:
    pairs = ([(a.name, b.name) for a in TOOLS for b in TOOLS if a is not b] if all_chains else CHAINS)
    return TOOLS + [chain(_tool(a), _tool(b)) for a, b in pairs]


def version_of(tool: Tool) -> str:
    out = []
    for p in dict.fromkeys(tool.packages):
        try:
            out.append(f"{p} {importlib.metadata.version(p)}")
        except importlib.metadata.PackageNotFoundError:
            out.append(f"{p} (not installed)")
    return ", ".join(out)


# ---------------------------------------------------------------- helpers

@contextlib.contextmanager
def quiet():  # type: ignore[no-untyped-def]
    """The tools' chatter (progress bars, ORT's warnings from C++) to a
    scratch file, at the descriptor level."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile() as sink, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def refill_payloads(model: onnx.ModelProto, seed: int = 0) -> int:
    """Seeded noise into initializers without a payload (the corpus dropped
    them: semmap reads none); returns how many."""
    from onnx import helper, numpy_helper
    data = ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data", "string_data")
    rng = np.random.default_rng(seed)
    filled = 0
    for t in model.graph.initializer:
        if any(t.HasField(f) if f == "raw_data" else len(getattr(t, f)) for f in data):
            continue
        if t.data_location == onnx.TensorProto.EXTERNAL:
            continue
        dtype = helper.tensor_dtype_to_np_dtype(t.data_type)
        shape = tuple(t.dims)
        values = (rng.standard_normal(shape) * 0.1).astype(dtype) if np.issubdtype(dtype, np.floating) \
            else np.zeros(shape, dtype)
        t.CopyFrom(numpy_helper.from_array(values, t.name))
        filled += 1
    return filled


class SemmapUnavailable(Exception):
    """The binary cannot be started (missing, being rebuilt): no measurement."""


def semmap_run(semmap: Path, *args: object) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run([str(semmap), *map(str, args)], capture_output=True, text=True, check=False)
    except OSError as e:
        raise SemmapUnavailable(f"{semmap}: {e}") from e
    if done.returncode in (126, 127):  # the shell's "cannot execute" and the loader's failures
        raise SemmapUnavailable(f"{semmap}: exit {done.returncode}: {done.stderr.strip()[:300]}")
    return done


def refusal(done: subprocess.CompletedProcess[str]) -> bool:
    """semmap's refusal of a manifest ("is of another model") or of a
    reference ("not the export")."""
    return done.returncode == 2 and ("is of another model" in done.stderr or "not the export" in done.stderr)


def sidecar(semmap: Path, model: Path, extra: list[str]) -> tuple[subprocess.CompletedProcess[str],
                                                                    dict[str, str | None] | None]:
    done = semmap_run(semmap, "sidecar", model, "--compact", *extra)
    if done.returncode != 0:
        return done, None
    return done, survival.answers_from_sidecar(done.stdout)


def snapshot(semmap: Path, into: Path, attempts: int = 30) -> Path:
    """A private copy of the semmap binary and the project's shared libraries
    it loads (found by ldd outside the system's directories), loaded through
    LD_LIBRARY_PATH (searched before the build tree's RUNPATH), so that a
    rebuild while the zoo runs does not change the binary under it. Retries
    while the build is writing the files."""
    last = ""
    for _ in range(attempts):
        try:
            lib = into / "lib"
            lib.mkdir(parents=True, exist_ok=True)
            ldd = subprocess.run(["ldd", str(semmap)], capture_output=True, text=True, check=True).stdout
            for row in ldd.splitlines():
                name, _, rest = row.strip().partition(" => ")
                path = rest.split(" (")[0]
                if path.startswith("/") and not path.startswith(("/lib", "/usr/", "/etc/")):
                    shutil.copy2(path, lib / name)
            binary = into / "semmap"
            shutil.copy2(semmap, binary)
            os.environ["LD_LIBRARY_PATH"] = os.pathsep.join(
                p for p in (str(lib), os.environ.get("LD_LIBRARY_PATH", "")) if p)
            if semmap_run(binary, "embed", "--help").returncode == 0:
                return binary
            last = "semmap embed --help failed"
        except (OSError, subprocess.CalledProcessError, SemmapUnavailable) as e:
            last = str(e)
        time.sleep(10)
    raise SemmapUnavailable(f"{semmap}: no runnable copy after {attempts} tries: {last}")


def embed_supports_scoped_names(semmap: Path) -> bool:
    return "--scoped-names" in semmap_run(semmap, "embed", "--help").stdout


def carried_truth(tool: Tool, outputs: list[Path], start: onnx.ModelProto, truth: dict, source: str,
                  manifest: dict) -> dict:
    """The truth of `start` (the embedded export) carried through each step's
    output: by position through a step that only renames, else matched (names,
    fusions) against the last file whose names were those of the truth, as
    check_record_survival.truth_for does for a name stripping."""
    owners = survival.owners_of(manifest)
    base, base_truth = start, truth
    prev, prev_truth = start, truth
    for step, out in zip(tool.steps, outputs):
        model = onnx.load(str(out), load_external_data=False)
        if step.renames:
            t = positional_truth(model, prev, prev_truth, source)
            base, base_truth = model, t
        else:
            t = matched_truth(model, base, base_truth, source, in_place_fusions=True, owners=owners)
        prev, prev_truth = model, t
    return prev_truth


def run_tool(tool: Tool, src: Path, dest: Path) -> list[Path]:
    """Each step in the output's directory as the working directory: some
    tools leave files there (quant_pre_process's sym_shape_infer_temp.onnx and
    its external data when it fails)."""
    outputs = []
    current = src
    cwd = os.getcwd()
    try:
        os.chdir(dest.parent)
        for k, step in enumerate(tool.steps):
            out = dest if k == len(tool.steps) - 1 else dest.with_name(f"{dest.stem}.step{k}.onnx")
            with quiet():
                step.run(current, out)
            outputs.append(out)
            current = out
    finally:
        os.chdir(cwd)
    return outputs


# ---------------------------------------------------------------- the metadata probe

def plant_probes(model: onnx.ModelProto, with_function: bool) -> onnx.ModelProto:
    """A copy with a marker in every place that can carry text."""
    from onnx import helper
    m = onnx.ModelProto()
    m.CopyFrom(model)
    m.doc_string = f"{PROBE} model doc_string"
    m.metadata_props.add(key=PROBE, value="model")
    m.graph.doc_string = f"{PROBE} graph doc_string"
    m.graph.metadata_props.add(key=PROBE, value="graph")
    for i, node in enumerate(all_nodes(m.graph)):
        node.doc_string = f"{PROBE} {i}"
        node.metadata_props.add(key=PROBE, value=str(i))
    if with_function:
        opset = next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
        m.functions.append(helper.make_function(PROBE_DOMAIN, "Probe", ["x"], ["y"],
                                                [helper.make_node("Identity", ["x"], ["y"])],
                                                [helper.make_opsetid("", opset)]))
        m.opset_import.append(helper.make_opsetid(PROBE_DOMAIN, 1))
    return m


def measure_probes(before: onnx.ModelProto, after: onnx.ModelProto, with_function: bool) -> dict:
    nodes_before = list(all_nodes(before.graph))
    nodes_after = list(all_nodes(after.graph))
    doc = {n.doc_string for n in nodes_after if n.doc_string.startswith(PROBE)}
    meta = {p.value for n in nodes_after for p in n.metadata_props if p.key == PROBE}
    torch_meta = lambda ns: sum(any(p.key.startswith("pkg.torch.onnx.") for p in n.metadata_props) for n in ns)
    names_before = {n.name for n in nodes_before if n.name}
    inits_before = {t.name for t in before.graph.initializer}
    return {
        "record": record_of(after) == record_of(before) and record_of(before) is not None,
        "model_metadata": any(p.key == PROBE and p.value == "model" for p in after.metadata_props),
        "model_doc": after.doc_string == before.doc_string,
        "producer": (after.producer_name, after.producer_version) == (before.producer_name, before.producer_version),
        "graph_name": after.graph.name == before.graph.name,
        "graph_doc": after.graph.doc_string == before.graph.doc_string,
        "graph_metadata": any(p.key == PROBE for p in after.graph.metadata_props),
        "node_doc": (len(doc), len(nodes_before)),
        "node_metadata": (len(meta), len(nodes_before)),
        "nodes_after": len(nodes_after),
        "exporter_metadata": (torch_meta(nodes_after), torch_meta(nodes_before)),
        "node_names": (len(names_before & {n.name for n in nodes_after}), len(names_before)),
        "initializer_names": (len(inits_before & {t.name for t in after.graph.initializer}), len(inits_before)),
        "value_info": (len(after.graph.value_info), len(before.graph.value_info)),
        "function": (any(f.domain == PROBE_DOMAIN for f in after.functions) if with_function else None),
    }


# ---------------------------------------------------------------- one job

@dataclass
class Prepared:
    source: str
    variant: str  # "plain" or "scoped"
    fixture: Path
    embedded: Path
    truth: dict  # of the embedded file
    refilled: int


@dataclass
class Result:
    source: str
    variant: str
    tool: str
    seconds: float = 0.0
    error: str = ""
    skipped: str = ""
    kept: bool = False
    provenance: str = ""
    provenance_note: str = ""
    known: int = 0
    correct_alone: int = 0
    correct_manifest: int = 0
    semmap_errors: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    names: dict = field(default_factory=dict)
    probe: dict | None = None
    probe_error: str = ""
    unavailable: str = ""  # semmap could not be run: nothing measured


def _known_names(model: onnx.ModelProto, params: set[str]) -> list[tuple[str, str]]:
    """The source's names a tool may build new ones from, longest first, with
    their kind (a parameter's name, another initializer's, a node's, a value's)."""
    kinds: dict[str, str] = {}
    for n in all_nodes(model.graph):
        for v in list(n.input) + list(n.output):
            kinds.setdefault(v, "value")
    for n in all_nodes(model.graph):
        if n.name:
            kinds[n.name] = "node"
    for t in model.graph.initializer:
        kinds[t.name] = "param" if t.name in params else "init"
    return sorted(((k, v) for k, v in kinds.items() if len(k) >= 4), key=lambda kv: -len(kv[0]))


def name_pattern(name: str, known: list[tuple[str, str]]) -> str:
    """`name` with the source's names in it (the longest first, twice at most)
    written as their kind (`<param>`, `<init>`, `<node>`, `<value>`) and the
    digits elsewhere as N: `q_output_bert.embeddings.word_embeddings.weight_1`
    -> `q_output_<param>_N`, `Conv_0_param0` -> `Conv_N_paramN`."""
    import re
    parts: list[str | tuple[str]] = [name]
    for _ in range(2):
        for k, (literal) in enumerate(parts):
            if not isinstance(literal, str):
                continue
            hit = next(((n, kind) for n, kind in known if n in literal), None)
            if hit:
                before, _, after = literal.partition(hit[0])
                parts[k:k + 1] = [before, (hit[1],), after]
                break
        else:
            break
    return "".join(f"<{p[0]}>" if isinstance(p, tuple) else re.sub(r"[0-9]+", "N", p) for p in parts)


def patterns(names: list[str], known: list[tuple[str, str]]) -> dict[str, list]:
    out: dict[str, list] = {}
    for n in names:
        entry = out.setdefault(name_pattern(n, known), [0, n])
        entry[0] += 1
    return out


def name_changes(before: onnx.ModelProto, after: onnx.ModelProto, params: set[str]) -> dict:
    nb = {n.name for n in all_nodes(before.graph) if n.name}
    na = list(all_nodes(after.graph))
    ib = {t.name for t in before.graph.initializer}
    ia = [t.name for t in after.graph.initializer]
    known = _known_names(before, params)
    return {
        "nodes": (len(list(all_nodes(before.graph))), len(na)),
        "node_names_kept": (len(nb & {n.name for n in na}), len(nb)),
        "inits_kept": (len(ib & set(ia)), len(ib)),
        "params_kept": (len(ib & set(ia) & params), len(ib & params)),
        "new_nodes": patterns([n.name or "(unnamed)" for n in na if n.name not in nb], known),
        "new_inits": patterns([n for n in ia if n not in ib], known),
        "gone_inits": [t.name for t in before.graph.initializer if t.name not in set(ia)][:2],
    }


def run_job(semmap: Path, prepared: Prepared, tool: Tool, work: Path, probe: bool) -> Result:
    warnings.filterwarnings("ignore")
    res = Result(prepared.source, prepared.variant, tool.name)
    job = Path(tempfile.mkdtemp(prefix="job-", dir=work))
    dest = job / "out.onnx"
    start = time.monotonic()
    try:
        outputs = run_tool(tool, prepared.embedded, dest)
    except Exception as e:  # a tool that cannot process this model says so
        res.seconds = time.monotonic() - start
        res.error = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:160] if str(e).strip() else ''}"
        return res
    res.seconds = time.monotonic() - start
    original = onnx.load(str(prepared.embedded), load_external_data=False)
    processed = onnx.load(str(dest), load_external_data=False)
    res.kept = record_of(processed) == record_of(original)
    manifest_path = prepared.fixture / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    res.names = name_changes(original, processed, set(survival.owners_of(manifest)))
    try:
        truth = carried_truth(tool, outputs, original, prepared.truth, prepared.source, manifest)
    except ValueError as e:
        res.error = f"truth not carried: {e}"
        return res

    def failed(what: str, done: subprocess.CompletedProcess[str]) -> None:
        message = done.stderr.strip().replace(f"{job}/", "").replace(f"{prepared.fixture.parent}/", "")
        if refusal(done):
            res.refusals.append(f"{what}: {message.splitlines()[-1][:400]}")
        else:
            res.semmap_errors.append(f"{what}: exit {done.returncode}: {message[:400]}")

    mapped = semmap_run(semmap, "map", dest, "--json", "--depth", "0")
    if mapped.returncode == 0:
        prov = json.loads(mapped.stdout)["provenance"]
        res.provenance, res.provenance_note = prov["record"], prov.get("note", "")
    else:
        res.provenance = f"exit {mapped.returncode}"
        failed("file alone (map)", mapped)
    done, alone = sidecar(semmap, dest, [])
    if alone is None and done.returncode != mapped.returncode:
        failed("file alone (sidecar)", done)
    done_m, with_manifest = sidecar(semmap, dest, ["--no-record", "--manifest", manifest_path])
    if with_manifest is None:
        failed("manifest alone", done_m)
    res.known, res.correct_alone = survival.score(alone, truth)
    _, res.correct_manifest = survival.score(with_manifest, truth)
    if probe:
        for with_function in (True, False):
            planted = plant_probes(original, with_function)
            probe_in = job / f"probe{int(with_function)}.onnx"
            onnx.save(planted, str(probe_in))
            try:
                run_tool(tool, probe_in, job / f"probe{int(with_function)}.out.onnx")
            except Exception as e:
                res.probe_error = f"{type(e).__name__} with the planted markers" + (
                    " and a local function" if with_function else "")
                continue
            res.probe = measure_probes(planted, onnx.load(str(job / f"probe{int(with_function)}.out.onnx"),
                                                          load_external_data=False), with_function)
            if with_function:
                res.probe_error = ""
            break
    return res


def _worker(args: tuple) -> Result:
    semmap, prepared, tool_name, work, probe, all_chains = args
    tool = next(t for t in all_tools(all_chains) if t.name == tool_name)
    try:
        return run_job(semmap, prepared, tool, work, probe)
    except SemmapUnavailable as e:
        return Result(prepared.source, prepared.variant, tool_name, unavailable=str(e))


# ---------------------------------------------------------------- preparation

def prepare(semmap: Path, fixtures: Path, source: str, work: Path, index: dict,
            scoped: str | None, full: bool) -> list[Prepared]:
    fixture = fixtures / source
    entry = index.get(source, {})
    model = onnx.load(str(fixture / "model.onnx"))
    refilled = refill_payloads(model) if entry.get("payloads_dropped") else 0
    plain_src = fixture / "model.onnx"
    if refilled:
        plain_src = work / f"{source}.weights.onnx"
        onnx.save(model, str(plain_src))
    truth = json.loads((fixture / "truth.json").read_text())
    manifest = fixture / "manifest.json"
    out = []
    embedded = work / f"{source}.plain.onnx"
    done = semmap_run(semmap, "embed", plain_src, "--manifest", manifest, "-o", embedded)
    if done.returncode != 0:
        raise SystemExit(f"check_tool_zoo: semmap embed {source}: exit {done.returncode}: {done.stderr.strip()}")
    out.append(Prepared(source, "plain", fixture, embedded, truth, refilled))
    # The scoped variant where it renames: a TorchScript export's node names
    # already are scopes (annotate --scoped-names leaves almost all of them).
    if scoped and (full or not source.endswith(".torchscript")):
        scoped_file = work / f"{source}.scoped.onnx"
        if scoped == "embed":
            done = semmap_run(semmap, "embed", plain_src, "--manifest", manifest, "-o", scoped_file, "--scoped-names")
        else:  # annotate --scoped-names, then embed the renamed file
            annotated = work / f"{source}.annotated.onnx"
            done = semmap_run(semmap, "annotate", plain_src, "--manifest", manifest, "-o", annotated,
                              "--scoped-names")
            if done.returncode == 0:
                done = semmap_run(semmap, "embed", annotated, "--manifest", manifest, "-o", scoped_file)
        if done.returncode != 0:
            print(f"{source} [scoped]: semmap failed, exit {done.returncode}: {done.stderr.strip()[:300]}")
        else:
            renamed = onnx.load(str(scoped_file), load_external_data=False)
            t = positional_truth(renamed, onnx.load(str(plain_src), load_external_data=False), truth, source)
            out.append(Prepared(source, "scoped", fixture, scoped_file, t, refilled))
    return out


# ---------------------------------------------------------------- reporting

def pct(num: int, den: int) -> str:
    return f"{100 * num / den:.2f}%" if den else "–"


def frac(pairs: list[tuple[int, int]]) -> str:
    num, den = sum(p[0] for p in pairs), sum(p[1] for p in pairs)
    return f"{pct(num, den)} ({num}/{den})" if den else "–"


def line(r: Result) -> str:
    head = f"{r.source} [{r.variant}] / {r.tool}"
    if r.unavailable:
        return f"{head}: not measured: {r.unavailable}"
    if r.skipped:
        return f"{head}: skipped ({r.skipped})"
    if r.error:
        return f"{head}: the tool failed ({r.seconds:.1f}s): {r.error}"
    n = r.names
    parts = [f"record {'kept' if r.kept else 'LOST'}, {r.provenance or '?'}",
             f"file alone {r.correct_alone}/{r.known} ({pct(r.correct_alone, r.known)})",
             f"manifest alone {r.correct_manifest}/{r.known} ({pct(r.correct_manifest, r.known)})",
             f"nodes {n['nodes'][0]}->{n['nodes'][1]}, names kept {n['node_names_kept'][0]}/{n['node_names_kept'][1]}, "
             f"initializers kept {n['inits_kept'][0]}/{n['inits_kept'][1]}",
             f"{r.seconds:.1f}s"]
    text = f"{head}: " + "; ".join(parts)
    if r.kept and r.provenance == "rejected":
        text += f"\n  RECORD REJECTED: {r.provenance_note}"
    for x in r.refusals:
        text += f"\n  REFUSED: {x}"
    for x in r.semmap_errors:
        text += f"\n  semmap error: {x}"
    return text


def markdown(results: list[Result], tools: list[Tool], header: str) -> str:
    out = [header, ""]
    out.append("| tool | version | computes with the weights | variant | files | record kept | record used "
               "| record rejected | nodes known | accuracy, file alone | accuracy, manifest alone | refusals "
               "| tool errors | tool time |")
    out.append("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    variants = sorted({r.variant for r in results}, key=lambda v: v != "plain")
    for tool in tools:
        for variant in variants:
            rs = [r for r in results if r.tool == tool.name and r.variant == variant and not r.skipped]
            if not rs:
                continue
            ok = [r for r in rs if not r.error]
            kept = sum(r.kept for r in ok)
            used = sum(r.provenance in ("used", "source") for r in ok)
            rejected = sum(r.kept and r.provenance == "rejected" for r in ok)
            known = sum(r.known for r in ok)
            alone = sum(r.correct_alone for r in ok)
            man = sum(r.correct_manifest for r in ok)
            refusals = sum(len(r.refusals) for r in ok)
            errors = ", ".join(f"{r.source}: {r.error.split(':')[0]}" for r in rs if r.error) or "–"
            weights = "yes" if tool.needs_weights else "–"
            out.append(f"| {tool.name} | {version_of(tool)} | {weights} | {variant} | {len(ok)} | {kept} of {len(ok)} "
                       f"| {used} of {len(ok)} | {rejected} | {known} | {pct(alone, known)} | {pct(man, known)} "
                       f"| {refusals} | {errors} | {sum(r.seconds for r in rs):.1f} s |")
    probes = [r for r in results if r.probe is not None or r.probe_error]
    if probes:
        out += ["", f"What survives each tool (a marker planted in every place that carries text, on "
                f"{', '.join(PROBE_SOURCES)} unless --probe-all; model and graph fields: files that kept it; node "
                "fields: nodes of the tool's output carrying their marker / nodes of the export, and the output's "
                "node count; exporter node metadata: nodes with `pkg.torch.onnx.*` entries after / before):", ""]
        out.append("| tool | model metadata_props (record) | model doc_string | producer | graph name "
                   "| graph doc_string | graph metadata_props | node doc_string | node metadata_props "
                   "| exporter node metadata (dynamo) | node names | initializer names | value_info (after/before) "
                   "| local functions |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for tool in tools:
            rs = [r for r in probes if r.tool == tool.name and r.probe is not None]
            if not rs:
                continue
            ps = [r.probe for r in rs]
            yes = lambda k: f"{sum(bool(p[k]) for p in ps)} of {len(ps)}"
            fn = [p["function"] for p in ps if p["function"] is not None]
            fn_text = f"{sum(fn)} of {len(fn)}" if fn else "tool failed with one"
            vi = f"{sum(p['value_info'][0] for p in ps)}/{sum(p['value_info'][1] for p in ps)}"
            after = sum(p["nodes_after"] for p in ps)
            cells = [tool.name, yes("record"), yes("model_doc"), yes("producer"), yes("graph_name"), yes("graph_doc"),
                     yes("graph_metadata"), f"{frac([p['node_doc'] for p in ps])}, {after} after",
                     f"{frac([p['node_metadata'] for p in ps])}, {after} after",
                     frac([p["exporter_metadata"] for p in ps]), frac([p["node_names"] for p in ps]),
                     frac([p["initializer_names"] for p in ps]), vi, fn_text]
            out.append("| " + " | ".join(cells) + " |")
        for r in probes:
            if r.probe_error:
                out.append(f"\n{r.tool} on {r.source}: {r.probe_error}" + (
                    " (probed again without the function)" if r.probe is not None else ""))
    out += ["", "What each tool does to names (plain variant, all sources; a new name written with the source's "
            "names in it as their kind: `<param>` a parameter's initializer, `<init>` another initializer, "
            "`<node>` a node, `<value>` a value; other digits N; count and one example):", ""]
    out.append("| tool | nodes (before → after) | node names kept | initializer names kept | parameter names kept "
               "| new node names | new initializer names | initializers gone (examples) |")
    out.append("|---|---:|---:|---:|---:|---|---|---|")
    for tool in tools:
        rs = [r for r in results if r.tool == tool.name and r.variant == "plain" and r.names]
        if not rs:
            continue
        before = sum(r.names["nodes"][0] for r in rs)
        after = sum(r.names["nodes"][1] for r in rs)

        def top(key: str) -> str:
            merged: dict[str, list] = {}
            for r in rs:
                for pattern, (count, example) in r.names[key].items():
                    entry = merged.setdefault(pattern, [0, example])
                    entry[0] += count
            best = sorted(merged.items(), key=lambda kv: -kv[1][0])[:8]
            more = len(merged) - len(best)
            return ("<br>".join(f"`{p}` ×{c} (`{e}`)" for p, (c, e) in best)
                    + (f"<br>{more} more patterns" if more > 0 else "")) or "–"
        gone = "; ".join(dict.fromkeys(f"`{g}`" for r in rs for g in r.names["gone_inits"][:1])) or "–"
        out.append(f"| {tool.name} | {before} → {after} | {frac([r.names['node_names_kept'] for r in rs])} "
                   f"| {frac([r.names['inits_kept'] for r in rs])} | {frac([r.names['params_kept'] for r in rs])} "
                   f"| {top('new_nodes')} | {top('new_inits')} | {gone} |")
    return "\n".join(out)


def failures_of(results: list[Result]) -> tuple[list[str], list[str]]:
    """(failures the zoo gates, findings it only reports)."""
    fail, note = [], []
    for r in results:
        if r.skipped or r.error:
            continue
        where = f"{r.source} [{r.variant}] / {r.tool}"
        for x in r.refusals:
            what = "manifest" if x.startswith("manifest") else "record"
            fail.append(f"{where}: semmap refused the right {what}: {x}")
        for x in r.semmap_errors:
            if not any(f"exit {c}:" in x for c in (1, 2)):
                fail.append(f"{where}: semmap died: {x}")
            elif r.kept and x.startswith("file alone"):
                fail.append(f"{where}: semmap failed on a file whose record the tool kept: {x}")
        if not r.kept and not any(d in r.tool.split(", then ") for d in DROPS):
            fail.append(f"{where}: the record did not survive (a tool not in DROPS)")
        if r.kept and r.correct_alone < r.correct_manifest:
            fail.append(f"{where}: the record was kept ({r.provenance}) and the file alone maps {r.correct_alone} of "
                        f"{r.known} right, the manifest alone {r.correct_manifest}"
                        + (f": {r.provenance_note}" if r.provenance == "rejected" else ""))
        elif r.kept and r.provenance == "rejected":
            note.append(f"{where}: the right record was rejected (the file maps as well without it): "
                        f"{r.provenance_note}")
    return fail, note


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("semmap")
    ap.add_argument("fixtures")
    ap.add_argument("--markdown", action="store_true", help="print the tables after the per-file lines")
    ap.add_argument("--markdown-file", help="also write the tables to this file")
    ap.add_argument("--report-only", action="store_true", help="exit 0 whatever is found (the C++ is in progress)")
    ap.add_argument("--only", action="append", default=[], help="run only the tools whose name contains this")
    ap.add_argument("--source", action="append", default=[], help="a fixture directory of the torch-2.15 slice "
                    "(default: the representative subset)")
    ap.add_argument("--all-chains", action="store_true", help="every ordered pair of the zoo's tools as a chain")
    ap.add_argument("--no-chains", action="store_true")
    ap.add_argument("--no-probe", action="store_true", help="skip the metadata probe")
    ap.add_argument("--probe-all", action="store_true", help="probe on every source, not PROBE_SOURCES")
    ap.add_argument("--full", action="store_true", help="run slow tools on every source too")
    ap.add_argument("--scoped-via-annotate", action="store_true",
                    help="when `semmap embed` has no --scoped-names, make the scoped variant with "
                         "`semmap annotate --scoped-names`, then `semmap embed`")
    ap.add_argument("--no-snapshot", action="store_true",
                    help="run SEMMAP itself, not a private copy taken at the start")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    args = ap.parse_args()
    given = Path(args.semmap).resolve()
    fixtures = Path(args.fixtures).resolve() / "torch-2.15"
    index = {f["dir"]: f for f in json.loads((fixtures / "index.json").read_text())["fixtures"]}
    sources = args.source or SOURCES
    tools = all_tools(args.all_chains)
    if args.no_chains:
        tools = TOOLS
    if args.only:
        tools = [t for t in tools if any(o in t.name for o in args.only)]
    snap = tempfile.TemporaryDirectory(prefix="semmap-zoo-bin-")
    try:
        semmap = given if args.no_snapshot else snapshot(given, Path(snap.name))
    except SemmapUnavailable as e:
        print(f"check_tool_zoo: semmap could not be run: {e}", file=sys.stderr)
        return 2
    version = semmap_run(semmap, "--version").stdout.strip()
    scoped = "embed" if embed_supports_scoped_names(semmap) else ("annotate" if args.scoped_via_annotate else None)
    print(f"check_tool_zoo: scoped variant: "
          + {"embed": "`semmap embed --scoped-names`", "annotate": "`semmap annotate --scoped-names`, then embed",
             None: "none (`semmap embed` has no --scoped-names; --scoped-via-annotate makes one)"}[scoped])
    warnings.filterwarnings("ignore")
    started = time.monotonic()
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="semmap-zoo-") as tmp:
        work = Path(tmp)
        prepared: list[Prepared] = []
        for source in sources:
            try:
                made = prepare(semmap, fixtures, source, work, index, scoped, args.full)
            except SemmapUnavailable as e:
                print(f"check_tool_zoo: semmap could not be run: {e}", file=sys.stderr)
                return 2
            for p in made:
                prepared.append(p)
                if p.variant == "plain" and p.refilled:
                    print(f"{source}: {p.refilled} initializers without payload given seeded noise")
        jobs = []
        for p in prepared:
            for tool in tools:
                if tool.only and not args.full and p.source not in tool.only:
                    results.append(Result(p.source, p.variant, tool.name, skipped=tool.only_reason))
                    continue
                probe = (not args.no_probe and p.variant == "plain" and tool.name in BY_NAME
                         and (args.probe_all or p.source in PROBE_SOURCES))
                jobs.append((semmap, p, tool.name, work, probe, args.all_chains))
        if args.jobs > 1:
            import multiprocessing
            with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
                for r in pool.map(_worker, jobs):
                    results.append(r)
                    print(line(r), flush=True)
        else:
            for j in jobs:
                r = _worker(j)
                results.append(r)
                print(line(r), flush=True)
    elapsed = time.monotonic() - started
    unavailable = next((r.unavailable for r in results if r.unavailable), "")
    results = [r for r in results if not r.unavailable]
    order = {t.name: k for k, t in enumerate(tools)}
    results.sort(key=lambda r: (order.get(r.tool, 0), sources.index(r.source), r.variant))
    header = (f"check_tool_zoo: {version}, {len(sources)} sources ({', '.join(sources)}), {len(tools)} tools and "
              f"chains, {elapsed:.0f} s with {args.jobs} jobs")
    table = markdown(results, tools, header)
    if not args.markdown:
        print(header)
    if args.markdown:
        print(table)
    if args.markdown_file:
        Path(args.markdown_file).write_text(table + "\n")
    failures, notes = failures_of(results)
    for f in notes:
        print(f"check_tool_zoo: note: {f}", file=sys.stderr)
    for f in failures:
        print(f"check_tool_zoo: FAIL: {f}", file=sys.stderr)
    if unavailable:
        print(f"check_tool_zoo: semmap could not be run (rebuilt while this ran?): {unavailable}; run again",
              file=sys.stderr)
        return 2
    if failures and args.report_only:
        print(f"check_tool_zoo: {len(failures)} findings (--report-only: not failing)", file=sys.stderr)
        return 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
