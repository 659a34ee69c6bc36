"""Forward signatures (schema version 2): what each module's first call ran, in order."""

from __future__ import annotations

import json
import warnings

import jsonschema
import pytest
import torch
from torch import nn

from conftest import TINY_BERT
from semmap.manifest import SCHEMA_VERSION, build_manifest, write_manifest
from semmap.manifest import _forward
from semmap.manifest._forward import op_name
from semmap.manifest._models import build_model, example_inputs


class Scale(nn.Module):
    """A child reading its own parameter (a mul) and buffer (inside a list given to cat)."""

    def __init__(self) -> None:
        super().__init__()
        self.gain = nn.Parameter(torch.full((4,), 0.5))
        self.register_buffer("offset", torch.zeros(1, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * self.gain
        return torch.cat([y, self.offset], dim=0)[: y.shape[0]]


class Block(nn.Module):
    """An op between two child calls, a parameterless activation child, a residual add."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.act = nn.ReLU()
        self.scale = Scale()
        self.skip = nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert x.dim() == 2 and x.size(0) > 0  # computes nothing: not recorded
        h = torch.tanh(self.proj(x))
        h = self.skip(self.scale(self.act(h)))
        return x + h


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = Block()
        self.shared = nn.Linear(4, 4)
        self.again = self.shared  # one module under two names
        self.norm = nn.LayerNorm(4)
        self.unused = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.block(self.block(x))  # called twice
        x = self.again(x)  # through its second name
        x = 1 - x
        x /= 2
        return self.norm(x)


EXPECTED = {
    "": [{"call": "block"}, {"call": "block"}, {"call": "shared"}, {"op": "sub"}, {"op": "div"},
         {"call": "norm"}],
    "block": [{"call": "block.proj"}, {"op": "tanh"}, {"call": "block.act"}, {"call": "block.scale"},
              {"call": "block.skip"}, {"op": "add"}],
    "block.proj": [{"op": "linear", "reads": ["weight", "bias"]}],
    "block.act": [{"op": "relu"}],
    "block.scale": [{"op": "mul", "reads": ["gain"]}, {"op": "cat", "reads": ["offset"]}, {"op": "getitem"}],
    "block.skip": [],
    "shared": [{"op": "linear", "reads": ["weight", "bias"]}],
    "norm": [{"op": "layer_norm", "reads": ["weight", "bias"]}],
}


@pytest.fixture()
def net() -> Net:
    torch.manual_seed(0)
    return Net().eval()


def _forwards(manifest: dict) -> dict[str, list]:
    return {m["path"]: m["forward"] for m in manifest["modules"] if "forward" in m}


def test_exact_signatures(net: Net, schema: dict) -> None:
    manifest = build_manifest(net, inputs=torch.randn(2, 4))
    assert _forwards(manifest) == EXPECTED  # "unused" never ran: no field
    assert [m["path"] for m in manifest["modules"]] == ["", "block", "block.proj", "block.act", "block.scale",
                                                        "block.skip", "shared", "norm", "unused"]
    assert manifest["schema_version"] == SCHEMA_VERSION == 2
    assert manifest["aliases"] == {"again": "shared"}
    jsonschema.validate(manifest, schema)


@pytest.mark.parametrize("inputs", ["tuple", "dict"])
def test_inputs_as_tuple_or_dict(net: Net, inputs: str) -> None:
    x = torch.randn(2, 4)
    given = (x,) if inputs == "tuple" else {"x": x}
    assert _forwards(build_manifest(net, inputs=given)) == EXPECTED


def test_without_inputs_version_1(net: Net, schema: dict) -> None:
    manifest = build_manifest(net)
    assert manifest["schema_version"] == 1
    assert not _forwards(manifest)
    jsonschema.validate(manifest, schema)
    # a version 2 manifest without any signature, or a version 1 one with one, is not valid
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**manifest, "schema_version": 2}, schema)
    with_forward = build_manifest(net, inputs=torch.randn(2, 4))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**with_forward, "schema_version": 1}, schema)


def test_recording_leaves_the_model_as_it_was(net: Net) -> None:
    net.train()
    net.block.train(False)
    x = torch.randn(2, 4)
    rng = torch.get_rng_state()
    build_manifest(net, inputs=x)
    assert net.training and not net.block.training and net.norm.training
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in net.modules())
    assert torch.equal(torch.get_rng_state(), rng)


def test_raising_forward_warns_and_writes_version_1(net: Net, tmp_path, schema: dict) -> None:
    with pytest.warns(UserWarning, match="forward signatures not recorded.*RuntimeError: .*mat1 and mat2"):
        manifest = write_manifest(net, tmp_path / "manifest.json", inputs=torch.randn(2, 3))
    assert manifest["schema_version"] == 1 and not _forwards(manifest)
    assert json.loads((tmp_path / "manifest.json").read_text()) == manifest
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in net.modules())
    jsonschema.validate(manifest, schema)


def test_inputs_of_another_kind_are_an_error(net: Net) -> None:
    with pytest.raises(TypeError, match="inputs must be"):
        build_manifest(net, inputs=3)  # type: ignore[arg-type]


def test_a_module_over_the_bound_has_no_signature(net: Net, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_forward, "MAX_EVENTS", 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        forwards = _forwards(build_manifest(net, inputs=torch.randn(2, 4)))
    # the root (6 events) and block (6) are over the bound; scale's 3 are not
    assert "" not in forwards and "block" not in forwards
    assert forwards["block.scale"] == EXPECTED["block.scale"]


@pytest.mark.parametrize(
    ("func", "name"),
    [
        (torch.Tensor.__add__, "add"), (torch.Tensor.__radd__, "add"), (torch.Tensor.__iadd__, "add"),
        (torch.Tensor.add_, "add"), (torch.Tensor.__rsub__, "sub"), (torch.rsub, "sub"),
        (torch.Tensor.__isub__, "sub"), (torch.Tensor.__rmul__, "mul"), (torch.Tensor.__itruediv__, "div"),
        (torch.Tensor.div_, "div"), (torch.Tensor.__rfloordiv__, "floor_divide"),
        (torch.Tensor.__rmatmul__, "matmul"), (torch.Tensor.__rpow__, "pow"), (torch.Tensor.__neg__, "neg"),
        (torch.Tensor.__getitem__, "getitem"), (torch.Tensor.__setitem__, "setitem"),
        (torch.Tensor.__and__, "bitwise_and"), (torch.Tensor.__or__, "bitwise_or"),
        (torch.Tensor.__invert__, "bitwise_not"), (torch.Tensor.__ge__, "ge"), (torch.Tensor.__eq__, "eq"),
        (torch.Tensor.masked_fill_, "masked_fill"), (torch.nn.functional.gelu, "gelu"),
        (torch.Tensor.view, "view"), (torch.Tensor.contiguous, "contiguous"),
        (torch.Tensor.size, None), (torch.Tensor.dim, None), (torch.Tensor.numel, None),
        (torch.Tensor.__len__, None), (torch.Tensor.__bool__, None), (torch.Tensor.__format__, None),
        (torch.Tensor.shape.__get__, None), (torch.Tensor.requires_grad_, None),
        (torch.Tensor.is_floating_point, None), (torch.Tensor.stride, None),
        (torch._C._get_tracing_state, None),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_op_names(func: object, name: str | None) -> None:
    assert op_name(func) == name


@pytest.fixture(scope="module")
def bert() -> torch.nn.Module:
    return build_model(model_type="bert", task="sequence-classification", config=TINY_BERT)


def test_bert_signatures(bert: torch.nn.Module, schema: dict) -> None:
    manifest = build_manifest(bert, inputs=example_inputs(bert))
    jsonschema.validate(manifest, schema)
    forwards = _forwards(manifest)
    for layer in range(TINY_BERT["num_hidden_layers"]):
        # BertSelfOutput: dense, dropout, then LayerNorm(hidden + input): the residual add is its own
        out = f"bert.encoder.layer.{layer}.attention.output"
        events = forwards[out]
        order = [events.index({"call": f"{out}.dense"}), events.index({"op": "add"}),
                 events.index({"call": f"{out}.LayerNorm"})]
        assert order == sorted(order)
        assert forwards[f"{out}.dense"] == [{"op": "linear", "reads": ["weight", "bias"]}]
        assert forwards[f"{out}.LayerNorm"] == [{"op": "layer_norm", "reads": ["weight", "bias"]}]
        # the activation module's op is its own, not its parent's
        intermediate = f"bert.encoder.layer.{layer}.intermediate"
        assert forwards[intermediate] == [{"call": f"{intermediate}.dense"},
                                          {"call": f"{intermediate}.intermediate_act_fn"}]
        assert forwards[f"{intermediate}.intermediate_act_fn"] == [{"op": "gelu"}]
    assert forwards[""] == [{"call": "bert"}, {"call": "dropout"}, {"call": "classifier"}]
    assert forwards["bert.encoder"] == [{"call": "bert.encoder.layer.0"}, {"call": "bert.encoder.layer.1"}]
    # the ModuleList is iterated, never called
    assert "bert.encoder.layer" not in forwards
    assert {"op": "getitem", "reads": ["position_ids"]} in forwards["bert.embeddings"]


def test_a_child_that_raises_inside_a_caught_call() -> None:
    class Fails(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            torch.relu(x)
            raise ValueError("no")

    class Parent(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fails = Fails()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            try:
                return self.fails(x)
            except ValueError:
                return torch.sigmoid(x)  # the parent's own op, after the child's call ended

    forwards = _forwards(build_manifest(Parent(), inputs=torch.randn(2)))
    assert forwards == {"": [{"call": "fails"}, {"op": "sigmoid"}], "fails": [{"op": "relu"}]}


def test_the_pass_runs_as_under_an_exporters_tracing() -> None:
    # Libraries take the path an export captures when they see a tracer
    # (transformers builds its attention masks then): so does the signature.
    class Branches(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.tanh(x) if torch.jit.is_tracing() else torch.sigmoid(x)

    assert _forwards(build_manifest(Branches(), inputs=torch.randn(2))) == {"": [{"op": "tanh"}]}
    assert not torch.jit.is_tracing()  # put back


def test_a_model_that_cannot_run_as_traced_runs_plainly() -> None:
    class Refuses(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if torch.jit.is_tracing():
                raise RuntimeError("not under a tracer")
            return torch.relu(x)

    manifest = build_manifest(Refuses(), inputs=torch.randn(2))
    assert manifest["schema_version"] == 2
    assert _forwards(manifest) == {"": [{"op": "relu"}]}
    assert not torch.jit.is_tracing()
