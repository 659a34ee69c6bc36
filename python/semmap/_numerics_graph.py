"""The graph side of :func:`semmap.compare_numerics`: which values leave each
module and which enter it, per graph, and how the values of two graphs of one
model pair up — by module, position and shape, never by tensor name.

A *unit* is the set of main-graph nodes mapped to exactly one module path
(the leaf view: a module's own nodes). A value is a *boundary value* of a
module when a node of the module (of its subtree, in the subtree view)
produces it and a node outside consumes it, or it is a graph output. Every
subtree boundary value leaves its own unit too, so capturing the units'
boundary values captures both views. Only values that depend on a graph input
are captured (constants folded by one tool and not by the other would
otherwise pair with nothing); values of integer or bool type are not compared.

Needs onnx; no ONNX Runtime.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable

import onnx

OUTPUT = "<output>"  # consumer signature of a graph output
UNMAPPED = "<unmapped>"

FLOAT_TYPES = {
    onnx.TensorProto.FLOAT,
    onnx.TensorProto.FLOAT16,
    onnx.TensorProto.BFLOAT16,
    onnx.TensorProto.DOUBLE,
}


def prefixes(path: str) -> list[str]:
    """'' and every ancestor of a dotted module path, then the path itself."""
    if not path:
        return [""]
    parts = path.split(".")
    return [""] + [".".join(parts[: i + 1]) for i in range(len(parts))]


def within(unit: str | None, module: str) -> bool:
    """Whether a node of `unit` (None: unmapped) is in `module`'s subtree."""
    if module == "":
        return True
    return unit is not None and (unit == module or unit.startswith(module + "."))


