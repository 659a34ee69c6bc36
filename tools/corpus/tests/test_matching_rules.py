"""The truth rules of the torch-2.15 slice, on small graphs built with onnx.helper.

* rewritten nodes (``pkg.onnxscript.rewriter.rule_name``): lowest common
  ancestor of the metadata module and the owners of the parameters read;
* in-place fusions (same name, other op type) matched through the nodes they replaced;
* re-sorted copies matched through the recorded permutation, never by position.
"""

from __future__ import annotations

import onnx
import pytest
import torch
from onnx import TensorProto, helper

from semmap_corpus.matching import (
    dominant_part,
    matched_truth,
    op_type_overlap,
    permuted_truth,
    positional_truth,
    resort,
)
from semmap_corpus.node_ids import node_ids
from semmap_corpus.strip import strip_names
from semmap_corpus.truth import (
    REWRITER_RULE_KEY,
    add_folded_origins,
    dynamo_truth,
    folded_modules,
    parameter_owners,
)


class ConvBn(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 1, bias=False)
        self.bn = torch.nn.BatchNorm2d(4)
        self.act = torch.nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.bn(self.conv(x)))


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = ConvBn()
        self.head = torch.nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.block(x).flatten(1))


def _meta(node: onnx.NodeProto, scopes: list[str], rule: str | None = None) -> onnx.NodeProto:
    helper.set_metadata_props(node, {"pkg.torch.onnx.name_scopes": repr(scopes)})
    if rule:
        node.metadata_props.add(key=REWRITER_RULE_KEY, value=rule)
    return node


def _tensor(name: str, dims: list[int]) -> onnx.TensorProto:
    return helper.make_tensor(name, TensorProto.FLOAT, dims, [0.5] * int(torch.tensor(dims).prod()))


def _dynamo_like_model() -> onnx.ModelProto:
    nodes = [
        # torch 2.15: Conv with BatchNorm folded in, labelled with the BatchNorm's stack
        _meta(helper.make_node("Conv", ["x", "block.conv.weight", "block.conv.weight_bias"], ["bn"], name="node_Conv_1"),
              ["", "block", "block.bn", "_native_batch_norm_legit_no_training"],
              "FuseBatchNormIntoConv, RemoveOptionalBiasFromConv"),
        _meta(helper.make_node("Relu", ["bn"], ["relu"], name="node_relu"), ["", "block", "block.act", "relu"]),
        # rewritten, but reads only a constant: keeps its metadata module
        _meta(helper.make_node("Reshape", ["relu", "shape"], ["flat"], name="node_Reshape_2"),
              ["", "view"], "MaterializeReshapeShape"),
        # rewritten, reads its own module's parameter: unchanged
        _meta(helper.make_node("Gemm", ["flat", "head.weight", "head.bias"], ["y"], name="node_linear", transB=1),
              ["", "head", "linear"], "SomeRule"),
        # dynamic-dimension read: placeholder stack
        _meta(helper.make_node("Shape", ["x"], ["s"], name="node_Shape_0"),
              ["_empty_nn_module_stack_from_metadata_hook", "sym_size_int_3"]),
    ]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 1, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2]),
         helper.make_tensor_value_info("s", TensorProto.INT64, [4])],
        [_tensor("block.conv.weight", [4, 3, 1, 1]), _tensor("block.conv.weight_bias", [4]),
         _tensor("head.weight", [2, 4]), _tensor("head.bias", [2]),
         helper.make_tensor("shape", TensorProto.INT64, [2], [1, 4])],
    )
    return helper.make_model(graph)


def test_parameter_owners() -> None:
    owners = parameter_owners(Net())
    assert owners["block.conv.weight"] == "block.conv"
    assert owners["block.bn.running_mean"] == "block.bn"  # buffers too
    assert owners["head.bias"] == "head"
    assert "block.conv.weight_bias" not in owners  # made by the exporter's optimizer, not a parameter


