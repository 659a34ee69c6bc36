"""Scope resolution against real exports: Sequential containers and modules called twice."""

from __future__ import annotations

import onnx
import torch

from semmap.manifest._export import export_onnx
from semmap_corpus.truth import torchscript_truth


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(4, 4, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(4, 4, 3, padding=1)
        self.relu = torch.nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # relu is called twice: the second call's scope is "relu_1"
        return self.relu(self.conv2(self.relu(self.conv1(x))) + x)


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 4, 1)
        self.layer1 = torch.nn.Sequential(Block(), Block())
        self.heads = torch.nn.ModuleList([torch.nn.Conv2d(4, 2, 1)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.heads[0](self.layer1(self.stem(x)))


def test_sequential_and_repeated_calls(tmp_path) -> None:
    torch.manual_seed(0)
    model = Net().eval()
    path = tmp_path / "net.onnx"
    export_onnx(model, {"x": torch.randn(1, 3, 8, 8)}, path, exporter="torchscript")
    onnx_model = onnx.load(str(path))
    names = {n.name for n in onnx_model.graph.node}
    assert "/layer1/layer1.1/relu_1/Relu" in names  # Sequential repeats its name; second call gets _1
    truth = torchscript_truth(onnx_model, model)["nodes"]
    assert truth["/layer1/layer1.1/relu_1/Relu"] == "layer1.1.relu"
    assert truth["/layer1/layer1.0/conv1/Conv"] == "layer1.0.conv1"
    assert truth["/heads.0/Conv"] == "heads.0"
    assert truth["/stem/Conv"] == "stem"