def _subgraphs(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    found = []
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            found.append(a.g)
        elif a.type == onnx.AttributeProto.GRAPHS:
            found.extend(a.graphs)
    return found


def _nested_count(node: onnx.NodeProto) -> int:
    return sum(1 + _nested_count(n) for g in _subgraphs(node) for n in g.node)


def _outer_names(graph: onnx.GraphProto) -> set[str]:
    """Names a subgraph body reads from the scopes around it."""
    defined = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    used: set[str] = set()
    for n in graph.node:
        used.update(v for v in n.input if v)
        for g in _subgraphs(n):
            used.update(_outer_names(g))
        defined.update(v for v in n.output if v)
    return used - defined


@dataclass
class Candidate:
    """A boundary value of a unit, captured when it runs."""

    name: str
    unit: str  # the module its producer works for (see GraphView.effective)
    pos: int  # topological position of its producer
    consumers: tuple[str, ...]  # units of its consumers outside `unit` (OUTPUT for a graph output)
    elem_type: int = 0  # from the file or shape inference; 0 unknown
    est_bytes: int = 0


@dataclass
class GraphView:
    """One graph with its mapping, read for capture and pairing."""

    path: str
    nodes: list[onnx.NodeProto]
    units: list[str | None]  # per node: the module it works for; None unmapped
    primary: list[str | None]  # per node: the mapping's module
    origins: list[list[str]]
    inputs: list[str]  # graph inputs that are not initializers
    outputs: list[str]
    producer: dict[str, int]
    node_inputs: list[list[str]]  # explicit and implicit (subgraph) inputs
    consumers: dict[str, list[int]]
    order: list[int]  # node indices in a topological order
    pos: list[int]  # node index -> topological position
    dependent: set[str]
    elem_type: dict[str, int]
    candidates: dict[str, Candidate] = field(default_factory=dict)
    classes: dict[str, str] = field(default_factory=dict)
    fused: dict[str, list[str]] = field(default_factory=dict)  # module -> modules merged into it
    stand_ins: set[int] = field(default_factory=set)  # nodes working for a removed activation
    _indexes: dict[str, Any] = field(default_factory=dict, repr=False)

    # -- views ------------------------------------------------------------
    def unit_modules(self) -> list[str]:
        seen: dict[str, None] = {}
        for i in self.order:
            u = self.units[i]
            if u is not None:
                seen.setdefault(u, None)
        return list(seen)

    def subtree_modules(self) -> list[str]:
        seen: dict[str, None] = {}
        for u in self.unit_modules():
            for p in prefixes(u):
                seen.setdefault(p, None)
        return list(seen)

    def boundary(self, module: str, view: str) -> list[Candidate]:
        """The candidates that leave `module` (its own nodes in the 'leaf' view, its
        subtree in the 'subtree' view), in topological order."""
        return self._index(view)[0].get(module, [])

    def module_inputs(self, module: str, view: str) -> list[str]:
        """Data-dependent values consumed by `module`'s nodes and made outside it."""
        return self._index(view)[1].get(module, [])

    def _index(self, view: str) -> tuple[dict[str, list[Candidate]], dict[str, list[str]]]:
        if view not in self._indexes:
            self._indexes[view] = (self._boundaries(view), self._inputs(view))
        return self._indexes[view]

    def _boundaries(self, view: str) -> dict[str, list[Candidate]]:
        found: dict[str, list[Candidate]] = defaultdict(list)
        for c in sorted(self.candidates.values(), key=lambda c: c.pos):
            if view == "leaf":
                found[c.unit].append(c)
                continue
            for m in prefixes(c.unit):
                if any(k == OUTPUT or (k == UNMAPPED and m != "") or
                       (k not in (OUTPUT, UNMAPPED) and not within(k, m)) for k in c.consumers):
                    found[m].append(c)
        return dict(found)

    def _inputs(self, view: str) -> dict[str, list[str]]:
        found: dict[str, dict[str, None]] = defaultdict(dict)
        for j in self.order:
            u = self.units[j]
            for v in self.node_inputs[j]:
                if v not in self.dependent:
                    continue
                p = self.producer.get(v)
                made_by = self.units[p] if p is not None else None
                if view == "leaf":
                    if u is not None and (p is None or made_by != u):
                        found[u].setdefault(v, None)
                    continue
                for m in prefixes(u) if u is not None else [""]:
                    if p is None:
                        outside = v in self.inputs
                    else:
                        outside = made_by is None and m != "" or made_by is not None and not within(made_by, m)
                    if outside:
                        found[m].setdefault(v, None)
        return {m: list(vs) for m, vs in found.items()}

    def first_pos(self) -> dict[str, int]:
        """Each module's (subtree's) first node, in topological order."""
        first: dict[str, int] = {}
        for i in self.order:
            u = self.units[i]
            if u is None:
                continue
            for p in prefixes(u):
                first.setdefault(p, self.pos[i])
        return first

    def ancestors_among(self, names: list[str]) -> dict[str, int]:
        """For each of `names`, how many of the others it depends on (invariant
        under re-sorting the graph, unlike its position)."""
        if len(names) < 2:
            return {n: 0 for n in names}
        members = set(names)
        floor = min(self.pos[self.producer[n]] for n in names)
        counts = {}
        for n in names:
            seen: set[str] = set()
            stack = list(self.node_inputs[self.producer[n]])
            hits = 0
            while stack:
                v = stack.pop()
                if v in seen:
                    continue
                seen.add(v)
                if v in members:
                    hits += 1
                p = self.producer.get(v)
                if p is not None and self.pos[p] >= floor:
                    stack.extend(self.node_inputs[p])
            counts[n] = hits
        return counts


def main_graph_indices(graph: onnx.GraphProto) -> list[int]:
    """Each main-graph node's index in semmap's traversal order (graph.h: the main
    graph in order, each subgraph's nodes right after the node that holds it)."""
    out, index = [], 0
    for node in graph.node:
        out.append(index)
        index += 1 + _nested_count(node)
    return out


def _topological(nodes: list[onnx.NodeProto], node_inputs: list[list[str]],
                 producer: dict[str, int]) -> list[int]:
    """The file's order when it is topological (ONNX requires it), else Kahn's."""
    ok = True
    for j, node in enumerate(nodes):
        if any(v in producer and producer[v] >= j for v in node_inputs[j]):
            ok = False
            break
    if ok:
        return list(range(len(nodes)))
    waiting = [sum(1 for v in set(node_inputs[j]) if v in producer) for j in range(len(nodes))]
    users: dict[int, list[int]] = defaultdict(list)
    for j in range(len(nodes)):
        for v in set(node_inputs[j]):
            if v in producer:
                users[producer[v]].append(j)
    ready = [j for j, w in enumerate(waiting) if w == 0]
    order = []
    while ready:
        j = ready.pop(0)
        order.append(j)
        for k in users[j]:
            waiting[k] -= 1
            if waiting[k] == 0:
                ready.append(k)
    if len(order) != len(nodes):  # a cycle: keep the file's order; ONNX Runtime will say
        return list(range(len(nodes)))
    return order


def read_graph(path: str, proto: onnx.ModelProto, mapped: Any, inferred: dict[str, int]) -> GraphView:
    """The GraphView of `proto` (loaded from `path`) mapped by `mapped` (a
    semmap.MappedModel of the same file); `inferred`: element types by value name.
    Its candidates are found by find_candidates, after merge_fusions."""
    g = proto.graph
    nodes = list(g.node)
    indices = main_graph_indices(g)
    if len(mapped) < (indices[-1] + 1 if indices else 0):
        raise ValueError(f"{path}: semmap's mapping has {len(mapped)} nodes, the file more")
    primary: list[str | None] = []
    origins: list[list[str]] = []
    classes: dict[str, str] = {}
    for node, i in zip(nodes, indices):
        mp = mapped[i]
        if mp.op_type != node.op_type or mp.name != node.name:
            raise ValueError(f"{path}: node {i} is {node.op_type} {node.name!r} in the file and "
                             f"{mp.op_type} {mp.name!r} in semmap's mapping")
        primary.append(mp.module)
        origins.append(list(mp.origins))
        if mp.module is not None and mp.class_name:
            classes.setdefault(mp.module, mp.class_name)
    initializers = {t.name for t in g.initializer} | {t.values.name for t in g.sparse_initializer}
    producer: dict[str, int] = {}
    node_inputs: list[list[str]] = []
    for j, node in enumerate(nodes):
        ins = [v for v in node.input if v]
        for sub in _subgraphs(node):
            ins.extend(sorted(_outer_names(sub)))
        node_inputs.append(list(dict.fromkeys(ins)))
        for v in node.output:
            if v:
                producer[v] = j
    consumers: dict[str, list[int]] = defaultdict(list)
    for j, ins in enumerate(node_inputs):
        for v in ins:
            consumers[v].append(j)
    order = _topological(nodes, node_inputs, producer)
    pos = [0] * len(nodes)
    for p, j in enumerate(order):
        pos[j] = p
    graph_inputs = [i.name for i in g.input if i.name not in initializers]
    dependent = set(graph_inputs)
    for j in order:
        if any(v in dependent for v in node_inputs[j]):
            dependent.update(v for v in nodes[j].output if v)
    return GraphView(path, nodes, list(primary), primary, origins, graph_inputs,
                     [o.name for o in g.output], producer, node_inputs, dict(consumers), order, pos,
                     dependent, dict(inferred), classes=classes)


# ONNX Runtime's fused ops that apply an activation named by an attribute.
_ACTIVATION_FUSIONS = {"FusedConv", "FusedGemm", "NhwcFusedConv"}


def merge_fusions(ref: GraphView, dep: GraphView) -> None:
    """Where the deployed graph does several modules' work in one node (a Conv with
    its BatchNorm folded in, ONNX Runtime's SkipLayerNormalization or BiasGelu, a
    FusedConv with its activation), the nodes of those modules that did that work
    are counted as one unit in the reference, the fused node's primary module (the
    part it still is), so that the two graphs compare the same value under the
    same module. The nodes taken are those of one of the fused modules next to a node
    of another of them (by the mapping's answers, in one pass: a Linear's MatMul
    stays the Linear's when only its bias Add was fused with the activation), all
    the nodes of a fused module the deployed graph has no node of any more, and an
    activation right after the module that a FusedConv applies it for.
    `fused` records, per primary module, the modules merged into it."""
    groups: dict[str, set[str]] = defaultdict(set)
    activations: dict[str, set[str]] = defaultdict(set)
    for graph in (dep, ref):
        for j, o in enumerate(graph.origins):
            a = graph.primary[j]
            if a is not None and len(o) >= 2 and _computes_floats(graph, j):
                groups[a].update(o)
    for j, node in enumerate(dep.nodes):
        a = dep.primary[j]
        if a is None or node.op_type not in _ACTIVATION_FUSIONS:
            continue
        act = next((x.s.decode() for x in node.attribute if x.name == "activation"), "")
        if act:
            activations[a].add(act)
    merged: dict[str, set[str]] = defaultdict(set)
    # A fused module the deployed graph has no node of any more: all of its nodes.
    left = {u for u in dep.primary if u is not None}
    absorbed = {b: a for a, members in groups.items() for b in members if b != a and b not in left}
    for graph in (ref,):  # the deployed graph's fused nodes answer with the primary module already
        original = list(graph.units)
        for j in graph.order:
            u = original[j]
            if u is None:
                continue
            if u in absorbed:
                graph.units[j] = absorbed[u]
                merged[absorbed[u]].add(u)
                continue
            near = _adjacent_units(graph, j, original)
            for a, members in groups.items():
                if u in members and any(k in members and k != u for k in near):
                    graph.units[j] = a
                    if u != a:
                        merged[a].add(u)
                    break
            else:
                for a, acts in activations.items():
                    if u != a and graph.nodes[j].op_type in acts and _reads_unit(graph, j, a, original):
                        graph.units[j] = a
                        merged[a].add(u)
                        break
    for graph in (ref, dep):
        graph.fused = {a: sorted(bs) for a, bs in merged.items()}


# Activations that clip a value's range: a static quantizer may remove one where
# the QuantizeLinear after it clips the same way (its zero point at the bottom of
# the range), as ONNX Runtime's QDQ quantizer does.
_CLIPPING_ACTIVATIONS = {"Relu", "Clip"}


def stand_in_removed_activations(ref: GraphView, dep: GraphView) -> None:
    """A module the deployed graph has no node of any more because a quantizer
    removed its clipping activation (a ReLU before a QuantizeLinear that clips at
    0): the QuantizeLinear/DequantizeLinear pair that clips in its place works for
    that module in the deployed graph, so its output (the DequantizeLinear's) is
    the module's boundary value and pairs with the activation's output. Per
    activation node of such a module in the reference, the pair taken is the first
    one, in graph order, whose QuantizeLinear reads a value made by the same unit
    as the activation's input and whose DequantizeLinear outputs are read by the
    same units as the activation's output; each pair stands in for one node."""
    def unit_of(graph: GraphView, value: str) -> str | None:
        p = graph.producer.get(value)
        return graph.units[p] if p is not None else None

    def readers(graph: GraphView, values: list[str]) -> frozenset[str | None]:
        return frozenset(graph.units[k] for v in values for k in graph.consumers.get(v, []))

    left = {u for u in dep.units if u is not None}
    # The deployed QuantizeLinear/DequantizeLinear pairs in graph order, by the unit
    # that makes the quantized value and the units that read the pair's outputs.
    pairs: dict[tuple[str | None, frozenset[str | None]], list[list[int]]] = defaultdict(list)
    for q in dep.order:
        node = dep.nodes[q]
        if node.op_type != "QuantizeLinear" or not node.input or not node.output:
            continue
        dqs = [k for k in dep.consumers.get(node.output[0], [])
               if dep.nodes[k].op_type == "DequantizeLinear" and dep.nodes[k].input[0] == node.output[0]]
        if dqs:
            key = (unit_of(dep, node.input[0]), readers(dep, [o for k in dqs for o in dep.nodes[k].output]))
            pairs[key].append([q, *dqs])
    for key in pairs:
        pairs[key].reverse()  # taken from the end: the first in graph order first
    for j in ref.order:
        node = ref.nodes[j]
        a = ref.units[j]
        if a is None or a in left or node.op_type not in _CLIPPING_ACTIVATIONS:
            continue
        if not node.input or not node.output or node.input[0] not in ref.dependent:
            continue
        free = pairs.get((unit_of(ref, node.input[0]), readers(ref, [node.output[0]])))
        if free:
            for k in free.pop():
                dep.units[k] = a
                dep.stand_ins.add(k)


def _computes_floats(graph: GraphView, j: int) -> bool:
    """Whether node `j` makes a floating-point value (or one of unknown type), not
    only shapes and indices (a Concat of shapes that onnxslim merged across layers)."""
    types = [graph.elem_type.get(v, 0) for v in graph.nodes[j].output if v]
    return any(not t or t in FLOAT_TYPES for t in types)


def _adjacent_units(graph: GraphView, j: int, units: list[str | None]) -> set[str]:
    """The units of the nodes that feed node `j` or read its outputs."""
    found: set[str] = set()
    for v in graph.node_inputs[j]:
        p = graph.producer.get(v)
        if p is not None and units[p] is not None:
            found.add(units[p])  # type: ignore[arg-type]
    for v in graph.nodes[j].output:
        for k in graph.consumers.get(v, []):
            if units[k] is not None:
                found.add(units[k])  # type: ignore[arg-type]
    return found


def _reads_unit(graph: GraphView, j: int, unit: str, units: list[str | None]) -> bool:
    return any(graph.producer.get(v) is not None and units[graph.producer[v]] == unit
               for v in graph.node_inputs[j])


# Inputs that are quantization parameters (scales, zero points), not activations.
def _data_inputs(op: str) -> set[int] | None:
    if op in ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "MatMulNBits"):
        return {0}
    if op in ("MatMulInteger", "ConvInteger"):
        return {0, 1}
    if op == "MatMulIntegerToFloat":
        return {0, 1, 6}
    if op.startswith("QLinear"):
        return {0, 3, 8}
    return None


