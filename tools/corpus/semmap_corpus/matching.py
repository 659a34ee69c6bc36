"""Carry a ground truth over from an export to a post-processed copy of it.

Rules, applied in order to each node of the processed model (P), given the
original export (O) and its truth:

1. same-name: a node whose name is a node name of O gets that node's module;
   when a tool merged identical nodes of O into it (its consumers read, where
   they read another node of its op type in O, its outputs now: onnxslim's
   merging of equal shape arithmetic and constants across layers), it gets
   the module of the first of the merged nodes in O's order (execution
   order), and the modules of all of them as origins (docs/mapping.md, "Glue").
   With ``in_place_fusions`` (torch-2.15 slice), when the op type changed
   (ONNX Runtime fuses in place and keeps the name: ``Conv`` + ``Relu`` ->
   ``FusedConv`` named after the Conv), rule 2 is tried first: the node may do
   the work of several modules.
2. fused: a node with inputs and outputs that are both values of O replaced
   the O nodes lying between them (backward-reachable from its outputs,
   stopping at its inputs, and forward-reachable from its inputs); it gets
   their known modules as its origins (with their own origins), and as its
   module the module of the parts whose op type it carries (``Conv`` in
   ``FusedConv``, ``LayerNormalization`` in ``SkipLayerNormalization``:
   :func:`op_type_overlap`, the largest wins) when those parts are of one
   module and every parameter initializer it reads is that module's (it is
   still that module's operation), else the lowest common ancestor (module
   tree) of their known modules.
   A node that outputs values of O but reads none (its inputs were all
   renamed or are new initializers) completes the computation of those values:
   it gets the lowest common ancestor of their O producers' modules.
3. derived name: a name that extends an O node name by ``_<suffix>`` (the
   quantizer's ``<node>_quant``, ``<node>_quant_scales_mul``, ...) gets that
   node's module and origins (longest such O name). Names that extend an O *value* name
   (``<value>_QuantizeLinear``, ``<value>_output_quantized_cast``) skip this rule.
4. consumers: a data-movement node (Constant, Identity, Cast, Reshape and the
   quantizer's DynamicQuantizeLinear / QuantizeLinear / DequantizeLinear) whose
   consumers all have a module gets their lowest common ancestor (iterated to a
   fixed point). Compute nodes never take their consumers' module: a fused
   ``Attention`` whose inputs were all renamed stays unknown rather than being
   handed to the projection after it.
5. anything else is unknown.

:func:`positional_truth` handles copies that keep node order (the stripped variant);
:func:`permuted_truth` re-sorted copies, through the permutation :func:`resort`
records.
"""

from __future__ import annotations

import onnx

from semmap_corpus.graph_index import GraphIndex
from semmap_corpus.truth import Origins, Truth, lowest_common_ancestor, make_truth, truth_origins

MATCH_RULES = (
    "derived from the unmodified export '{source}': (1) same node name -> same module{in_place}, or, when identical "
    "nodes of the original were merged into it (its consumers read it where they read another node of its op type), "
    "the module of the first merged node in the original's order, all of theirs as origins; (2) a node whose inputs "
    "and outputs are values of the original replaced the original nodes between them (backward-reachable "
    "from its outputs up to its inputs, forward-reachable from its inputs) -> their modules (and origins) as its "
    "origins; its module is the module of the replaced nodes whose op type it carries (the longest op type "
    "found on CamelCase word boundaries of its own: 'Conv' in 'FusedConv') when they are of one module and "
    "every parameter initializer it reads belongs to that module, else the lowest common ancestor of their "
    "modules; a node that outputs original values but reads none -> lowest common ancestor of those values' original producers; (3) a name extending an original node name by '_<suffix>' (quantizer: '<node>_quant', "
    "'<node>_quant_scales_mul') -> that node's module and origins, unless it extends an original value name; (4) all "
    "consumers known -> lowest common ancestor of their modules (fixed point); otherwise unknown."
)
POSITION_RULES = (
    "derived from the unmodified export '{source}' by node position: the stripped copy keeps node order and "
    "count, so node i has the module of original node i (unknown stays unknown)."
)