def test_rewritten_conv_is_the_conv_with_the_batchnorm_as_origin() -> None:
    truth = dynamo_truth(_dynamo_like_model(), Net(), rewriter_lca=True)
    # reads one module's parameters (the Conv's): that module, both as origins
    assert truth["nodes"]["node_Conv_1"] == "block.conv"
    assert truth["origins"] == {"node_Conv_1": ["block.bn", "block.conv"]}
    assert truth["nodes"]["node_relu"] == "block.act"
    assert truth["nodes"]["node_Reshape_2"] == ""  # no parameter read: metadata module (root)
    assert truth["nodes"]["node_linear"] == "head"  # reads its own parameters: unchanged
    assert "node_Shape_0" in truth["unknown"]  # placeholder stack stays unknown
    assert "pkg.onnxscript.rewriter.rule_name" in truth["rules"]


def test_without_the_rule_the_metadata_module_is_kept() -> None:
    truth = dynamo_truth(_dynamo_like_model(), Net(), rewriter_lca=False)
    assert truth["nodes"]["node_Conv_1"] == "block.bn"
    assert "rule_name" not in truth["rules"]


def _conv_relu(fused: bool) -> onnx.ModelProto:
    if fused:  # ONNX Runtime: Conv + Relu -> FusedConv, named after the Conv
        nodes = [helper.make_node("FusedConv", ["x", "w"], ["r"], name="/a/conv/Conv", domain="com.microsoft",
                                  activation="Relu"),
                 helper.make_node("Identity", ["r"], ["y"], name="/head/Identity")]
    else:
        nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="/a/conv/Conv"),
                 helper.make_node("Relu", ["c"], ["r"], name="/a/act/Relu"),
                 helper.make_node("Identity", ["r"], ["y"], name="/head/Identity")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 1, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 1, 1])], [_tensor("w", [1, 1, 1, 1])])
    return helper.make_model(graph)


def test_in_place_fusion_is_matched_through_the_nodes_it_replaced() -> None:
    original = _conv_relu(False)
    truth = {"nodes": {"/a/conv/Conv": "a.conv", "/a/act/Relu": "a.act", "/head/Identity": "head"}, "unknown": [],
             "rules": "test"}
    fused = _conv_relu(True)
    new = matched_truth(fused, original, truth, "src", in_place_fusions=True)
    # FusedConv carries "Conv": the Conv's module, both as origins
    assert new["nodes"]["/a/conv/Conv"] == "a.conv"
    assert new["origins"] == {"/a/conv/Conv": ["a.act", "a.conv"]}
    # reading a parameter of the activation's module, no part dominates: LCA
    owned = matched_truth(fused, original, truth, "src", in_place_fusions=True, owners={"w": "a.act"})
    assert owned["nodes"]["/a/conv/Conv"] == "a"
    assert new["nodes"]["/head/Identity"] == "head"  # same name, same op: rule 1
    assert "fused in place" in new["rules"]
    # the torch-2.9 slice keeps the plain same-name rule
    assert matched_truth(fused, original, truth, "src")["nodes"]["/a/conv/Conv"] == "a.conv"


def test_op_type_overlap_and_dominant_part() -> None:
    assert op_type_overlap("FusedConv", "Conv") == 4
    assert op_type_overlap("SkipLayerNormalization", "LayerNormalization") == 18
    assert op_type_overlap("MatMul", "Mul") == 3
    assert op_type_overlap("Convolution", "Conv") == 0
    assert op_type_overlap("Attention", "MatMul") == 0
    # the longest part wins; parts of two modules at that length: none dominates
    assert dominant_part("FusedMatMul", [("MatMul", "m"), ("Mul", "s")], []) == "m"
    assert dominant_part("Attention", [("MatMul", "q"), ("MatMul", "k")], []) is None
    assert dominant_part("FusedConv", [("Conv", "c"), ("Relu", "r")], ["c"]) == "c"
    assert dominant_part("EmbedLayerNormalization", [("Gather", "e"), ("LayerNormalization", "n")], ["e", "n"]) is None


