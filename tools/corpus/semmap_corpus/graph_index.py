"""Producer / consumer index over an ONNX model, subgraphs included."""

from __future__ import annotations

from collections import defaultdict

import onnx

from semmap_corpus.node_ids import iter_nodes, node_ids


def _subgraph_inputs(node: onnx.NodeProto) -> list[str]:
    """Values a node reads from outer scopes through its subgraphs (If/Loop/Scan bodies)."""
    names: list[str] = []
    for attr in node.attribute:
        graphs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
        for g in graphs:
            local = {i.name for i in g.input} | {t.name for t in g.initializer}
            for sub in g.node:
                local.update(sub.output)
            for sub in g.node:
                names.extend(n for n in sub.input if n and n not in local)
                names.extend(n for n in _subgraph_inputs(sub) if n not in local)
    return names


class GraphIndex:
    """Nodes by id with the values they read and write.

    Value names are treated as global (ONNX requires outer-scope names to be
    unique across subgraphs), which is what the matching below needs.
    """

    def __init__(self, model: onnx.ModelProto) -> None:
        self.model = model
        self.nodes: list[onnx.NodeProto] = list(iter_nodes(model))
        self.ids: list[str] = node_ids(model)
        self.producer: dict[str, int] = {}
        self.consumers: dict[str, list[int]] = defaultdict(list)
        for i, node in enumerate(self.nodes):
            for out in node.output:
                if out:
                    self.producer.setdefault(out, i)
            for inp in list(node.input) + _subgraph_inputs(node):
                if inp:
                    self.consumers[inp].append(i)
        self.graph_inputs = {i.name for i in model.graph.input}
        self.graph_outputs = {o.name for o in model.graph.output}
        self.initializers = {t.name for t in model.graph.initializer}

    def values(self) -> set[str]:
        return set(self.producer) | set(self.consumers) | self.graph_inputs | self.initializers