def _original_modules(index: GraphIndex, truth: Truth) -> list[str | None]:
    return [truth["nodes"].get(node_id) for node_id in index.ids]


def _between(orig: GraphIndex, ins: set[str], outs: set[str]) -> set[int]:
    """O nodes on paths from ``ins`` to ``outs``."""
    back: set[int] = set()
    stack = [orig.producer[v] for v in outs if v in orig.producer]
    while stack:
        i = stack.pop()
        if i in back:
            continue
        back.add(i)
        for v in orig.nodes[i].input:
            if v and v not in ins and v in orig.producer:
                stack.append(orig.producer[v])
    forward: set[int] = set()
    stack = [c for v in ins for c in orig.consumers.get(v, [])]
    while stack:
        i = stack.pop()
        if i in forward or i not in back:
            continue
        forward.add(i)
        for v in orig.nodes[i].output:
            stack.extend(orig.consumers.get(v, []))
    return forward


def op_type_overlap(fused: str, part: str) -> int:
    """Length of op type ``part`` where it occurs in op type ``fused`` on CamelCase word boundaries, else 0."""
    if not part or len(part) > len(fused):
        return 0
    start = fused.find(part)
    while start >= 0:
        end = start + len(part)
        if (start == 0 or fused[start].isupper()) and (end == len(fused) or fused[end].isupper()):
            return len(part)
        start = fused.find(part, start + 1)
    return 0


def _holds(ancestor: str, path: str) -> bool:
    return ancestor == "" or path == ancestor or path.startswith(ancestor + ".")


def dominant_part(op_type: str, parts: list[tuple[str, str]], read_owners: list[str]) -> str | None:
    """The module a fused node of ``op_type`` still is, given its replaced (op type, module) ``parts``."""
    best = max((op_type_overlap(op_type, op) for op, _ in parts), default=0)
    if best == 0:
        return None
    dominant = {m for op, m in parts if op_type_overlap(op_type, op) == best}
    if len(dominant) != 1:
        return None
    module = dominant.pop()
    return module if all(_holds(module, o) for o in read_owners) else None


IN_PLACE_RULE = (
    " (same name with another op type, i.e. fused in place such as Conv+Relu -> FusedConv: rule 2 first, "
    "then the same-name module)"
)


def _merged_copies(orig: GraphIndex, by_name: dict[str, int], new: GraphIndex, i: int,
                   twin: int) -> tuple[int, list[int]]:
    """The original nodes a tool merged into processed node ``i`` (its same-name ``twin``
    and the identical nodes whose consumers now read its outputs instead: onnxslim's
    common-subexpression elimination merges equal shape arithmetic and constants across
    layers), and the first of them in the original's order (execution order)."""
    node = new.nodes[i]
    copies = {twin}
    for v in node.output:
        for c in new.consumers.get(v, []):
            consumer = new.nodes[c]
            original = by_name.get(consumer.name)
            if original is None or orig.nodes[original].op_type != consumer.op_type:
                continue
            before = orig.nodes[original].input
            for position, read in enumerate(consumer.input):
                if read != v or position >= len(before) or before[position] == v:
                    continue
                producer = orig.producer.get(before[position])
                if producer is not None and orig.nodes[producer].op_type == node.op_type:
                    copies.add(producer)
    return min(copies), sorted(copies)


