"""Stable node identifiers for ONNX models, shared with the semmap C++ side.

The traversal order and the id rule are part of the fixture format
(``fixtures/README.md``, section "Node ids"); the C++ mapper computes the
identical key, so change both or neither.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterator

import onnx


def iter_graph_nodes(graph: onnx.GraphProto) -> Iterator[onnx.NodeProto]:
    """Yield the nodes of ``graph`` depth first: each node, then the nodes of its
    GRAPH / GRAPHS attributes (in attribute order, graphs in order), recursively."""
    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from iter_graph_nodes(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    yield from iter_graph_nodes(sub)


def iter_nodes(model: onnx.ModelProto) -> Iterator[onnx.NodeProto]:
    """All nodes in traversal order: the main graph (with subgraphs, depth first),
    then the nodes of each model-local function in ``model.functions`` order."""
    yield from iter_graph_nodes(model.graph)
    for function in model.functions:
        yield from function.node


def node_ids(model: onnx.ModelProto) -> list[str]:
    """The id of every node, in :func:`iter_nodes` order.

    The id of the node with global index ``i`` is its name when the name is
    non-empty and occurs exactly once in the whole traversal, otherwise
    ``"<name>#<i>"`` (``"#<i>"`` for an empty name). Should that string be
    another node's unique name, ``"#"`` is appended until it is not.
    """
    names = [node.name for node in iter_nodes(model)]
    counts = Counter(names)
    unique = {name for name in names if name and counts[name] == 1}
    ids = []
    for i, name in enumerate(names):
        if name in unique:
            ids.append(name)
            continue
        generated = f"{name}#{i}"
        while generated in unique:
            generated += "#"
        ids.append(generated)
    return ids
