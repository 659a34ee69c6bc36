"""semmap: which PyTorch / HuggingFace module produced each ONNX node.

    >>> import semmap
    >>> m = semmap.load("model.onnx", "manifest.json")
    >>> m.module_for("/bert/encoder/layer.0/attention/self/query/MatMul").module
    'bert.encoder.layer.0.attention.self.query'
    >>> for mapping in m:                      # one Mapping per node
    ...     print(mapping.node, mapping.module, mapping.confidence)
    >>> m.nodes(module="bert.encoder.layer.1", subtree=True)   # node ids
    >>> m.layer(0), m.by_class("Linear"), m.by_category("attention"), m.below(0.9)

The mapping is libsemmap's (C++), the same as the `semmap` command's, which
``pip install semmap`` also puts on PATH. The manifest (``manifest.json``,
written by :mod:`semmap.manifest` or ``semmap-manifest``) is optional: without it module
paths come from the node names and the exporter's metadata, with lower
confidence and no class names.

Errors are Python exceptions carrying libsemmap's message, which names the
file and the cause: FileNotFoundError (missing file), ValueError (malformed
input, a manifest of another model, a reference that is not the export the
model came from), KeyError (no such node, module, class or layer),
PermissionError (output not writable).

``semmap.manifest`` writes manifests and :func:`export` exports a model and
maps it in one call; both need PyTorch (``pip install 'semmap[torch]'``).
:func:`compare_numerics` runs a model and its deployed copy with ONNX Runtime
and ranks the modules by the error they add (``pip install
'semmap[onnxruntime]'``); :func:`nodes_to_exclude` turns modules into the node
names ONNX Runtime's quantizers keep in float.
``import semmap`` itself needs neither PyTorch, ONNX Runtime nor, until the
first call that maps, the compiled core.
"""

from __future__ import annotations

import importlib
import json
import os
from types import ModuleType
from typing import TYPE_CHECKING, Any, Iterator, Union

from ._strategy import Strategy
from ._version import __version__

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Mapping as _MappingABC, Sequence

    import pandas
    import torch

    from . import _core
    from ._core import CONFIDENT_FLOOR, Mapping
    from .types import Diff, Sidecar, Tree

__all__ = ["CONFIDENT_FLOOR", "MappedModel", "Mapping", "Strategy", "compare_numerics", "diff", "export",
           "load", "nodes_to_exclude", "__version__"]

PathLike = Union[str, "os.PathLike[str]"]


def _core_module() -> ModuleType:
    """The compiled core, imported on first use so that ``semmap.manifest``
    works where only the Python sources are (a source checkout)."""
    try:
        return importlib.import_module("semmap._core")
    except ImportError as e:
        raise ImportError(
            f"semmap's compiled core (semmap._core) cannot be imported ({e}); "
            "install the built package: pip install semmap (or `pip install .` in a source checkout)"
        ) from e


def __getattr__(name: str) -> Any:
    # PEP 562: `semmap.Mapping` and `from semmap import Mapping` load the core.
    # CONFIDENT_FLOOR: confidence at and above which an answer counts as confident.
    if name in ("Mapping", "CONFIDENT_FLOOR"):
        return getattr(_core_module(), name)
    if name == "_core":
        return _core_module()
    if name in ("NumericsReport", "NumericsError"):
        return getattr(importlib.import_module("semmap.numerics"), name)
    raise AttributeError(f"module 'semmap' has no attribute {name!r}")


def _path(p: PathLike | None) -> str:
    """A path for Python code (str); ValueError for an empty one or one with
    a NUL byte, as Python's own file functions."""
    if p is None:
        return ""
    path = os.fsdecode(p)
    if not path:
        raise ValueError("empty path")
    if "\0" in path:
        raise ValueError("embedded null byte")
    return path


def _core_path(p: PathLike | bytes | None) -> bytes:
    """A path for the compiled core: the file system's bytes (os.fsencode),
    so that a name that is not UTF-8 (bytes, or str with surrogate escapes)
    reaches the file as the command-line tool would; ValueError for an empty
    path or one with a NUL byte, which C would silently cut short."""
    if p is None:
        return b""
    return os.fsencode(_path(p))