def _quantization_parameter(view: GraphView, value: str, producer: onnx.NodeProto, index: int) -> bool:
    """A scale or zero point a quantizer computes at run time (DynamicQuantizeLinear's
    second and third outputs), or a value only ever read as one."""
    if producer.op_type == "DynamicQuantizeLinear" and index >= 1:
        return True
    uses = [(view.nodes[k], i) for k in view.consumers.get(value, [])
            for i, v in enumerate(view.nodes[k].input) if v == value]
    if not uses:
        return False
    for node, i in uses:
        data = _data_inputs(node.op_type)
        if data is None or i in data:
            return False
    return True


def quantized_copy(view: GraphView, j: int) -> str | None:
    """The value node `j` is a quantized copy of — DequantizeLinear(QuantizeLinear(x)),
    a static quantizer's activation pair — or None."""
    node = view.nodes[j]
    if node.op_type != "DequantizeLinear" or not node.input:
        return None
    q = view.producer.get(node.input[0])
    if q is None or view.nodes[q].op_type != "QuantizeLinear" or not view.nodes[q].input:
        return None
    return view.nodes[q].input[0]


_COPIES = {"Cast", "Identity", "CastLike"}


def _copy_of(view: GraphView, j: int, found: dict[str, "Candidate"]) -> bool:
    """Whether node `j` only copies a value: a chain of quantized copies, casts and
    identities of a value made by another module or of a graph input — the
    consuming module's input in another type, not a value this module computed —
    or a cast of one of its own module's boundary values (an fp16 copy's output
    cast back to float32)."""
    node = view.nodes[j]
    if j in view.stand_ins:
        return False  # it computes a removed activation's output (stand_in_removed_activations)
    if node.op_type in _COPIES and node.input and node.input[0] in found \
            and found[node.input[0]].unit == view.units[j]:
        return True
    k, steps = j, 0
    while steps < 8:
        n = view.nodes[k]
        x = quantized_copy(view, k)
        if x is None and n.op_type in _COPIES and n.input:
            x = n.input[0]
        if x is None:
            return steps > 0 and view.units[k] != view.units[j]
        steps += 1
        p = view.producer.get(x)
        if p is None:
            return True  # a graph input's copy
        if view.units[p] != view.units[j]:
            return True
        k = p
    return False