def matched_truth(
    processed: onnx.ModelProto, original: onnx.ModelProto, truth: Truth, source: str, in_place_fusions: bool = False,
    owners: dict[str, str] | None = None,
) -> Truth:
    """Truth for ``processed`` (ORT-optimized, ORT-session-optimized, onnxslim'd or quantized ``original``).

    ``owners``: parameter and buffer name -> owning module, for the dominant
    part of a fused node (a node reading no named parameter is judged on its
    op type alone).
    """
    owners = owners or {}
    orig = GraphIndex(original)
    orig_modules = _original_modules(orig, truth)
    orig_origins = truth_origins(orig, truth)
    by_name: dict[str, int] = {}
    for j, node in enumerate(orig.nodes):
        if node.name:
            by_name.setdefault(node.name, j)
    orig_values = orig.values()
    new = GraphIndex(processed)
    modules: list[str | None] = [None] * len(new.nodes)
    origins: Origins = [None] * len(new.nodes)
    pending: set[int] = set()
    node_names_by_length = sorted((n for n in by_name), key=len, reverse=True)
    value_names = {v for v in orig_values if v}
    orig_ops = {n.name: n.op_type for n in orig.nodes if n.name}
    for i, node in enumerate(new.nodes):
        same_name = node.name in by_name
        if same_name and (not in_place_fusions or orig_ops.get(node.name) == node.op_type):
            first, copies = _merged_copies(orig, by_name, new, i, by_name[node.name])
            modules[i] = orig_modules[first]
            origins[i] = orig_origins[first]
            merged = {orig_modules[j] for j in copies if orig_modules[j] is not None}
            if len(merged) > 1:
                origins[i] = sorted(merged | set(orig_origins[first] or []))  # type: ignore[arg-type]
            continue
        ins = {v for v in node.input if v in orig_values} - orig.initializers
        outs = {v for v in node.output if v in orig.producer}
        if ins and outs:
            between = [j for j in _between(orig, ins, outs) if orig_modules[j] is not None]
            if between:
                known = [orig_modules[j] for j in between]
                read = [owners[v] for v in node.input if v in new.initializers and v in owners]
                parts = [(orig.nodes[j].op_type, orig_modules[j]) for j in between]
                dominant = dominant_part(node.op_type, parts, read) if len(set(known)) > 1 else None
                modules[i] = dominant if dominant is not None else lowest_common_ancestor(known)  # type: ignore[arg-type]
                origins[i] = sorted({p for j in between for p in (orig_origins[j] or [orig_modules[j]])})  # type: ignore[misc]
                continue
        elif outs:
            producers = [orig.producer[v] for v in outs]
            known = [orig_modules[j] for j in producers]
            if all(k is not None for k in known):
                modules[i] = lowest_common_ancestor(known)  # type: ignore[arg-type]
                origins[i] = sorted({p for j in producers for p in (orig_origins[j] or [orig_modules[j]])})  # type: ignore[misc]
                continue
        if same_name:
            modules[i] = orig_modules[by_name[node.name]]
            origins[i] = orig_origins[by_name[node.name]]
            continue
        if node.name and not any(node.name.startswith(v + "_") for v in value_names if v in node.name):
            for name in node_names_by_length:
                if node.name.startswith(name + "_"):
                    modules[i] = orig_modules[by_name[name]]
                    origins[i] = orig_origins[by_name[name]]
                    break
            if modules[i] is not None:
                continue
        pending.add(i)
    _consumer_lca(new, modules, pending)
    return make_truth(new, modules, MATCH_RULES.format(source=source, in_place=IN_PLACE_RULE if in_place_fusions else ""),
                      origins)


CONSUMER_RULE_OPS = frozenset(
    {"Constant", "Identity", "Cast", "Reshape", "DynamicQuantizeLinear", "QuantizeLinear", "DequantizeLinear"}
)


def _consumer_lca(index: GraphIndex, modules: list[str | None], pending: set[int]) -> None:
    pending = {i for i in pending if index.nodes[i].op_type in CONSUMER_RULE_OPS}
    changed = True
    while changed:
        changed = False
        for i in sorted(pending):
            if modules[i] is not None:
                continue
            outputs = [o for o in index.nodes[i].output if o]
            if not outputs or any(o in index.graph_outputs for o in outputs):
                continue
            consumers = [c for o in outputs for c in index.consumers.get(o, [])]
            if consumers and all(modules[c] is not None for c in consumers):
                modules[i] = lowest_common_ancestor(modules[c] for c in consumers)  # type: ignore[misc]
                changed = True


def positional_truth(stripped: onnx.ModelProto, original: onnx.ModelProto, truth: Truth, source: str) -> Truth:
    """Truth for a copy with the same nodes in the same order (names changed)."""
    orig = GraphIndex(original)
    new = GraphIndex(stripped)
    if [n.op_type for n in orig.nodes] != [n.op_type for n in new.nodes]:
        raise ValueError("stripped copy does not keep the original node order")
    modules = _original_modules(orig, truth)
    return make_truth(new, modules, POSITION_RULES.format(source=source), truth_origins(orig, truth))


