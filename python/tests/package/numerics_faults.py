"""Fault injection for compare_numerics: a copy of a model in which the weights of
one module, and only that module, are damaged. Used by test_numerics.py and by
scripts/bench-numerics (which puts this directory on sys.path)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

FLOATS = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE}
MIN_ELEMENTS = 16  # a weight, not a shape constant or a scalar


def module_weights(proto: onnx.ModelProto, mapped) -> dict[str, list[str]]:
    """The float initializers of at least MIN_ELEMENTS elements that the nodes of one
    module (mapped to it exactly), and no other node, read: module -> names. A
    weight shared by two modules (tied embeddings) belongs to neither."""
    inits = {t.name: t for t in proto.graph.initializer}
    readers: dict[str, set[str | None]] = {}
    position = 0
    for node in proto.graph.node:
        module = mapped[position].module
        assert mapped[position].name == node.name, "main graph nodes only (no subgraphs here)"
        position += 1
        for v in node.input:
            if v in inits:
                readers.setdefault(v, set()).add(module)
    owned: dict[str, list[str]] = {}
    for name, modules in readers.items():
        t = inits[name]
        if len(modules) != 1 or None in modules or t.data_type not in FLOATS:
            continue
        if int(np.prod(t.dims, dtype=np.int64)) < MIN_ELEMENTS or t.data_location == onnx.TensorProto.EXTERNAL:
            continue
        (module,) = modules
        owned.setdefault(module, []).append(name)
    return owned


def damage(w: np.ndarray, how: str, rng: np.random.Generator) -> np.ndarray:
    """'bits2' / 'bits3': symmetric per-tensor quantization to 2 or 3 bits
    (levels -1..1 or -3..3 times max|w| / levels); 'noise': w * (1 + 0.5 N(0, 1))."""
    x = w.astype(np.float64)
    if how in ("bits2", "bits3"):
        levels = 1 if how == "bits2" else 3
        scale = np.abs(x).max() / levels
        out = np.zeros_like(x) if scale == 0 else np.clip(np.round(x / scale), -levels, levels) * scale
    elif how == "noise":
        out = x * (1 + 0.5 * rng.standard_normal(x.shape))
    else:
        raise ValueError(f"unknown damage {how!r}")
    return out.astype(w.dtype)


def damaged_copy(source: Path, mapped, module: str, out: Path, how: str = "bits2", seed: int = 0) -> list[str]:
    """Writes `source` with the weights of `module` damaged to `out`; returns their names."""
    proto = onnx.load(str(source))
    names = module_weights(proto, mapped).get(module)
    if not names:
        raise ValueError(f"{source}: module {module!r} owns no weight of its own")
    rng = np.random.default_rng(seed)
    wanted = set(names)
    for t in proto.graph.initializer:
        if t.name in wanted:
            t.CopyFrom(numpy_helper.from_array(damage(numpy_helper.to_array(t), how, rng), t.name))
    onnx.save(proto, str(out))
    return names


def has_dropped_payloads(proto: onnx.ModelProto) -> bool:
    return any(_dropped(t) for t in proto.graph.initializer)


def _dropped(t: onnx.TensorProto) -> bool:
    if t.data_location == onnx.TensorProto.EXTERNAL:
        return False
    n = int(np.prod(t.dims, dtype=np.int64))
    fields = ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data")
    return n > 0 and not any(len(getattr(t, f)) for f in fields)


def refill_payloads(proto: onnx.ModelProto) -> int:
    """Puts seeded weights into the initializers whose payloads the corpus dropped
    (fixtures/torch-2.15/README.md, "Weights without payloads"), so that ONNX
    Runtime runs the file: a He-scaled normal draw per tensor, seeded by its name
    (fan-in: the product of the trailing dimensions of a convolution's weight, the
    last dimension otherwise); 1-D tensors get 1 + 0.1 N(0, 1) (scales), or
    0.1 N(0, 1) when named like a bias. Returns how many were refilled."""
    import zlib

    refilled = 0
    for t in proto.graph.initializer:
        if not _dropped(t):
            continue
        dims = list(t.dims)
        rng = np.random.default_rng(zlib.crc32(t.name.encode()))
        if len(dims) >= 2:
            fan_in = int(np.prod(dims[1:])) if len(dims) == 4 else dims[-1]
            w = rng.standard_normal(dims) * np.sqrt(2.0 / max(1, fan_in))
        elif "bias" in t.name or "beta" in t.name or "mean" in t.name:
            w = 0.1 * rng.standard_normal(dims)
        else:
            w = 1 + 0.1 * rng.standard_normal(dims)
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.data_type)
        t.CopyFrom(numpy_helper.from_array(w.astype(dtype), t.name))
        refilled += 1
    return refilled
