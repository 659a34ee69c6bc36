"""Ground truth (ONNX node -> module path) derived from the exporters' own records.

Three derivations, each resolved against the real model object:

* :func:`torchscript_truth` reads the module scope in TorchScript node names
  (``/bert/encoder/layer.0/attention/self/query/MatMul``) and resolves it with
  the variable names torch itself gives modules (``_setup_trace_module_map``).
* :func:`dynamo_truth` reads ``pkg.torch.onnx.name_scopes`` from the node's
  ``metadata_props``.
* :func:`derived_truth` (in :mod:`semmap_corpus.matching`) carries a truth
  over to a post-processed copy of an export.

Scope-less nodes are then handled by :func:`propagate_to_unscoped`. The rules
are written into each ``truth.json`` (``rules``) and ``fixtures/README.md``.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from typing import Any, Iterable

import onnx
import torch

from semmap_corpus.graph_index import GraphIndex

Truth = dict[str, Any]

TORCHSCRIPT_RULES = (
    "torchscript-scope: node name '/<seg>/.../<op>' -> module found by resolving each scope segment "
    "against torch's own module variable names (_setup_trace_module_map: trailing atoms of the dotted "
    "path back to the first non-numeric one) among the descendants of the previous segment's module, "
    "shallowest match first; a trailing '_<N>' (module called again) is dropped when the exact segment "
    "does not resolve; a segment found nowhere below resolves to the unique module anywhere with that "
    "variable name (shared modules are named by their first path: '/encoder/shared/Gather' -> 'shared'); "
    "deepest resolved module wins; '/<op>' is the traced root (\"\" for the whole model). "
    "unscoped (name without leading '/'): a Constant or Identity gets the module of its consumers when all "
    "consumers have known truth in one module (iterated to a fixed point); anything else is unknown."
)
DYNAMO_RULES = (
    "dynamo-metadata: module = the last module path of metadata_props['pkg.torch.onnx.name_scopes'] "
    "(entries before the trailing fx node name are full dotted module paths, '' = root), checked against "
    "named_modules(remove_duplicate=False) and reported under the module's named_modules() path (a shared "
    "module called as 'encoder.embed_tokens' is 'shared'); nodes without name_scopes or with the '_empty_nn_module_stack_from_metadata_hook' "
    "marker (e.g. nodes created by the exporter's optimizer, such as a Conv with BatchNorm folded in): a "
    "Constant or Identity gets the module of its consumers when all consumers have known truth in one module "
    "(iterated to a fixed point); anything else is unknown."
)


def _unqualified_variable_name(qualified_name: str) -> str:
    """Copy of torch's rule, used only if torch's own map is unavailable."""
    atoms = qualified_name.split(".")
    for i in range(len(atoms) - 1, -1, -1):
        if not atoms[i].isnumeric():
            return ".".join(atoms[i:])
    return qualified_name


def torch_variable_names(model: torch.nn.Module) -> dict[str, str]:
    """Module path -> the variable name torch's TorchScript exporter uses in scopes.

    Calls torch's ``_setup_trace_module_map`` and reads back the map it installs
    (``<qualified class>::<variable name>``), so the rule is torch's, not ours.
    """
    paths = {id(m): p for p, m in model.named_modules()}
    try:
        from torch.onnx._internal.torchscript_exporter import utils as ts_utils

        ts_utils._setup_trace_module_map(model, False)
        try:
            trace_map = dict(torch.jit._trace._trace_module_map or {})
        finally:
            ts_utils._reset_trace_module_map()
        out = {}
        for module, scope in trace_map.items():
            path = paths.get(id(module))
            if path is not None:
                out[path] = scope.split("::", 1)[1] if "::" in scope else scope
        if len(out) == len(paths):
            return out
    except (ImportError, AttributeError):
        pass
    return {p: _unqualified_variable_name(p) for p in paths.values()}


class ScopeResolver:
    """Resolves TorchScript scope segments to module paths of one model."""

    _CALL_SUFFIX = re.compile(r"^(.*)_([0-9]+)$")

    def __init__(self, model: torch.nn.Module) -> None:
        self.var_names = torch_variable_names(model)
        self.paths = [p for p, _ in model.named_modules()]
        self._cache: dict[tuple[str, ...], str | None] = {}

    def _descendant(self, base: str, segment: str) -> str | None:
        prefix = f"{base}." if base else ""
        best: list[str] = []
        best_depth = None
        for path in self.paths:
            if path == base or not path.startswith(prefix) or self.var_names.get(path) != segment:
                continue
            depth = path.count(".")
            if best_depth is None or depth < best_depth:
                best, best_depth = [path], depth
            elif depth == best_depth:
                best.append(path)
        return best[0] if len(best) == 1 else None

    def _anywhere(self, segment: str) -> str | None:
        matches = [p for p in self.paths if p and self.var_names.get(p) == segment]
        return matches[0] if len(matches) == 1 else None

    def resolve(self, segments: tuple[str, ...]) -> str | None:
        """Module path for scope segments (root = ``()``), or None if a segment is unknown."""
        if segments in self._cache:
            return self._cache[segments]
        current = ""
        for segment in segments:
            m = self._CALL_SUFFIX.match(segment)
            found = self._descendant(current, segment)
            if found is None and m:
                found = self._descendant(current, m.group(1))
            if found is None:
                # A module shared by two parents (T5's encoder.embed_tokens is model.shared) is
                # listed once by named_modules(), so torch names it by its first path ("shared")
                # even when the other parent calls it: "/encoder/shared/Gather".
                found = self._anywhere(segment)
                if found is None and m:
                    found = self._anywhere(m.group(1))
            if found is None:
                self._cache[segments] = None
                return None
            current = found
        self._cache[segments] = current
        return current


def scope_segments(node_name: str) -> tuple[str, ...] | None:
    """``/a/b.0/c/Op_3`` -> ``("a", "b.0", "c")``; None for a name without scope."""
    if not node_name.startswith("/"):
        return None
    parts = node_name.split("/")
    return tuple(parts[1:-1])


PROPAGATED_OPS = frozenset({"Constant", "Identity"})


def propagate_to_unscoped(index: GraphIndex, modules: list[str | None], candidates: set[int]) -> None:
    """Give each candidate Constant / Identity node the module of its consumers when they all agree.

    Only these two op types: they carry no computation of their own (exporter
    constants, initializer de-duplication). Any other node without a scope
    stays unknown, because guessing from consumers would hand a fused Conv to
    the ReLU after it. Iterates to a fixed point so chains (Constant ->
    Identity -> consumer) resolve. ``modules`` is updated in place.
    """
    candidates = {i for i in candidates if index.nodes[i].op_type in PROPAGATED_OPS}
    changed = True
    while changed:
        changed = False
        for i in sorted(candidates):
            if modules[i] is not None:
                continue
            targets: set[str] = set()
            ok = True
            outputs = [o for o in index.nodes[i].output if o]
            if not outputs or any(o in index.graph_outputs for o in outputs):
                continue
            for out in outputs:
                for c in index.consumers.get(out, []):
                    if modules[c] is None:
                        ok = False
                        break
                    targets.add(modules[c])
                if not ok:
                    break
            if ok and len(targets) == 1:
                modules[i] = targets.pop()
                changed = True


Origins = list[list[str] | None]


def make_truth(index: GraphIndex, modules: list[str | None], rules: str, origins: Origins | None = None) -> Truth:
    """Assemble ``{"nodes", "unknown", "rules"}`` in traversal order, plus
    ``"origins"`` (node id -> the modules whose work a fused node does, two or
    more, sorted) when any node has them."""
    nodes: dict[str, str] = {}
    unknown: list[str] = []
    fused: dict[str, list[str]] = {}
    for i, (node_id, module) in enumerate(zip(index.ids, modules)):
        if module is None:
            unknown.append(node_id)
            continue
        nodes[node_id] = module
        parts = sorted(set(origins[i] or ())) if origins is not None else []
        if len(parts) >= 2:
            fused[node_id] = parts
    truth: Truth = {"nodes": nodes, "unknown": unknown, "rules": rules}
    if fused:
        truth["origins"] = fused
    return truth


def truth_origins(index: GraphIndex, truth: Truth) -> Origins:
    """The origins of ``truth``, indexed like ``index``'s nodes."""
    fused = truth.get("origins", {})
    return [fused.get(node_id) for node_id in index.ids]