def load(
    model: PathLike,
    manifest: PathLike | None = None,
    *,
    reference: PathLike | None = None,
    rules: PathLike | None = None,
    allow_manifest_mismatch: bool = False,
    use_record: bool = True,
) -> "MappedModel":
    """Loads an ONNX model and maps every node to its module.

    model: the ONNX file. manifest: its hierarchy manifest (JSON written by
    semmap-manifest), or None. reference: the unprocessed export the model
    was made from (before onnxslim, ONNX Runtime's optimizers,
    quantize_dynamic, name stripping), or None. rules: a rule file replacing
    the built-in rules (docs/rules.md), or None. allow_manifest_mismatch: map
    even with a manifest that does not fit the graph (refused by default: its
    answers would look complete and be wrong). use_record: use the
    provenance record the model carries (:func:`embed`, docs/record.md) when
    neither a manifest nor a reference is given; ``MappedModel.provenance``
    says what was used.

    The model and the manifest are read on two threads with the GIL
    released. Raises FileNotFoundError for a missing file and ValueError for
    a malformed one, a manifest of another model or a wrong reference; the
    message names the file.
    """
    core = _core_module().Model.load(
        _core_path(model),
        _core_path(manifest),
        _core_path(reference),
        _core_path(rules),
        allow_manifest_mismatch,
        use_record,
    )
    return MappedModel(core)


def embed(
    model: "MappedModel | PathLike",
    out_path: PathLike,
    *,
    manifest: PathLike | None = None,
    source: "MappedModel | PathLike | None" = None,
    allow_overwrite: bool = False,
) -> dict[str, Any]:
    """Writes a copy of `model` that carries its own provenance record (`semmap embed`).

    The record holds the manifest, a weightless copy of the export's graph and its
    mapping, in one model-level metadata entry that onnxslim, ONNX Runtime's
    optimizers and quantizers and fp16 converters keep: a processed copy of the
    written file then maps with no other file (``semmap.load(processed)``).
    model: the plain export (a path, mapped with `manifest`, or a MappedModel
    loaded with its manifest). source: the export a processed `model` was made
    from, when the record should describe that one instead (a path mapped with
    `manifest`, or a MappedModel). Returns the counts (``record_bytes``,
    ``nodes``, ``fingerprint``...). Never overwrites an input unless
    allow_overwrite; ValueError when there is no manifest or `model` is not a
    processed copy of `source`.
    """
    target = model.path if isinstance(model, MappedModel) else _path(model)
    described = _as_model(source if source is not None else model, manifest)
    result = json.loads(described._core.embed(_core_path(target), _core_path(out_path),
                                              allow_overwrite))
    return result