def find_candidates(view: GraphView) -> None:
    """The values to capture: data-dependent values of a floating-point (or not yet
    known) type that leave their unit or are graph outputs, less quantization
    parameters and copies (_copy_of). A DequantizeLinear reading another module's
    quantized output (a quantized Gather's int8 rows) makes that module's output."""
    outputs = set(view.outputs)
    found: dict[str, Candidate] = {}
    for j in view.order:
        node = view.nodes[j]
        u = view.units[j]
        if node.op_type == "DequantizeLinear" and node.input and quantized_copy(view, j) is None:
            p = view.producer.get(node.input[0])
            if p is not None and view.units[p] is not None and view.units[p] != u:
                u = view.units[p]
        for index, v in enumerate(node.output):
            if not v or v not in view.dependent:
                continue
            if v not in outputs and _quantization_parameter(view, v, node, index):
                continue
            ks = {(view.units[k] if view.units[k] is not None else UNMAPPED)
                  for k in view.consumers.get(v, [])}
            leaving = {k for k in ks if k != u}
            if v in outputs:
                leaving.add(OUTPUT)
            if _copy_of(view, j, found):
                src = node.input[0] if node.input else ""
                if src in found and found[src].unit == u:  # its copy leaves for it
                    found[src].consumers = tuple(sorted(set(found[src].consumers) | leaving))
                continue
            t = view.elem_type.get(v, 0)
            if t and t not in FLOAT_TYPES:
                continue
            if u is None:
                if v in outputs:  # the model's output, made by an unmapped node
                    found[v] = Candidate(v, "", view.pos[j], (OUTPUT,), t)
                continue
            if leaving:
                found[v] = Candidate(v, u, view.pos[j], tuple(sorted(leaving)), t)
    view.candidates = found


