"""What semmap.compare_numerics holds (docs/numerics.md, "Memory and time"): the
weights stay in the model file, read by every session from there, and at most
three ONNX Runtime sessions are alive at once — the capturing copies of the two
models and the isolating copy — whatever the number of repaired modules. The
figures are scripts/bench-numerics --cost's; nothing here is timed."""

from __future__ import annotations

import weakref

import numpy as np
import onnx
import pytest

import semmap
from conftest import FIXTURES

ort = pytest.importorskip("onnxruntime")
from semmap import _numerics_run as R  # noqa: E402
from semmap.numerics import NumericsError  # noqa: E402

BERT_TS = FIXTURES / "bert-seqcls.torchscript"  # every pinned ONNX Runtime quantizes it


def test_the_light_protobuf_points_at_the_weights_in_the_file():
    path = BERT_TS / "model.onnx"
    full = onnx.load(str(path))
    light = R.load_proto(str(path))
    assert light.graph.node == full.graph.node and light.graph.input == full.graph.input
    data = path.read_bytes()
    moved = 0
    for a, b in zip(full.graph.initializer, light.graph.initializer, strict=True):
        assert a.name == b.name and list(a.dims) == list(b.dims) and a.data_type == b.data_type
        if b.data_location != onnx.TensorProto.EXTERNAL:
            assert a == b  # small, or not raw bytes: as it was
            assert len(a.raw_data) < R.LIGHT_MIN_BYTES
            continue
        moved += 1
        info = {e.key: e.value for e in b.external_data}
        assert info["location"] == path.name and not b.HasField("raw_data")
        start, length = int(info["offset"]), int(info["length"])
        assert data[start:start + length] == a.raw_data
    assert moved >= 10
    assert light.ByteSize() < len(data) / 2


def test_a_session_of_the_light_protobuf_computes_what_the_file_does():
    path = BERT_TS / "model.onnx"
    runner = R.Runner(str(path), R.load_proto(str(path)), ["CPUExecutionProvider"], "reference")
    rng = np.random.default_rng(0)
    feeds = {i.name: rng.integers(0, 50, (1, 8)).astype(np.int64) if "ids" in i.name else np.ones((1, 8), np.int64)
             for i in runner.plain().get_inputs()}
    want = runner.run(runner.plain(), feeds, None)
    got = runner.run(runner.capturing([]), feeds, None)
    for a, b in zip(want, got, strict=True):
        np.testing.assert_array_equal(a, b)


def test_bytes_that_are_not_a_model_are_refused_naming_the_file(tmp_path):
    path = BERT_TS / "model.onnx"
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(path.read_bytes()[:5000])
    with pytest.raises(ValueError):
        R.light_model_bytes(str(cut))
    with pytest.raises(NumericsError, match="cut.onnx"):
        R.load_proto(str(cut))


@pytest.fixture
def alive(monkeypatch):
    """Counts the ONNX Runtime sessions alive at once: [now, most]."""
    count = [0, 0]
    real = ort.InferenceSession

    def dropped() -> None:
        count[0] -= 1

    def made(*args, **kwargs):
        s = real(*args, **kwargs)
        count[0] += 1
        count[1] = max(count[1], count[0])
        weakref.finalize(s, dropped)
        return s

    monkeypatch.setattr(ort, "InferenceSession", made)
    return count


@pytest.fixture(scope="module")
def quantized(tmp_path_factory):
    import logging

    from onnxruntime.quantization import quantize_dynamic

    logging.getLogger().setLevel(logging.ERROR)
    q = tmp_path_factory.mktemp("q") / "model.int8.onnx"
    quantize_dynamic(str(BERT_TS / "model.onnx"), str(q))
    return q


@pytest.mark.parametrize("options, most", [
    ({}, 3),  # the capturing copies of both models and the isolating copy
    ({"isolate": False}, 2),
    ({"impact": 5}, 3),  # each repairing copy after the last: not 5 more at once
    ({"impact": 5, "max_capture_bytes": 1}, 2),  # batches: two sessions at a time
])
def test_sessions_alive_at_once(quantized, alive, options, most):
    report = semmap.compare_numerics(BERT_TS / "model.onnx", quantized, manifest=BERT_TS / "manifest.json",
                                     samples=2, **options)
    assert report.final_error > 0
    assert alive[1] == most
    if options.get("impact"):
        assert report.to_dict()["cost"]["batches"]["repair"] == options["impact"]


def test_batched_repairs_give_the_figures_of_one_batch(quantized):
    """The repaired runs grouped by the budget: the same impacts as in one group."""
    args = (BERT_TS / "model.onnx", quantized)
    one = semmap.compare_numerics(*args, manifest=BERT_TS / "manifest.json", samples=2, impact=4)
    many = semmap.compare_numerics(*args, manifest=BERT_TS / "manifest.json", samples=2, impact=4,
                                   max_capture_bytes=1)
    a = {r["module"]: r.get("impact") for r in one.modules("leaf") if "impact" in r}
    b = {r["module"]: r.get("impact") for r in many.modules("leaf") if "impact" in r}
    assert len(a) == 4 and a.keys() == b.keys()
    for m in a:
        assert a[m] == pytest.approx(b[m], rel=1e-2, abs=1e-6), m