RESORT_RULES = (
    "derived from '{source}' by the recorded permutation (resort.json 'order': node i of this file is node "
    "order[i] of '{source}', re-sorted topologically with a seeded random tie-break among ready nodes, seed "
    "{seed}{renamed}): node i has the module of source node order[i] (unknown stays unknown)."
)


def _reads(node: onnx.NodeProto) -> list[str]:
    from semmap_corpus.graph_index import _subgraph_inputs

    return [v for v in list(node.input) + _subgraph_inputs(node) if v]


def resort(model: onnx.ModelProto, seed: int) -> tuple[onnx.ModelProto, list[int]]:
    """A copy of ``model`` whose main-graph nodes are re-sorted topologically.

    Kahn's algorithm; whenever several nodes are ready, one is drawn with
    ``random.Random(seed)`` from the ready nodes kept in source order, so the
    result is deterministic for a seed and differs from the source order.
    Subgraphs move with their node; model-local functions are untouched.
    Returns the copy and ``order`` (node ``i`` of the copy is node
    ``order[i]`` of the source main graph).
    """
    import bisect
    import copy
    import random

    nodes = list(model.graph.node)
    producer: dict[str, int] = {}
    for i, node in enumerate(nodes):
        for v in node.output:
            if v:
                producer.setdefault(v, i)
    deps: list[set[int]] = [{producer[v] for v in _reads(n) if v in producer} - {i} for i, n in enumerate(nodes)]
    users: list[list[int]] = [[] for _ in nodes]
    for i, d in enumerate(deps):
        for j in sorted(d):
            users[j].append(i)
    waiting = [len(d) for d in deps]
    ready = [i for i, w in enumerate(waiting) if w == 0]
    rng = random.Random(seed)
    order: list[int] = []
    while ready:
        i = ready.pop(rng.randrange(len(ready)))
        order.append(i)
        for u in users[i]:
            waiting[u] -= 1
            if waiting[u] == 0:
                bisect.insort(ready, u)
    if len(order) != len(nodes):
        raise ValueError("graph has a cycle; cannot re-sort")
    out = copy.deepcopy(model)
    del out.graph.node[:]
    out.graph.node.extend(copy.deepcopy(nodes[i]) for i in order)
    return out, order


def _nodes_with_subgraphs(model: onnx.ModelProto) -> list[list[int]]:
    """For each main-graph node, the traversal indices of it and the nodes of its subgraphs."""
    from semmap_corpus.node_ids import iter_graph_nodes

    spans: list[list[int]] = []
    k = 0
    for node in model.graph.node:
        count = 1
        for attr in node.attribute:
            graphs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
            for g in graphs:
                count += sum(1 for _ in iter_graph_nodes(g))
        spans.append(list(range(k, k + count)))
        k += count
    return spans


def permuted_truth(
    resorted: onnx.ModelProto, source: onnx.ModelProto, truth: Truth, order: list[int], source_name: str,
    seed: int, renamed: bool = False,
) -> Truth:
    """Truth for a re-sorted copy, through the permutation :func:`resort` recorded (never by position)."""
    src = GraphIndex(source)
    new = GraphIndex(resorted)
    src_modules = _original_modules(src, truth)
    src_spans = _nodes_with_subgraphs(source)
    if len(order) != len(src_spans) or sorted(order) != list(range(len(src_spans))):
        raise ValueError("order is not a permutation of the source's main-graph nodes")
    src_origins = truth_origins(src, truth)
    modules: list[str | None] = []
    origins: Origins = []
    for i in order:
        for k in src_spans[i]:
            modules.append(src_modules[k])
            origins.append(src_origins[k])
    if len(modules) != len(new.nodes):
        raise ValueError("re-sorted copy and source differ in node count")
    src_ops = [src.nodes[k].op_type for i in order for k in src_spans[i]]
    if src_ops != [n.op_type for n in new.nodes]:
        raise ValueError("re-sorted copy does not match the recorded order")
    rules = RESORT_RULES.format(
        source=source_name, seed=seed, renamed="; then names stripped again in the new order" if renamed else ""
    )
    return make_truth(new, modules, rules, origins)