# ------------------------------------------------------------------ pairing


@dataclass
class Pair:
    reference: str
    deployed: str
    shape: tuple[int, ...]


@dataclass
class Unpaired:
    side: str  # "reference" or "deployed"
    value: str
    shape: tuple[int, ...] | None
    reason: str


def _signature(c: Candidate, module: str, view: str) -> tuple[str, ...]:
    if view == "leaf":
        return c.consumers
    return tuple(k for k in c.consumers if k == OUTPUT or k == UNMAPPED or not within(k, module))


def _ordered(graph: GraphView, group: list[Candidate], module: str, view: str) -> list[Candidate]:
    rank = graph.ancestors_among([c.name for c in group])
    return sorted(group, key=lambda c: (rank[c.name], _signature(c, module, view), c.pos))


def _tie_break(ref: GraphView, dep: GraphView, r: list[Candidate], d: list[Candidate]) -> list[Candidate]:
    """`d` reordered to match `r` where position alone cannot tell values of one
    module and shape apart (RoPE's cos and sin: independent, read by the same
    modules, and ONNX Runtime may emit them in the other order): by the op that
    makes each when every op occurs once on both sides, else by name when both
    sides have the same names (the names then confirm a pairing by module and
    shape, never make one alone); otherwise the order stands."""
    if len(r) < 2:
        return d
    ops_r = [ref.nodes[ref.producer[c.name]].op_type for c in r]
    ops_d = [dep.nodes[dep.producer[c.name]].op_type for c in d]
    if ops_r != ops_d and sorted(ops_r) == sorted(ops_d) and len(set(ops_r)) == len(ops_r):
        by_op = dict(zip(ops_d, d))
        return [by_op[o] for o in ops_r]
    names_d = {c.name: c for c in d}
    if [c.name for c in r] != [c.name for c in d] and set(names_d) == {c.name for c in r}:
        return [names_d[c.name] for c in r]
    return d