FOLDED_RULES = (
    " origins: a node doing several modules' work lists them in 'origins' (its module stays the one primary "
    "answer). Folded modules are found by running the model with forward hooks: a module with tensors and no "
    "node of its own in the export whose input is the output of a leaf module with parameters (a BatchNorm "
    "right after its Conv) was folded into it; the nodes of that module reading an initializer get origins "
    "{module, folded module}."
)


def folded_modules(model: torch.nn.Module, inputs: Any) -> dict[str, list[str]]:
    """Leaf module path -> the modules that consumed its output directly in a
    forward pass of ``model`` on ``inputs`` and hold tensors of their own
    (candidates for folding into it; kept only when they get no node)."""
    canonical = {id(m): p for p, m in model.named_modules()}
    # id of an output -> (producer, the output itself, kept alive so that no
    # later tensor reuses its id)
    produced: dict[int, tuple[str, torch.Tensor]] = {}
    consumers: dict[str, list[str]] = defaultdict(list)

    def holds_tensors(m: torch.nn.Module) -> bool:
        return any(True for _ in m.parameters(recurse=False)) or any(True for _ in m.buffers(recurse=False))

    def hook(module: torch.nn.Module, args: tuple, output: Any) -> None:
        path = canonical.get(id(module))
        if path is None:
            return
        first = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if first is not None and id(first) in produced and produced[id(first)][1] is first and holds_tensors(module):
            producer = produced[id(first)][0]
            if producer != path and path not in consumers[producer]:
                consumers[producer].append(path)
        if isinstance(output, torch.Tensor) and any(True for _ in module.parameters(recurse=False)):
            produced[id(output)] = (path, output)

    leaves = [m for m in model.modules() if not any(True for _ in m.children())]
    handles = [m.register_forward_hook(hook) for m in leaves]
    try:
        with torch.no_grad():
            if isinstance(inputs, dict):
                model(**inputs)
            else:
                model(*inputs)
    finally:
        for h in handles:
            h.remove()
    return dict(consumers)


