"""The bad-input catalogue through semmap.manifest (docs/robustness.md).

Paths with a NUL byte or in no encoding, a model whose forward raises or
recurses, arguments of the wrong kind, a read-only directory, two threads
writing at once: each is a clear exception before anything is written, or a
manifest the schema and semmap's reader accept.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor

import jsonschema
import pytest
import torch

from semmap.manifest import build_manifest, write_manifest


class Small(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)
        self.act = torch.nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.lin(x)) + 1


class Raises(Small):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.lin(x)
        raise RuntimeError("boom in forward")


class Recursive(torch.nn.Module):
    """A tree-structured net: the block calls itself on halves of its input."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)
        self.block = _Block(self.lin)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x, 2)


class _Block(torch.nn.Module):
    def __init__(self, lin: torch.nn.Linear) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(2, 2)

    def forward(self, x: torch.Tensor, depth: int) -> torch.Tensor:
        y = self.proj(x)
        return self(y, depth - 1) if depth > 0 else y


def test_paths_with_a_nul_byte_are_refused_before_the_model_runs(tmp_path) -> None:
    ran = []
    model = Small()
    model.register_forward_pre_hook(lambda *_: ran.append(1))
    for bad in (str(tmp_path / "m.json") + "\0.txt", bytes(tmp_path / "m.json") + b"\0"):
        with pytest.raises(ValueError, match="null byte"):
            write_manifest(model, bad, inputs=torch.zeros(1, 2))
    assert ran == [] and list(tmp_path.iterdir()) == []


def test_file_names_in_no_encoding_are_written_as_given(tmp_path, schema: dict) -> None:
    raw = bytes(tmp_path) + b"/m\xff.json"  # bytes, as os.listdir(bytes) gives them
    write_manifest(Small(), raw, inputs=torch.zeros(1, 2))
    assert os.path.exists(raw)
    escaped = os.fsdecode(bytes(tmp_path) + b"/n\xfe.json")  # str with a surrogate escape
    write_manifest(Small(), escaped)
    with open(raw, "rb") as f:
        jsonschema.validate(json.load(f), schema)
    assert os.path.exists(os.fsencode(escaped))


def test_arguments_of_the_wrong_kind_are_type_errors(tmp_path) -> None:
    with pytest.raises(TypeError, match="torch.nn.Module"):
        write_manifest("not a model", tmp_path / "m.json")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        write_manifest(Small(), 42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="inputs must be"):
        write_manifest(Small(), tmp_path / "m.json", inputs="text")  # type: ignore[arg-type]
    with pytest.raises(IsADirectoryError):
        write_manifest(Small(), tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_forward_that_raises_writes_version_1_with_a_warning(tmp_path, schema: dict) -> None:
    dest = tmp_path / "m.json"
    with pytest.warns(UserWarning, match="RuntimeError: boom in forward"):
        write_manifest(Raises(), dest, inputs=torch.zeros(1, 2))
    manifest = json.loads(dest.read_text())
    jsonschema.validate(manifest, schema)
    assert manifest["schema_version"] == 1
    assert not any("forward" in m for m in manifest["modules"])
    # Inputs the model cannot take raise in forward too.
    with pytest.warns(UserWarning, match="not recorded"):
        assert build_manifest(Small(), inputs=torch.zeros(3, 5))["schema_version"] == 1


def test_a_module_called_while_it_runs_is_left_out_not_a_cycle(schema: dict) -> None:
    # A signature recording the block calling itself would be refused by
    # every reader (a module calling itself); the others are kept.
    manifest = build_manifest(Recursive(), inputs=torch.zeros(1, 2))
    jsonschema.validate(manifest, schema)
    by_path = {m["path"]: m for m in manifest["modules"]}
    assert "forward" not in by_path["block"]
    assert by_path["block.proj"]["forward"] == [{"op": "linear", "reads": ["weight", "bias"]}]
    for module in manifest["modules"]:
        for event in module.get("forward", ()):
            assert event.get("call") not in (module["path"], "")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_directory_is_a_permission_error(tmp_path) -> None:
    read_only = tmp_path / "ro"
    read_only.mkdir()
    read_only.chmod(0o555)
    try:
        with pytest.raises(PermissionError):
            write_manifest(Small(), read_only / "m.json")
        assert list(read_only.iterdir()) == []
    finally:
        read_only.chmod(0o755)


def test_two_threads_writing_at_once_each_write_a_whole_manifest(tmp_path, schema: dict) -> None:
    def write(k: int) -> None:
        write_manifest(Small(), tmp_path / f"m{k % 2}.json", inputs=torch.zeros(1, 2))
        write_manifest(Small(), tmp_path / "shared.json", inputs=torch.zeros(1, 2))

    with ThreadPoolExecutor(2) as pool:  # an exception in a thread is raised here
        list(pool.map(write, range(10)))
    assert torch.jit.is_tracing() is False  # each pass's tracing flag is undone
    for name in ("m0.json", "m1.json", "shared.json"):
        manifest = json.loads((tmp_path / name).read_text())
        jsonschema.validate(manifest, schema)
        assert manifest["schema_version"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m0.json", "m1.json", "shared.json"]