class MappedModel:
    """A mapped ONNX model: one Mapping per node, and the queries of `semmap query`.

    Owns the graph, the manifest and the mapping together; Mapping objects
    keep it alive. Iterating yields every node's Mapping in graph order;
    ``m[node]`` takes a node id or name (KeyError if absent) or an index.
    Query methods return node ids (``Mapping.node``), in graph order, which
    are the node names for every node whose name is non-empty and unique.
    """

    __slots__ = ("_core",)

    def __init__(self, core: "_core.Model") -> None:
        self._core = core

    # -- nodes ------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._core)

    def __iter__(self) -> Iterator["Mapping"]:
        return iter(self._core)

    def __getitem__(self, node: str | int) -> "Mapping":
        if isinstance(node, int):
            return self._core.mapping(node)
        return self._core.module_for(node)

    def __contains__(self, node: object) -> bool:
        return isinstance(node, str) and self._core.has_node(node)

    def module_for(self, node: str) -> "Mapping":
        """The Mapping of the node with this id or unique name; KeyError otherwise."""
        return self._core.module_for(node)

    # -- queries (the `semmap query` options) -------------------------------
    def nodes(self, module: str | None = None, *, subtree: bool = False) -> list[str]:
        """Ids of the nodes mapped to `module` ('' is the root); with subtree=True also
        to its descendants. Without a module: every node id. KeyError when the
        manifest has no such module."""
        if module is None:
            return [m.node for m in self._core]
        return self._core.nodes_of_module(module, subtree)

    def layer(self, n: int, container: str | None = None) -> list[str]:
        """Ids of the nodes of layer `n` (whole subtree) of every layer container
        (`bert.encoder.layer`, `model.layers`, T5's encoder and decoder blocks), or of
        the repeated container at `container`. KeyError when there is no such layer,
        ValueError for a negative n."""
        return self._core.nodes_of_layer(n, container)

    def layers(self) -> list[tuple[str, int]]:
        """The layer containers: (module path, number of items)."""
        return self._core.layer_containers()

    def by_class(self, cls: str) -> list[str]:
        """Ids of the nodes mapped to modules of class `cls` ('Linear' or
        'torch.nn.modules.linear.Linear'). KeyError when no module has that class."""
        return self._core.nodes_of_class(cls)

    def by_category(self, category: str) -> list[str]:
        """Ids of the nodes of modules of a semantic category ('attention',
        'projection', 'normalization', ...). An empty list is not an error."""
        return self._core.nodes_of_category(category)

    def below(self, confidence: float) -> list[str]:
        """Ids of the nodes mapped with confidence strictly below `confidence`
        (unmapped nodes included)."""
        return self._core.nodes_below(confidence)

    def matching(self, pattern: str) -> list[str]:
        """Ids of the nodes whose module path contains a match of the RE2 `pattern`."""
        return self._core.nodes_matching(pattern)

    # -- whole-model views --------------------------------------------------
    def tree(self, *, model_specific: bool = False) -> "Tree":
        """The module tree as `semmap tree --json` / the sidecar's "tree" member:
        {"modules": [{path, class, own_nodes, ...}], "unmapped_nodes", "view"}, in
        dicts and lists built by the compiled core (typed by semmap.types.Tree)."""
        return self._core.tree(model_specific)

    def sidecar(self, *, model_specific: bool = False) -> "Sidecar":
        """The sidecar document (`semmap sidecar`; schema/sidecar.schema.json) as a dict
        (typed by semmap.types.Sidecar): the file's own JSON text, parsed, so that it
        is the file's content by construction."""
        return json.loads(self._core.sidecar_json(model_specific))

    def write_sidecar(
        self, path: PathLike, *, model_specific: bool = False, allow_overwrite: bool = False
    ) -> None:
        """Writes the sidecar JSON to `path` atomically; refuses the model or manifest
        file unless allow_overwrite."""
        self._core.write_sidecar(_core_path(path), model_specific, allow_overwrite)

    def annotate(
        self,
        out_path: PathLike,
        *,
        allow_overwrite: bool = False,
        namespace: bool = True,
        overwrite_namespace: bool = False,
        doc_string: bool = False,
        scoped_names: bool = False,
        min_confidence: float | None = None,
    ) -> dict[str, int | str]:
        """Writes a copy of the model whose nodes carry module@semmap, class@semmap,
        confidence@semmap, strategy@semmap, category@semmap metadata_props and a
        `namespace` (`semmap annotate`); returns the counts. The model file is never
        overwritten unless allow_overwrite. scoped_names renames nodes mapped with
        confidence >= min_confidence (default CONFIDENT_FLOOR) to TorchScript-style
        scopes (docs/annotate.md)."""
        if min_confidence is None:
            min_confidence = _core_module().CONFIDENT_FLOOR
        result = self._core.annotate(
            _core_path(out_path),
            allow_overwrite,
            namespace,
            overwrite_namespace,
            doc_string,
            scoped_names,
            min_confidence,
        )
        result["output"] = os.fsdecode(result["output"])
        return result

    def report(self, path: PathLike, *, allow_overwrite: bool = False,
               numerics: PathLike | None = None) -> dict[str, int | str]:
        """Writes the self-contained HTML report (`semmap report`) to `path`; returns
        what `semmap report` prints, as annotate() does: output, modules, nodes, mapped.
        numerics: a `semmap compare-numerics --json` document of this model (`--numerics`),
        which adds the numerics tab."""
        self._core.write_report(_core_path(path), allow_overwrite,
                                b"" if numerics is None else _core_path(numerics))
        return {
            "output": os.fsdecode(path),
            "modules": self._core.module_count,
            "nodes": len(self),
            "mapped": self.mapped_count,
        }

    def to_pandas(self) -> "pandas.DataFrame":
        """One row per node: node, op_type, module, class_name, qualified_class,
        category, confidence, strategy, evidence. Needs pandas (`pip install
        semmap[pandas]`)."""
        try:
            import pandas
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("MappedModel.to_pandas() needs pandas: pip install pandas") from e
        return pandas.DataFrame(self._core.columns())

    # -- facts ----------------------------------------------------------------
    @property
    def path(self) -> str:
        """The model file."""
        return os.fsdecode(self._core.model_path)

    @property
    def manifest_path(self) -> str | None:
        return os.fsdecode(self._core.manifest_path) or None

    @property
    def reference_path(self) -> str | None:
        return os.fsdecode(self._core.reference_path) or None

    @property
    def has_manifest(self) -> bool:
        return self._core.has_manifest

    @property
    def model_class(self) -> str:
        """The manifest's model class ('' without a manifest)."""
        return self._core.model_class

    @property
    def mapped_count(self) -> int:
        """Nodes with a module (confidence > 0)."""
        return self._core.mapped_count

    @property
    def strategy_counts(self) -> dict[str, int]:
        """Nodes per strategy name."""
        return self._core.strategy_counts

    @property
    def manifest_fit(self) -> dict[str, Any]:
        """How well the manifest fits the graph.

        Keys: ``verdict`` ("fits", "fits, with notes", "misfit", "not checked"),
        ``fits``, ``checked``, ``evidence`` (one line), ``notes`` (a list of
        dicts ``reason``, ``count``, ``nodes``, ``example``, ``text``: names the
        manifest does not have literally, and why: ``reused_call``,
        ``folded_by_exporter``, ``stored_reshaped``, ``created_in_forward``,
        ``outside_manifest_root``) and the counts of the C++ ``ManifestFit``.
        """
        return json.loads(self._core.manifest_fit_json)

    @property
    def graph_kind(self) -> str:
        """What the graph's names and ops leave to inference, as the mapper reads
        it: ``"named"``, ``"unnamed"`` (names stripped, or metadata dropped by a
        tool) or ``"quantized"``; the rule file's confidence calibration may
        differ per kind (``SemanticMapper::graphKind()``, docs/rules.md)."""
        return self._core.graph_kind

    @property
    def provenance(self) -> dict[str, Any]:
        """Where the manifest and the reference came from (``"file"``, ``"record"``,
        ``"none"``) and what became of the model's provenance record
        (``record``: ``"absent"``, ``"used"``, ``"source"``, ``"ignored"``,
        ``"rejected"``, with ``note`` saying why), as ``semmap map --json``'s
        ``provenance``."""
        return json.loads(self._core.provenance_json)

    @property
    def reference_check(self) -> dict[str, Any] | None:
        """What the reference export (``reference=``, or the graph of the model's
        provenance record) is to the model, or None without one (``semmap map
        --json``'s ``reference_check``).

        Keys: ``ancestor`` (it looks like the export the model was made from),
        ``warnings`` (one sentence per finding), the findings ``same_graph``
        (the model itself: not used), ``other_exporter``, ``few_paired``,
        ``less_informed`` (a copy naming fewer module scopes), the counts
        behind them and ``own_answers_kept`` (nodes given their own answer
        instead of a less confident carried-over one).
        """
        if self.reference_path is None and self.provenance["reference"] == "none":
            return None
        return json.loads(self._core.reference_check_json)

    def __repr__(self) -> str:
        manifest = f", manifest={self.manifest_path!r}" if self.manifest_path else ""
        cls = f" {self.model_class}" if self.model_class else ""
        return (
            f"<semmap.MappedModel {self.path!r}{manifest}:{cls} {len(self)} nodes, "
            f"{self.mapped_count} mapped>"
        )