def add_folded_origins(onnx_model: onnx.ModelProto, truth: Truth, folded: dict[str, list[str]]) -> Truth:
    """``truth`` with origins for the nodes modules were folded into (:data:`FOLDED_RULES`)."""
    index = GraphIndex(onnx_model)
    with_nodes = set(truth["nodes"].values())
    origins = truth_origins(index, truth)
    modules = [truth["nodes"].get(node_id) for node_id in index.ids]
    for i, node in enumerate(index.nodes):
        module = modules[i]
        gone = [f for f in folded.get(module or "", []) if f not in with_nodes]
        if not gone or not any(v in index.initializers for v in node.input):
            continue
        origins[i] = sorted(set(origins[i] or [module]) | set(gone))  # type: ignore[arg-type]
    return make_truth(index, modules, truth["rules"] + FOLDED_RULES, origins)


def torchscript_truth(onnx_model: onnx.ModelProto, model: torch.nn.Module, traced_root: str = "") -> Truth:
    """Truth for a TorchScript (or Optimum) export of ``model``.

    ``traced_root`` is the path of the submodule that was actually traced
    (Optimum exports ``model.get_encoder()`` for ``encoder_model.onnx``);
    scopes are resolved inside it, and the modules found are reported under
    their path in the full ``model`` (by object identity, first path of
    ``named_modules()``, so a shared module gets its manifest path).
    """
    index = GraphIndex(onnx_model)
    traced = model.get_submodule(traced_root) if traced_root else model
    canonical = {id(m): p for p, m in reversed(list(model.named_modules()))}
    resolver = ScopeResolver(traced)
    modules: list[str | None] = []
    unscoped: set[int] = set()
    for i, node in enumerate(index.nodes):
        segments = scope_segments(node.name)
        if segments is None:
            unscoped.add(i)
            modules.append(None)
            continue
        local = resolver.resolve(segments)
        modules.append(None if local is None else canonical.get(id(traced.get_submodule(local)) if local else id(traced)))
    propagate_to_unscoped(index, modules, unscoped)
    return make_truth(index, modules, TORCHSCRIPT_RULES)


EMPTY_STACK_MARKER = "_empty_nn_module_stack_from_metadata_hook"


def module_aliases(model: torch.nn.Module) -> dict[str, str]:
    """Every path of every module (shared modules have several) -> its path in ``named_modules()``."""
    canonical = {id(m): p for p, m in model.named_modules()}
    return {p: canonical[id(m)] for p, m in model.named_modules(remove_duplicate=False)}


def dynamo_module(node: onnx.NodeProto, known_paths: dict[str, str]) -> str | None:
    """The module path recorded in a dynamo node's metadata, or None.

    ``known_paths`` maps every path (aliases of shared modules included) to the
    manifest path: dynamo records the path a module was *called* through
    (T5: ``encoder.embed_tokens``), which for a shared module is not the one
    ``named_modules()`` lists (``shared``).
    """
    props = {p.key: p.value for p in node.metadata_props}
    raw = props.get("pkg.torch.onnx.name_scopes")
    if raw is None:
        return None
    try:
        scopes = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        return None
    if not isinstance(scopes, list) or len(scopes) < 2 or EMPTY_STACK_MARKER in scopes:
        return None
    return known_paths.get(scopes[-2])


