"""node_ids(): traversal order and the uniqueness rule shared with the C++ side."""

from __future__ import annotations

import onnx
import pytest
from onnx import helper

from conftest import fixture_dirs
from semmap_corpus.node_ids import iter_nodes, node_ids


def _model() -> onnx.ModelProto:
    then_g = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["t"], name="dup"), helper.make_node("Neg", ["t"], ["y1"], name="")],
        "then", [], [helper.make_tensor_value_info("y1", onnx.TensorProto.FLOAT, None)],
    )
    else_g = helper.make_graph(
        [helper.make_node("Abs", ["x"], ["y2"], name="inner")],
        "else", [], [helper.make_tensor_value_info("y2", onnx.TensorProto.FLOAT, None)],
    )
    nodes = [
        helper.make_node("Identity", ["x"], ["a"], name="dup"),
        helper.make_node("Cast", ["c"], ["b"], name="", to=9),
        helper.make_node("If", ["b"], ["y"], name="if", then_branch=then_g, else_branch=else_g),
        helper.make_node("MyFn", ["y"], ["z"], name="call", domain="local"),
    ]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1]),
         helper.make_tensor_value_info("c", onnx.TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, [1])],
    )
    fn = helper.make_function("local", "MyFn", ["i"], ["o"], [helper.make_node("Relu", ["i"], ["o"], name="call")],
                              [helper.make_opsetid("", 17)])
    return helper.make_model(graph, functions=[fn], opset_imports=[helper.make_opsetid("", 17),
                                                                    helper.make_opsetid("local", 1)])


def test_traversal_order_and_ids() -> None:
    model = _model()
    # main node, then its GRAPH attributes in the order stored in the proto (helper.make_node
    # sorts them by name, so else_branch comes before then_branch, as in Optimum's merged
    # decoders), then the functions
    if_node = model.graph.node[2]
    assert [a.name for a in if_node.attribute] == ["else_branch", "then_branch"]
    assert [n.op_type for n in iter_nodes(model)] == ["Identity", "Cast", "If", "Abs", "Identity", "Neg", "MyFn", "Relu"]
    assert node_ids(model) == ["dup#0", "#1", "if", "inner", "dup#4", "#5", "call#6", "call#7"]


@pytest.mark.parametrize("fixture", fixture_dirs(), ids=lambda p: p.name)
def test_corpus_ids_unique_and_follow_rule(fixture) -> None:
    model = onnx.load(str(fixture / "model.onnx"), load_external_data=False)
    names = [n.name for n in iter_nodes(model)]
    ids = node_ids(model)
    assert len(ids) == len(set(ids))
    for i, (name, node_id) in enumerate(zip(names, ids)):
        if name and names.count(name) == 1:
            assert node_id == name
        else:
            assert node_id == f"{name}#{i}"


def test_generated_id_never_takes_another_nodes_name() -> None:
    # "dup" at indexes 0 and 2 would give "dup#2", the name of node 1 (the C++
    # side's tests/graph/graph_test.cc checks the same model).
    nodes = [
        helper.make_node("Relu", ["x"], ["y"], name="dup"),
        helper.make_node("Relu", ["y"], ["z"], name="dup#2"),
        helper.make_node("Relu", ["z"], ["w"], name="dup"),
        helper.make_node("Relu", ["w"], ["v"], name="dup#2#"),
    ]
    graph = helper.make_graph(nodes, "g", [], [])
    ids = node_ids(helper.make_model(graph))
    assert ids == ["dup#0", "dup#2", "dup#2##", "dup#2#"]
    assert len(set(ids)) == len(ids)