def export(
    model: "torch.nn.Module",
    inputs: "_MappingABC[str, torch.Tensor] | Sequence[torch.Tensor] | torch.Tensor",
    path: PathLike,
    *,
    exporter: str = "dynamo",
    manifest: PathLike | None = None,
    opset: int | None = None,
    dynamic: bool = True,
    vmap_free_masks: bool | None = None,
    record: bool = True,
) -> MappedModel:
    """Exports a PyTorch model to ONNX, writes its manifest, and returns it mapped.

    model: a torch.nn.Module (a HuggingFace model or any other), in the mode
    to export (call model.eval() first). inputs: example inputs, a dict of
    keyword arguments of forward (``tokenizer(...)`` output works), a tuple of
    positional ones, or one tensor. path: the ONNX file to write.
    exporter: "dynamo" (``torch.onnx.export(dynamo=True)``, torch's default)
    or "torchscript" (``dynamo=False``, opset 17 unless `opset`). manifest:
    where to write the manifest, by default next to the model
    (``model.onnx`` -> ``model.manifest.json``); an existing file there is
    replaced only if it is a semmap manifest. dynamic: declare the batch axis
    (and the sequence axis of token inputs) dynamic. vmap_free_masks: use
    Optimum's vmap-free attention masks while exporting; None (default)
    retries with them when a transformers model's export fails where the
    installed transformers needs them (4.53 to 4.x: causal LMs, Whisper) and Optimum is installed.
    record: also write the provenance record into the ONNX file (:func:`embed`), so
    that copies processed by onnxslim, ONNX Runtime or a quantizer map with no
    other file.

    Both files are written atomically: a failed export leaves them as they
    were, and the manifest is written only after the export succeeded. The
    ONNX file is one self-contained file, which protobuf limits to 2 GB; for
    a larger model call torch.onnx.export with external data yourself, then
    semmap.manifest.write_manifest and load.
    Needs PyTorch (``pip install 'semmap[torch]'``); raises what the exporter
    raises, and what :func:`load` raises.
    """
    from .manifest._export import export_with_manifest

    manifest_path = export_with_manifest(
        model,
        inputs,
        _path(path),
        manifest=_path(manifest) if manifest is not None else None,
        exporter=exporter,  # type: ignore[arg-type]
        opset=opset,
        dynamic=dynamic,
        vmap_free_masks=vmap_free_masks,
    )
    mapped = load(path, manifest_path)
    if not record:
        return mapped
    # The export just written gets its record in place (atomically).
    mapped._core.embed(b"", _core_path(path), True)
    return load(path, manifest_path)