REWRITER_RULE_KEY = "pkg.onnxscript.rewriter.rule_name"
REWRITER_RULES = (
    " rewritten nodes: a node carrying metadata_props['pkg.onnxscript.rewriter.rule_name'] (the exporter's "
    "optimizer rewrote it, e.g. FuseBatchNormIntoConv labels the fused Conv with the BatchNorm's module stack) "
    "that reads parameter initializers (named after a parameter or buffer of the model, e.g. "
    "'layer1.0.conv1.weight' -> 'layer1.0.conv1') of modules other than its metadata module does their work: "
    "its origins are the metadata module and those owners (less any that holds another); its module is the "
    "owner when there is one (the fused node is still that module's operation: a Conv computing with its "
    "Conv's weight), else the lowest common ancestor of all."
)


def parameter_owners(model: torch.nn.Module) -> dict[str, str]:
    """Every parameter / buffer name (all aliases) -> the ``named_modules()`` path of the module holding it."""
    canonical = {id(m): p for p, m in model.named_modules()}
    owners: dict[str, str] = {}
    for path, module in model.named_modules(remove_duplicate=False):
        prefix = f"{path}." if path else ""
        for name, _ in module.named_parameters(recurse=False, remove_duplicate=False):
            owners.setdefault(prefix + name, canonical[id(module)])
        for name, _ in module.named_buffers(recurse=False, remove_duplicate=False):
            owners.setdefault(prefix + name, canonical[id(module)])
    return owners


def lowest_common_ancestor(paths: Iterable[str]) -> str:
    """Deepest module path that is an ancestor-or-self of every path ("" = root)."""
    atoms_list = [p.split(".") if p else [] for p in paths]
    if not atoms_list:
        raise ValueError("no paths")
    common = atoms_list[0]
    for atoms in atoms_list[1:]:
        n = 0
        while n < len(common) and n < len(atoms) and common[n] == atoms[n]:
            n += 1
        common = common[:n]
    return ".".join(common)


def _holds(ancestor: str, path: str) -> bool:
    return ancestor == "" or path == ancestor or path.startswith(ancestor + ".")


def rewritten_node_module(
    node: onnx.NodeProto, metadata_module: str, owners: dict[str, str], initializers: set[str]
) -> tuple[str, list[str] | None]:
    """The module and origins of a node the exporter's optimizer rewrote (see :data:`REWRITER_RULES`)."""
    read = sorted({owners[v] for v in node.input if v in initializers and v in owners} - {metadata_module})
    if not read:
        return metadata_module, None
    parts = [metadata_module, *read]
    origins = [a for a in parts if not any(b != a and _holds(a, b) for b in parts)]
    module = read[0] if len(read) == 1 else lowest_common_ancestor(parts)
    return module, origins


def dynamo_truth(onnx_model: onnx.ModelProto, model: torch.nn.Module, rewriter_lca: bool = False) -> Truth:
    """Truth for a ``dynamo=True`` export of ``model``.

    ``rewriter_lca`` applies :data:`REWRITER_RULES` (the torch-2.15 slice; the
    frozen torch-2.9 slice has no rewritten nodes carrying metadata).
    """
    index = GraphIndex(onnx_model)
    known = module_aliases(model)
    modules = [dynamo_module(n, known) for n in index.nodes]
    origins: Origins = [None] * len(modules)
    if rewriter_lca:
        owners = parameter_owners(model)
        for i, node in enumerate(index.nodes):
            if modules[i] is not None and any(p.key == REWRITER_RULE_KEY for p in node.metadata_props):
                modules[i], origins[i] = rewritten_node_module(node, modules[i], owners, index.initializers)  # type: ignore[arg-type]
    propagate_to_unscoped(index, modules, {i for i, m in enumerate(modules) if m is None})
    return make_truth(index, modules, DYNAMO_RULES + (REWRITER_RULES if rewriter_lca else ""), origins)


def truth_stats(truth: Truth) -> dict[str, int]:
    known = len(truth["nodes"])
    unknown = len(truth["unknown"])
    return {"total": known + unknown, "known": known, "unknown": unknown}


def unresolved_scopes(onnx_model: onnx.ModelProto, model: torch.nn.Module) -> dict[str, int]:
    """Scoped node names whose scope did not resolve (for diagnostics), by scope."""
    resolver = ScopeResolver(model)
    out: dict[str, int] = defaultdict(int)
    for node in GraphIndex(onnx_model).nodes:
        seg = scope_segments(node.name)
        if seg is not None and resolver.resolve(seg) is None:
            out["/".join(seg)] += 1
    return dict(out)
