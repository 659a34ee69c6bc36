"""The bad-input catalogue through semmap.manifest (docs/robustness.md).

Paths with a NUL byte or in no encoding, a model whose forward raises or
recurses, arguments of the wrong kind, a read-only directory, two threads
writing at once, outputs that are FIFOs, devices, links or sockets: each is a clear exception before anything is written, or a
manifest the schema and semmap's reader accept.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import stat
import threading
from concurrent.futures import ThreadPoolExecutor

import jsonschema
import onnx
import pytest
import torch

from semmap.manifest import build_manifest, write_manifest
from semmap.manifest._export import export_onnx, export_with_manifest


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


def _read_in_thread(fifo) -> tuple[threading.Thread, dict]:
    """A reader of `fifo` (a writer's open() blocks until one exists)."""
    got: dict = {}

    def read() -> None:
        with open(fifo, "rb") as f:
            got["bytes"] = f.read()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader, got


def test_a_fifo_is_written_into_never_replaced(tmp_path, schema: dict) -> None:
    fifo = tmp_path / "m.json"
    os.mkfifo(fifo)
    reader, got = _read_in_thread(fifo)
    manifest = write_manifest(Small(), fifo, inputs=torch.zeros(1, 2))
    reader.join(30)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert json.loads(got["bytes"]) == manifest
    jsonschema.validate(manifest, schema)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]  # no temporary file left


def _null_device(tmp_path) -> str:
    """A character device to write to: as root, a null device made in
    `tmp_path` (a writer that replaced it must not take the machine's
    /dev/null with it); else /dev/null, which no other user can replace."""
    if os.geteuid() != 0:
        return "/dev/null"
    path = tmp_path / "null"
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    return str(path)


def test_a_character_device_is_written_into_never_replaced(tmp_path) -> None:
    device = _null_device(tmp_path)
    before = os.stat(device)
    write_manifest(Small(), device)
    after = os.lstat(device)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


def test_an_onnx_export_into_a_fifo_streams_the_model(tmp_path) -> None:
    fifo = tmp_path / "model.onnx"
    os.mkfifo(fifo)
    reader, got = _read_in_thread(fifo)
    export_onnx(Small(), torch.zeros(1, 2), fifo, exporter="torchscript")
    reader.join(60)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert len(onnx.load_from_string(got["bytes"]).graph.node) > 0


def test_export_refuses_streams_it_could_not_read_back(tmp_path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for model_path, manifest_path in ((fifo, tmp_path / "m.json"), (tmp_path / "m.onnx", fifo),
                                      (tmp_path / "m.onnx", _null_device(tmp_path))):
        with pytest.raises(ValueError, match="FIFO or character device"):
            export_with_manifest(Small(), torch.zeros(1, 2), model_path, manifest=manifest_path,
                                 exporter="torchscript", opset=None, dynamic=False,
                                 vmap_free_masks=False)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("m.")]


def test_links_are_written_through_and_special_files_refused(tmp_path) -> None:
    target = tmp_path / "real.json"
    target.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    manifest = write_manifest(Small(), link)
    assert link.is_symlink() and json.loads(target.read_text()) == manifest

    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nowhere" / "x.json")
    loop_a, loop_b = tmp_path / "loop_a.json", tmp_path / "loop_b.json"
    loop_a.symlink_to(loop_b)
    loop_b.symlink_to(loop_a)
    for bad in (dangling, loop_a):
        with pytest.raises(ValueError, match="leads nowhere"):
            write_manifest(Small(), bad)
        assert bad.is_symlink()
    with pytest.raises(IsADirectoryError):
        write_manifest(Small(), tmp_path)
    with socket.socket(socket.AF_UNIX) as sock:
        sock_path = tmp_path / "sock"
        sock.bind(str(sock_path))
        with pytest.raises(ValueError, match="not a regular file, FIFO or character device"):
            write_manifest(Small(), sock_path)
        assert stat.S_ISSOCK(os.lstat(sock_path).st_mode)
    assert not (tmp_path / "nowhere").exists()
    assert not [p for p in tmp_path.iterdir() if ".tmp" in p.name]


def test_a_killed_writers_temporary_file_is_removed_by_the_next_write(tmp_path) -> None:
    """Named as semmap's C++ writers name theirs, so each removes the other's:
    a dead pid's unlocked file goes; a live pid's, a locked one (a writer in
    another pid namespace), and files that only look like one stay."""
    dead = 2**22 - 7
    stale = tmp_path / f".m.json.tmp-{dead}-0-1"
    kept = [tmp_path / f".m.json.tmp-{os.getppid()}-0-1",  # alive
            tmp_path / f".m.json.tmp-{dead}-0-1234567", tmp_path / f".m.json.tmp-{dead}-0-1x",
            tmp_path / f".other.json.tmp-{dead}-0-1", tmp_path / "m.json.bak"]
    locked = tmp_path / f".m.json.tmp-{dead}-3-4"
    for path in [stale, locked, *kept]:
        path.write_text("partial")
    with open(locked, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        write_manifest(Small(), tmp_path / "m.json")
    assert not stale.exists()
    assert all(p.exists() for p in [locked, *kept])
    write_manifest(Small(), tmp_path / "m.json")  # released: removed now
    assert not locked.exists()
    assert all(p.exists() for p in kept)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".m.json.tmp-")) == sorted(
        p.name for p in kept if p.name.startswith(".m.json.tmp-"))
