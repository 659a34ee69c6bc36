"""The bad-input catalogue through semmap.load (docs/robustness.md): each
kind of bad input is the documented exception, naming the file and the
cause, and leaves nothing written; two threads map at once. (semmap.export
and semmap.manifest: test_export.py, and python/tests/manifest/test_bad_input.py for
the writer alone.)"""

from __future__ import annotations

import copy
import errno
import json
import os
from concurrent.futures import ThreadPoolExecutor

import pytest

import semmap
from conftest import BERT, REPO

MODEL, MANIFEST = BERT / "model.onnx", BERT / "manifest.json"


def test_nul_bytes_in_any_path_are_refused_like_open(tmp_path):
    for kwargs in ({"reference": str(MODEL) + "\0x"}, {"rules": str(REPO / "rules" / "default.json") + "\0"}):
        with pytest.raises(ValueError, match="null byte"):
            semmap.load(MODEL, MANIFEST, **kwargs)
    with pytest.raises(ValueError, match="null byte"):
        semmap.load(bytes(MODEL), bytes(MANIFEST) + b"\0.json")


def test_inputs_of_the_wrong_kind(tmp_path):
    for bad in (42, 1.5, ["model.onnx"]):
        with pytest.raises(TypeError):
            semmap.load(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        semmap.load(MODEL, 42)  # type: ignore[arg-type]
    # A file of another kind where a model or a manifest goes: ValueError
    # naming it.
    with pytest.raises(ValueError, match="manifest.json"):
        semmap.load(MANIFEST)
    with pytest.raises(ValueError, match="model.onnx"):
        semmap.load(MODEL, MODEL)
    with pytest.raises(ValueError, match="manifest.json"):
        semmap.load(MODEL, MANIFEST, rules=MANIFEST)
    with pytest.raises((ValueError, OSError), match="is a directory"):
        semmap.load(tmp_path)


def _hostile_manifest(tmp_path, edit) -> str:
    doc = json.loads(MANIFEST.read_text())
    edit(doc)
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_manifests_the_schema_forbids_are_value_errors_with_the_pointer(tmp_path):
    doc = json.loads(MANIFEST.read_text())
    traced = next(i for i, m in enumerate(doc["modules"]) if m.get("forward"))
    first_call = next(k for k, e in enumerate(doc["modules"][traced]["forward"]) if "call" in e)
    path = doc["modules"][traced]["path"]
    pointer = f"/modules/{traced}/forward/{first_call}"
    edits = {
        f"{pointer}/reads": lambda d: d["modules"][traced]["forward"][first_call].update(reads=["weight"]),
        f"{pointer}/call": lambda d: d["modules"][traced]["forward"][first_call].update(call=path),
        f"/modules/{traced}/forward": lambda d: d["modules"][traced].update(forward=[{"op": "add"}] * 10_001),
        "/schema_version": lambda d: [m.pop("forward", None) for m in d["modules"]],
        f"/modules/{traced}/future": lambda d: d["modules"][traced].update(future=1),
    }
    for fragment, edit in edits.items():
        with pytest.raises(ValueError, match=f"hostile.json: {fragment}"):
            semmap.load(MODEL, _hostile_manifest(tmp_path, edit))


def test_a_rule_file_cannot_make_guesses_certain(tmp_path):
    rules = json.loads((REPO / "rules" / "default.json").read_text())
    certain = copy.deepcopy(rules)
    certain["calibration"] = {"structure": [[0.0, 1.0]]}
    path = tmp_path / "certain.json"
    path.write_text(json.dumps(certain))
    with pytest.raises(ValueError, match="certain.json: /calibration/structure/0: .*confident floor"):
        semmap.load(MODEL, MANIFEST, rules=path)
    decreasing = copy.deepcopy(rules)
    decreasing["calibration"] = {"op_rule": [[0.0, 0.8], [1.0, 0.01]]}
    path.write_text(json.dumps(decreasing))
    with pytest.raises(ValueError, match="/calibration/op_rule/1: .*must not decrease"):
        semmap.load(MODEL, MANIFEST, rules=path)
    # Without any table, inferred answers stay below the floor all the same.
    rules.pop("calibration")
    path.write_text(json.dumps(rules))
    stripped = REPO / "fixtures" / "bert-seqcls.dynamo.stripped"
    m = semmap.load(stripped / "model.onnx", stripped / "manifest.json", rules=path)
    inferred = {"tensor_names", "scope_prefix", "op_rule", "neighbourhood", "structure"}
    guesses = [x for x in m if str(x.strategy) in inferred]
    assert guesses and max(x.confidence for x in guesses) < semmap.CONFIDENT_FLOOR


def test_a_write_into_a_read_only_directory_is_a_permission_error(bert, read_only_dir):
    for write in (bert.annotate, bert.report, bert.write_sidecar):
        with pytest.raises(PermissionError, match="ro"):
            write(read_only_dir / "out")
    assert list(read_only_dir.iterdir()) == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_is_an_os_error_with_its_errno_not_a_memory_error(bert):
    # The writers write through a device (they never replace one); /dev/full
    # fails every write with ENOSPC, which the library reports as
    # ResourceExhausted with the errno beside it (semmap/system_error.h).
    for write in (bert.report, bert.write_sidecar):
        with pytest.raises(OSError) as raised:
            write("/dev/full", allow_overwrite=True)
        assert not isinstance(raised.value, MemoryError)
        assert raised.value.errno == errno.ENOSPC
        assert "/dev/full" in str(raised.value)


def test_a_path_through_a_file_is_a_file_not_found_error_with_its_errno(tmp_path):
    # stat("<file>/model.onnx") fails with ENOTDIR: no such file, as open() says.
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(FileNotFoundError) as raised:
        semmap.load(tmp_path / "file" / "model.onnx")
    assert raised.value.errno == errno.ENOTDIR


def test_two_threads_mapping_at_once_give_the_answers_of_one(tmp_path):
    def answers(k: int) -> list[tuple]:
        m = semmap.load(MODEL, MANIFEST)
        m.write_sidecar(tmp_path / f"s{k % 2}.json")
        return [(x.node, x.module, x.confidence, str(x.strategy)) for x in m]

    alone = answers(0)
    with ThreadPoolExecutor(2) as pool:  # an exception in a thread is raised here
        together = list(pool.map(answers, range(6)))
    assert all(result == alone for result in together)
    assert json.loads((tmp_path / "s0.json").read_text()) == json.loads((tmp_path / "s1.json").read_text())
