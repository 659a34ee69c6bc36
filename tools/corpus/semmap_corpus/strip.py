"""Name-stripped copies of ONNX models (what a model looks like after tools that drop names).

Node names become ``n<i>`` (traversal order of :func:`semmap_corpus.node_ids.iter_nodes`),
intermediate value names ``v<i>`` (order of first appearance); graph inputs,
graph outputs and initializer names are kept. All ``metadata_props`` and
``doc_string`` fields are removed.
"""

from __future__ import annotations

import copy

import onnx

from semmap_corpus.node_ids import iter_nodes


def _graphs(graph: onnx.GraphProto):  # type: ignore[no-untyped-def]
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield from _graphs(g)


def strip_names(model: onnx.ModelProto) -> onnx.ModelProto:
    """Return a stripped copy of ``model`` (the input is not modified)."""
    out = copy.deepcopy(model)
    keep = {i.name for i in out.graph.input} | {o.name for o in out.graph.output}
    keep |= {t.name for t in out.graph.initializer} | {""}
    for g in _graphs(out.graph):
        keep |= {t.name for t in g.initializer}
    for f in out.functions:
        keep |= set(f.input) | set(f.output)
    rename: dict[str, str] = {}

    def new_name(old: str) -> str:
        if old in keep:
            return old
        if old not in rename:
            rename[old] = f"v{len(rename)}"
        return rename[old]

    # first pass in traversal order so names are assigned deterministically
    for i, node in enumerate(iter_nodes(out)):
        node.name = f"n{i}"
        node.doc_string = ""
        del node.metadata_props[:]
        for k, v in enumerate(node.input):
            node.input[k] = new_name(v)
        for k, v in enumerate(node.output):
            node.output[k] = new_name(v)
    for g in _graphs(out.graph):
        g.doc_string = ""
        del g.metadata_props[:]
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            vi.name = new_name(vi.name)
            vi.doc_string = ""
            del vi.metadata_props[:]
        for t in g.initializer:
            t.doc_string = ""
            del t.metadata_props[:]
    for f in out.functions:
        f.doc_string = ""
        del f.metadata_props[:]
    out.doc_string = ""
    del out.metadata_props[:]
    return out