def test_folded_modules_come_from_a_forward_pass() -> None:
    net = Net().eval()
    folded = folded_modules(net, (torch.randn(1, 3, 1, 1),))
    assert folded == {"block.conv": ["block.bn"]}  # the act holds no tensors; head reads block's output


def test_origins_are_added_where_the_folded_module_has_no_node() -> None:
    model = _dynamo_like_model()
    truth = {"nodes": {"node_Conv_1": "block.conv", "node_relu": "block.act"}, "unknown": [], "rules": "r"}
    out = add_folded_origins(model, truth, {"block.conv": ["block.bn"]})
    assert out["origins"] == {"node_Conv_1": ["block.bn", "block.conv"]}
    assert out["nodes"] == truth["nodes"]
    # a BatchNorm with a node of its own was not folded
    truth["nodes"]["node_relu"] = "block.bn"
    assert "origins" not in add_folded_origins(model, truth, {"block.conv": ["block.bn"]})


def _wide_model() -> onnx.ModelProto:
    """Eight independent branches x -> Neg -> Abs joined by a Sum: many ready nodes at each step."""
    nodes = []
    for k in range(8):
        nodes.append(helper.make_node("Neg", ["x"], [f"n{k}"], name=f"/b{k}/Neg"))
        nodes.append(helper.make_node("Abs", [f"n{k}"], [f"a{k}"], name=f"/b{k}/Abs"))
    nodes.append(helper.make_node("Sum", [f"a{k}" for k in range(8)], ["y"], name="/Sum"))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    return helper.make_model(graph)


def _wide_truth(model: onnx.ModelProto) -> dict:
    nodes = {i: (f"b{i.split('/')[1][1:]}" if i != "/Sum" else "") for i in node_ids(model)}
    return {"nodes": nodes, "unknown": [], "rules": "test"}


def test_resort_is_deterministic_topological_and_changes_order() -> None:
    model = _wide_model()
    a, order_a = resort(model, 0)
    b, order_b = resort(model, 0)
    assert order_a == order_b and a.SerializeToString() == b.SerializeToString()
    assert order_a != list(range(len(model.graph.node)))
    assert sorted(order_a) == list(range(len(model.graph.node)))
    seen = {"x"}
    for node in a.graph.node:
        assert all(v in seen for v in node.input)
        seen.update(node.output)
    onnx.checker.check_model(a)
    assert resort(model, 1)[1] != order_a  # the seed matters


def test_resorted_truth_follows_the_recorded_permutation() -> None:
    model = _wide_model()
    truth = _wide_truth(model)
    resorted, order = resort(model, 0)
    new = permuted_truth(resorted, model, truth, order, "src", 0)
    assert new["nodes"] == {i: truth["nodes"][i] for i in node_ids(resorted)}  # names kept: same module per name
    # stripped again: names n<i> in the new order; the module still follows the permutation
    stripped = strip_names(resorted)
    assert [n.name for n in stripped.graph.node] == [f"n{i}" for i in range(len(order))]
    new = permuted_truth(stripped, model, truth, order, "src", 0, renamed=True)
    source_ids = node_ids(model)
    for i, k in enumerate(order):
        assert new["nodes"][f"n{i}"] == truth["nodes"][source_ids[k]]
    assert "stripped again" in new["rules"]
    # position alone would be wrong: positional_truth refuses the re-sorted copy
    with pytest.raises(ValueError):
        positional_truth(stripped, model, truth, "src")


def test_permuted_truth_rejects_a_wrong_order() -> None:
    model = _wide_model()
    resorted, order = resort(model, 0)
    with pytest.raises(ValueError):
        permuted_truth(resorted, model, _wide_truth(model), order[:-1], "src", 0)
    swapped = list(order)
    neg = next(i for i, k in enumerate(order) if model.graph.node[k].op_type == "Neg")
    abs_ = next(i for i, k in enumerate(order) if model.graph.node[k].op_type == "Abs")
    swapped[neg], swapped[abs_] = swapped[abs_], swapped[neg]
    with pytest.raises(ValueError):
        permuted_truth(resorted, model, _wide_truth(model), swapped, "src", 0)