def pair_module(module: str, view: str, ref: GraphView, dep: GraphView,
                shapes_ref: dict[str, tuple], shapes_dep: dict[str, tuple],
                floats_ref: set[str], floats_dep: set[str]) -> tuple[list[Pair], list[Unpaired]]:
    """Pairs the boundary values of `module` in the two graphs: by shape, then by
    position (how many of the module's other boundary values of that shape each
    depends on, then which modules consume it, then graph order)."""
    rb = [c for c in ref.boundary(module, view) if c.name in floats_ref]
    db = [c for c in dep.boundary(module, view) if c.name in floats_dep]
    pairs: list[Pair] = []
    unpaired: list[Unpaired] = []
    if not db and rb:
        in_dep = module in (dep.unit_modules() if view == "leaf" else dep.subtree_modules())
        why = ("no floating-point value leaves this module in the deployed graph"
               if in_dep else "the deployed graph has no node of this module")
        into = [a for a, bs in dep.fused.items() if module in bs]
        if into:
            why += f" (fused into {into[0]}'s nodes)"
        unpaired.extend(Unpaired("reference", c.name, shapes_ref.get(c.name), why) for c in rb)
        return pairs, unpaired
    if not rb and db:
        why = "no floating-point value leaves this module in the reference graph"
        unpaired.extend(Unpaired("deployed", c.name, shapes_dep.get(c.name), why) for c in db)
        return pairs, unpaired
    by_shape_r: dict[tuple, list[Candidate]] = defaultdict(list)
    by_shape_d: dict[tuple, list[Candidate]] = defaultdict(list)
    for c in rb:
        by_shape_r[shapes_ref[c.name]].append(c)
    for c in db:
        by_shape_d[shapes_dep[c.name]].append(c)
    for shape in list(dict.fromkeys([*by_shape_r, *by_shape_d])):
        r = _ordered(ref, by_shape_r.get(shape, []), module, view)
        d = _ordered(dep, by_shape_d.get(shape, []), module, view)
        if len(r) == len(d):
            pairs.extend(Pair(a.name, b.name, shape) for a, b in zip(r, _tie_break(ref, dep, r, d)))
            continue
        # Counts differ: pair the values consumed by the same modules, one to one.
        left_r, left_d = list(r), list(d)
        for a in r:
            sig = _signature(a, module, view)
            same_r = [x for x in left_r if _signature(x, module, view) == sig]
            same_d = [x for x in left_d if _signature(x, module, view) == sig]
            if len(same_r) == 1 and len(same_d) == 1:
                pairs.append(Pair(a.name, same_d[0].name, shape))
                left_r.remove(a)
                left_d.remove(same_d[0])
        if len(left_r) == 1 and len(left_d) == 1:
            pairs.append(Pair(left_r[0].name, left_d[0].name, shape))
            continue
        if not left_d or not left_r:
            other = "deployed" if left_r else "reference"
            why = f"no value of shape {list(shape)} leaves this module in the {other} graph"
        else:
            why = (f"ambiguous: {len(r)} values of shape {list(shape)} leave this module in the "
                   f"reference, {len(d)} in the deployed graph")
        unpaired.extend(Unpaired("reference", c.name, shape, why) for c in left_r)
        unpaired.extend(Unpaired("deployed", c.name, shape, why) for c in left_d)
    return pairs, unpaired


def iter_modules(ref: GraphView, dep: GraphView, view: str) -> Iterable[str]:
    """The modules of a view, in the reference's order, then those only the deployed graph has."""
    a = ref.unit_modules() if view == "leaf" else ref.subtree_modules()
    b = dep.unit_modules() if view == "leaf" else dep.subtree_modules()
    seen = dict.fromkeys(a)
    for m in b:
        seen.setdefault(m, None)
    return list(seen)