def _as_model(m: "MappedModel | PathLike", manifest: PathLike | None) -> MappedModel:
    if isinstance(m, MappedModel):
        return m
    return load(m, manifest)


def diff(
    a: "MappedModel | PathLike",
    b: "MappedModel | PathLike",
    *,
    manifest: PathLike | None = None,
    manifest_b: PathLike | None = None,
    all_modules: bool = False,
    min_module_overlap: float = 0.10,
    require_same_model_class: bool = True,
) -> "Diff":
    """Compares two exports of one model module by module (`semmap diff --json`).

    a, b: MappedModel objects or model paths (mapped with `manifest`, and B with
    `manifest_b` or else `manifest`). Returns the "semmap.diff" document: module
    overlap, changed modules (all with all_modules=True), moved nodes, fusions, removed
    nodes, as dicts and lists typed by semmap.types.Diff. ValueError when the models
    look unrelated.
    """
    ma = _as_model(a, manifest)
    mb = _as_model(b, manifest_b if manifest_b is not None else manifest)
    return _core_module().diff(
        ma._core, mb._core, all_modules, min_module_overlap, require_same_model_class
    )


def nodes_to_exclude(
    model: "MappedModel | PathLike",
    modules: "str | Sequence[str]",
    *,
    manifest: PathLike | None = None,
) -> list[str]:
    """The names of the nodes of `modules` and of everything below them (subtree
    semantics, as ``m.nodes(module, subtree=True)``), in graph order: what ONNX
    Runtime's ``quantize_dynamic`` / ``quantize_static`` take as
    ``nodes_to_exclude`` to keep those modules in float.

    model: the float model you are about to quantize (a MappedModel, or a path
    mapped with `manifest`). The quantizers match node *names*, so nodes without
    a name are left out. ``quantize_dynamic`` first rewrites each Gemm into
    nodes named ``<name>_MatMul``, ``<name>_Add`` and ``<name>_Transpose`` and
    matches those (a Gemm's own name would exclude nothing): a Gemm's entry is
    followed by them. KeyError for a module the manifest does not have.
    """
    m = _as_model(model, manifest)
    if isinstance(modules, str):
        modules = [modules]
    wanted: set[str] = set()
    for module in modules:
        wanted.update(m.nodes(module, subtree=True))
    names: dict[str, None] = {}
    for mp in m:
        if mp.node in wanted and mp.name:
            names.setdefault(mp.name, None)
            if mp.op_type == "Gemm" and not mp.domain:
                for suffix in ("_MatMul", "_Add", "_Transpose"):
                    names.setdefault(mp.name + suffix, None)
    return list(names)


def compare_numerics(reference: "MappedModel | PathLike", deployed: "MappedModel | PathLike",
                     **options: Any) -> Any:
    """Runs `reference` (an export) and `deployed` (a copy made from it) with ONNX
    Runtime on the same inputs and ranks the modules by the error they add
    (`semmap compare-numerics`); returns a semmap.numerics.NumericsReport. The
    options and the errors: :func:`semmap.numerics.compare_numerics`. Needs
    onnxruntime, onnx and numpy (``pip install 'semmap[onnxruntime]'``)."""
    try:
        from .numerics import compare_numerics as run
    except ImportError as e:
        raise ImportError(f"semmap.compare_numerics needs ONNX Runtime, onnx and numpy: "
                          f"pip install 'semmap[onnxruntime]' ({e})") from e
    return run(reference, deployed, **options)
