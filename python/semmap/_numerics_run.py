"""The runtime side of :func:`semmap.compare_numerics`: inputs (read, checked or
made up), ONNX Runtime sessions on copies of a model whose extra graph outputs
are the values to capture, and the running sums the figures are made of.

Needs onnx, onnxruntime and numpy.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import onnx

from ._numerics_graph import FLOAT_TYPES

# dtype of each ONNX tensor type an input can have.
_NP_OF = {
    onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.FLOAT16: np.float16,
    onnx.TensorProto.DOUBLE: np.float64, onnx.TensorProto.INT64: np.int64,
    onnx.TensorProto.INT32: np.int32, onnx.TensorProto.INT16: np.int16,
    onnx.TensorProto.INT8: np.int8, onnx.TensorProto.UINT8: np.uint8,
    onnx.TensorProto.UINT16: np.uint16, onnx.TensorProto.UINT32: np.uint32,
    onnx.TensorProto.UINT64: np.uint64, onnx.TensorProto.BOOL: np.bool_,
}
_ITEMSIZE = {onnx.TensorProto.FLOAT16: 2, onnx.TensorProto.BFLOAT16: 2, onnx.TensorProto.DOUBLE: 8}

# Sizes of the symbolic dimensions of generated inputs: the first axis BATCH, the
# others the first of SEQUENCE_SIZES both models run with.
BATCH = 1
SEQUENCE_SIZES = (16, 8, 32, 4, 1)


class NumericsError(ValueError):
    """compare_numerics cannot compare these files or inputs; the message names the
    file or the input and the cause."""


# ------------------------------------------------------------------ models


@dataclass
class InputSpec:
    name: str
    elem_type: int
    dims: list[int | str | None]  # int: fixed; str: a named dimension; None: unnamed


def input_specs(proto: onnx.ModelProto) -> list[InputSpec]:
    inits = {t.name for t in proto.graph.initializer}
    specs = []
    for i in proto.graph.input:
        if i.name in inits:
            continue
        t = i.type.tensor_type
        dims: list[int | str | None] = []
        for d in t.shape.dim:
            dims.append(d.dim_value if d.HasField("dim_value") else (d.dim_param or None))
        specs.append(InputSpec(i.name, t.elem_type, dims))
    return specs


def load_proto(path: str) -> onnx.ModelProto:
    """The model without its weights' bytes: external data left where it is, and the
    raw bytes of a self-contained file's large initializers replaced by references
    to where they lie in the file itself (location, offset, length), which ONNX
    Runtime reads from there (`Runner`). The protobuf is parsed from the file with
    those bytes left out (`light_model_bytes`), so no copy of the weights is ever
    held in Python, and every session's source is small. A file whose layout that
    reader does not take is loaded whole."""
    try:
        light = light_model_bytes(os.path.realpath(path))
    except OSError:
        light = None  # onnx.load below says what is wrong with the file
    except ValueError:
        light = None  # not a well-formed message: onnx's error below
    try:
        if light is not None:
            proto = onnx.ModelProto()
            proto.ParseFromString(light)
            return proto
        return onnx.load(path, load_external_data=False)
    except FileNotFoundError:
        raise
    except Exception as e:  # protobuf's DecodeError and the like
        raise NumericsError(f"{path}: not an ONNX model onnx can read: {e}") from None


LIGHT_MIN_BYTES = 1024  # initializers with fewer raw bytes stay in the protobuf


def light_model_bytes(path: str) -> bytes | None:
    """The serialized ModelProto of the file at `path` with the raw bytes of each
    initializer of its main graph (ModelProto.graph = 7, GraphProto.initializer = 5,
    TensorProto.raw_data = 9) of at least LIGHT_MIN_BYTES replaced by external data
    entries (TensorProto.external_data = 13, data_location = 14) that point at
    them in the file: location its base name, offset and length. None when no
    initializer qualifies (a file with external data, or none large). The file is
    read through a memory map, and the weights' pages are never touched.
    ValueError for bytes that are not a well-formed message."""
    import mmap

    location = os.path.basename(path).encode("utf-8", "surrogateescape")
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return None
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            out = bytearray()
            moved = 0
            for num, wire, field, start, end in _wire_fields(buf, 0, len(buf)):
                if num != 7 or wire != 2:
                    out += buf[field:end]
                    continue
                graph = bytearray()
                for gnum, gwire, gfield, gstart, gend in _wire_fields(buf, start, end):
                    piece = None
                    if gnum == 5 and gwire == 2:
                        piece = _light_tensor(buf, gstart, gend, location)
                    if piece is None:
                        graph += buf[gfield:gend]
                    else:
                        graph += _key(5, 2) + _encode_varint(len(piece)) + piece
                        moved += 1
                out += _key(7, 2) + _encode_varint(len(graph)) + graph
            return bytes(out) if moved else None


def _light_tensor(buf: Any, start: int, end: int, location: bytes) -> bytes | None:
    """The TensorProto in buf[start:end] with its raw_data replaced by an external
    data reference to it, or None to keep it as it is."""
    raw = None
    for num, wire, _, s, e in _wire_fields(buf, start, end):
        if num in (13, 14):
            return None  # already external
        if num == 9 and wire == 2:
            raw = (s, e)
    if raw is None or raw[1] - raw[0] < LIGHT_MIN_BYTES:
        return None
    out = bytearray()
    for num, _, field, _, e in _wire_fields(buf, start, end):
        if num != 9:
            out += buf[field:e]
    for key, value in ((b"location", location), (b"offset", str(raw[0]).encode()),
                       (b"length", str(raw[1] - raw[0]).encode())):
        entry = _key(1, 2) + _encode_varint(len(key)) + key + _key(2, 2) + _encode_varint(len(value)) + value
        out += _key(13, 2) + _encode_varint(len(entry)) + entry
    out += _key(14, 0) + _encode_varint(onnx.TensorProto.EXTERNAL)
    return bytes(out)


def _key(num: int, wire: int) -> bytes:
    return _encode_varint(num << 3 | wire)


def _encode_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _wire_fields(buf: Any, start: int, end: int):
    """(field number, wire type, field start, value start, value end) of each field of
    the message in buf[start:end]."""
    i = start
    while i < end:
        field = i
        key, i = _varint(buf, i, end)
        num, wire = key >> 3, key & 7
        if wire == 0:
            _, j = _varint(buf, i, end)
        elif wire == 1:
            j = i + 8
        elif wire == 2:
            n, i = _varint(buf, i, end)
            j = i + n
        elif wire == 5:
            j = i + 4
        else:
            raise ValueError(f"wire type {wire} at byte {i}")
        if j > end:
            raise ValueError(f"a field runs past its message at byte {i}")
        yield num, wire, field, i, j
        i = j


def _varint(buf: Any, i: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= end or shift > 63:
            raise ValueError(f"a truncated varint at byte {i}")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def inferred_types_and_shapes(proto: onnx.ModelProto, bound: dict[str, int],
                              feeds: Mapping[str, np.ndarray]) -> tuple[dict[str, int], dict[str, tuple]]:
    """Element types and, where ONNX's shape inference can tell, concrete shapes of
    every value, with the graph inputs fixed to the shapes of `feeds`. Used to skip
    integer values and to size capture batches; ONNX Runtime has the last word."""
    g = proto.graph
    light = onnx.ModelProto()
    light.ir_version = proto.ir_version
    light.opset_import.extend(proto.opset_import)
    light.functions.extend(proto.functions)
    lg = light.graph
    lg.node.extend(g.node)
    lg.output.extend(g.output)
    lg.value_info.extend(g.value_info)
    for t in g.initializer:
        small = t.data_location != onnx.TensorProto.EXTERNAL and np.prod(t.dims, dtype=np.int64) <= 64
        if small:
            lg.initializer.append(t)
        else:  # its type and shape, as a graph input: no payload copied
            lg.input.append(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    for i in g.input:
        vi = lg.input.add()
        vi.CopyFrom(i)
        if i.name in feeds:
            shape = vi.type.tensor_type.shape
            for d, n in zip(shape.dim, feeds[i.name].shape):
                d.Clear()
                d.dim_value = int(n)
    types: dict[str, int] = {}
    shapes: dict[str, tuple] = {}
    try:
        inferred = onnx.shape_inference.infer_shapes(light, data_prop=True)
        infos = [*inferred.graph.value_info, *inferred.graph.output, *inferred.graph.input]
    except Exception:  # contrib ops, or a file shape inference cannot read: no estimates
        infos = [*g.value_info, *g.output, *g.input]
    for vi in infos:
        t = vi.type.tensor_type
        if t.elem_type:
            types[vi.name] = t.elem_type
        if t.HasField("shape"):
            dims = []
            for d in t.shape.dim:
                if d.HasField("dim_value"):
                    dims.append(d.dim_value)
                elif d.dim_param in bound:
                    dims.append(bound[d.dim_param])
                else:
                    dims = None
                    break
            if dims is not None:
                shapes[vi.name] = tuple(dims)
    return types, shapes


def estimate_bytes(elem_type: int, shape: tuple | None, fallback: int) -> int:
    if shape is None:
        return fallback
    return int(np.prod(shape, dtype=np.int64)) * _ITEMSIZE.get(elem_type, 4)


class Runner:
    """ONNX Runtime sessions of one model: the file as it is, and copies that also
    output given values, serialized in memory without their weights. `proto` is
    `load_proto`'s: its weights are references to external data files or to the
    model file itself, which every session reads from the model's directory
    (session.model_external_initializers_file_folder_path), so neither Python nor a
    session's source holds a copy of them. optimization: ONNX Runtime's graph
    optimization level for every session ("all", its default; "extended",
    "basic", "disabled")."""

    def __init__(self, path: str, proto: onnx.ModelProto, providers: list[str], label: str,
                 optimization: str = "all"):
        self.path = path
        self.proto = proto
        self.providers = providers
        self.label = label
        self.optimization = optimization
        self.hint = ""  # what a failed run's message adds

    def _options(self) -> Any:
        import onnxruntime as ort

        o = ort.SessionOptions()
        o.log_severity_level = 4  # its errors reach the caller as NumericsError
        o.graph_optimization_level = {
            "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
            "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
            "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
            "disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        }[self.optimization]
        return o

    def plain(self) -> Any:
        """The file as it is (its own weights)."""
        import onnxruntime as ort

        try:
            session = ort.InferenceSession(self.path, self._options(), providers=self.providers)
        except Exception as e:
            raise NumericsError(f"{self.path}: ONNX Runtime cannot load the {self.label} model: "
                                f"{_first_line(e)}") from None
        release_freed_memory()
        return session

    def capturing(self, values: Sequence[str], *, rewire: Sequence[tuple[int, int, str]] = (),
                  feeds: Sequence[tuple[str, np.dtype]] = ()) -> Any:
        """A session of a copy of the model whose graph outputs also include `values`.
        rewire: (node index, input slot, name) — that input of that node reads the
        value `name` instead, a graph input added for each of `feeds` (name, dtype)."""
        import onnxruntime as ort

        g = self.proto.graph
        kept_out, kept_in = len(g.output), len(g.input)
        have = {o.name for o in g.output}
        for v in values:
            if v not in have:
                g.output.append(onnx.ValueInfoProto(name=v))
                have.add(v)
        for name, dtype in feeds:
            g.input.append(onnx.helper.make_tensor_value_info(
                name, onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), None))
        saved = []
        for j, slot, name in rewire:
            saved.append((j, slot, g.node[j].input[slot]))
            g.node[j].input[slot] = name
        try:
            source = self.proto.SerializeToString()
        finally:
            del g.output[kept_out:]
            del g.input[kept_in:]
            for j, slot, name in saved:
                g.node[j].input[slot] = name
        o = self._options()
        # No arena: each run's values go back to the allocator when dropped, instead
        # of each capturing session keeping the most it ever held.
        o.enable_cpu_mem_arena = False
        # Where the weights are: the external data files, or the model file itself.
        o.add_session_config_entry("session.model_external_initializers_file_folder_path",
                                   str(Path(os.path.realpath(self.path)).parent))
        try:
            session = ort.InferenceSession(source, o, providers=self.providers)
        except Exception as e:
            raise NumericsError(f"{self.path}: ONNX Runtime cannot load the {self.label} model with "
                                f"its intermediate values as outputs: {_first_line(e)}") from None
        del source
        release_freed_memory()
        return session

    def run(self, session: Any, feeds: Mapping[str, np.ndarray], names: Sequence[str] | None,
            label: str | None = None) -> list[np.ndarray]:
        """`session`'s values `names` (None: the graph outputs); NumericsError naming the
        file, with `hint` (set for made-up inputs) after the cause."""
        try:
            return session.run(list(names) if names is not None else None, dict(feeds))
        except Exception as e:
            raise NumericsError(f"{self.path}: ONNX Runtime cannot run the {label or self.label} model on "
                                f"these inputs{self.hint}: {_first_line(e)}") from None


_TRIM: Any = None


def release_freed_memory() -> None:
    """Hands the memory freed since the last call back to the system (glibc's
    malloc_trim): building a session with every optimization frees hundreds of MB
    of its own work in the allocator's per-thread arenas, which would otherwise stay
    in the process and add to every later session's. Nothing where there is no
    glibc."""
    global _TRIM
    if _TRIM is None:
        try:
            import ctypes

            _TRIM = ctypes.CDLL(None).malloc_trim
            _TRIM.argtypes = [ctypes.c_size_t]
        except (OSError, AttributeError):
            _TRIM = False
    if _TRIM:
        _TRIM(0)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text if len(text) < 600 else text[:600] + " ..."


# ------------------------------------------------------------------ inputs


@dataclass
class Inputs:
    samples: list[dict[str, np.ndarray]]  # keyed by the reference's input names
    source: str  # "generated", "file", "arrays"
    how: dict[str, str] = field(default_factory=dict)  # per input, for generated ones
    note: str = ""
    varies: bool = False  # generated with a symbolic non-batch dimension
    sequence: int = 0  # its size


def read_inputs(inputs: Any) -> tuple[list[dict[str, np.ndarray]], str, str]:
    """Samples from a .npz file, a directory of NAME.npy files, a dict of arrays, or a
    list of any of those (several samples)."""
    if isinstance(inputs, (list, tuple)):
        samples, sources, notes = [], set(), []
        for x in inputs:
            s, src, note = read_inputs(x)
            samples.extend(s)
            sources.add(src)
            notes.append(note)
        return samples, (sources.pop() if len(sources) == 1 else "mixed"), "; ".join(notes)
    if isinstance(inputs, Mapping):
        return [{str(k): np.asarray(v) for k, v in inputs.items()}], "arrays", "Python arrays"
    path = os.fsdecode(inputs)
    p = Path(path)
    if p.is_dir():
        files = sorted(p.glob("*.npy"))
        if not files:
            raise NumericsError(f"{path}: a directory of inputs holds NAME.npy files; it has none")
        return [{f.stem: _load_npy(f) for f in files}], "file", f"{path} ({len(files)} .npy files)"
    if not p.exists():
        raise FileNotFoundError(f"{path}: no such file or directory (the inputs)")
    try:
        with np.load(path, allow_pickle=False) as z:
            if isinstance(z, np.ndarray):
                raise NumericsError(f"{path}: a single array; inputs are an .npz of NAME=array "
                                    "or a directory of NAME.npy files")
            return [{k: z[k] for k in z.files}], "file", path
    except NumericsError:
        raise
    except Exception as e:
        raise NumericsError(f"{path}: not an .npz file numpy can read: {e}") from None


def _load_npy(f: Path) -> np.ndarray:
    try:
        return np.load(f, allow_pickle=False)
    except Exception as e:
        raise NumericsError(f"{f}: not an .npy file numpy can read: {e}") from None


def _type_name(elem_type: int) -> str:
    return onnx.TensorProto.DataType.Name(elem_type).lower() if elem_type else "unknown"


def check_inputs(samples: list[dict[str, np.ndarray]], specs: list[InputSpec], path: str) -> None:
    """Every input the model takes, of its element type and shape; nothing else."""
    wanted = {s.name for s in specs}
    for n, sample in enumerate(samples):
        where = f"sample {n}: " if len(samples) > 1 else ""
        extra = sorted(set(sample) - wanted)
        if extra:
            raise NumericsError(f"{where}input {extra[0]!r} is not an input of {path} "
                                f"(it takes {', '.join(sorted(wanted))})")
        for s in specs:
            if s.name not in sample:
                raise NumericsError(f"{where}input {s.name!r} of {path} is not given")
            a = sample[s.name]
            want = _NP_OF.get(s.elem_type)
            if want is not None and a.dtype != np.dtype(want):
                raise NumericsError(f"{where}input {s.name!r}: {a.dtype} given, {path} takes "
                                    f"{np.dtype(want)} ({_type_name(s.elem_type)})")
            if s.dims and a.ndim != len(s.dims):
                raise NumericsError(f"{where}input {s.name!r}: shape {list(a.shape)} given, {path} "
                                    f"takes rank {len(s.dims)} {_dims_text(s.dims)}")
            for axis, (d, n_) in enumerate(zip(s.dims, a.shape)):
                if isinstance(d, int) and d != n_:
                    raise NumericsError(f"{where}input {s.name!r}: shape {list(a.shape)} given, {path} "
                                        f"takes {_dims_text(s.dims)} (axis {axis} is {d})")


def _dims_text(dims: list[int | str | None]) -> str:
    return "[" + ", ".join(str(d) if d is not None else "?" for d in dims) + "]"


def _gather_rows(proto: onnx.ModelProto, name: str) -> int | None:
    """Rows of the table an integer input indexes (an embedding's vocabulary), found
    through Gather nodes reading it, directly or through casts and reshapes."""
    inits = {t.name: t for t in proto.graph.initializer}
    users: dict[str, list[onnx.NodeProto]] = {}
    for node in proto.graph.node:
        for v in node.input:
            users.setdefault(v, []).append(node)
    frontier, seen = [name], set()
    for _ in range(4):
        nxt = []
        for v in frontier:
            for node in users.get(v, []):
                if node.op_type == "Gather" and len(node.input) > 1 and node.input[1] == v:
                    table = inits.get(node.input[0])
                    if table is not None and table.dims:
                        return int(table.dims[0])
                if node.op_type in ("Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity"):
                    for o in node.output:
                        if o not in seen:
                            seen.add(o)
                            nxt.append(o)
        frontier = nxt
    return None


def generate_inputs(proto: onnx.ModelProto, specs: list[InputSpec], seed: int,
                    count: int, sequence: int = SEQUENCE_SIZES[0]) -> Inputs:
    """Inputs made from the graph's input types and shapes: named dimensions of one
    name get one size (the first axis BATCH, the others `sequence`), floats from a
    standard normal, masks all ones, token ids uniform over the vocabulary of the
    embedding they index (else 0..15), position ids 0, 1, 2, ..."""
    rng = np.random.default_rng(seed)
    sizes: dict[str, int] = {}
    how: dict[str, str] = {}
    shapes: dict[str, list[int]] = {}
    varies = False
    for s in specs:
        shape = []
        for axis, d in enumerate(s.dims):
            if isinstance(d, int):
                shape.append(d)
                continue
            size = BATCH if axis == 0 else sequence
            varies = varies or axis > 0
            if isinstance(d, str):
                size = sizes.setdefault(d, size)
            shape.append(size)
        shapes[s.name] = shape
    samples = []
    for _ in range(count):
        sample = {}
        for s in specs:
            dtype = _NP_OF.get(s.elem_type)
            if dtype is None:
                raise NumericsError(f"input {s.name!r} is of type {_type_name(s.elem_type)}: give the "
                                    "inputs (inputs=, --inputs)")
            shape, lname = shapes[s.name], s.name.lower()
            if s.elem_type in FLOAT_TYPES:
                sample[s.name] = rng.standard_normal(shape).astype(dtype)
                how[s.name] = "standard normal"
            elif s.elem_type == onnx.TensorProto.BOOL or "mask" in lname:
                sample[s.name] = np.ones(shape, dtype)
                how[s.name] = "ones"
            elif "position" in lname and shape:
                sample[s.name] = np.broadcast_to(np.arange(shape[-1], dtype=dtype), shape).copy()
                how[s.name] = "0, 1, 2, ... along the last axis"
            elif "token_type" in lname:
                sample[s.name] = np.zeros(shape, dtype)
                how[s.name] = "zeros"
            else:
                rows = _gather_rows(proto, s.name)
                high = rows if rows else 16
                sample[s.name] = rng.integers(0, high, size=shape).astype(dtype)
                how[s.name] = (f"uniform in [0, {high}) (the rows of the table it indexes)" if rows
                               else f"uniform in [0, {high})")
        samples.append(sample)
    return Inputs(samples, "generated", how,
                  f"generated from the reference's input types and shapes, seed {seed}, "
                  f"{count} sample{'s' if count != 1 else ''}", varies, sequence if varies else 0)


def deployed_feeds(sample: dict[str, np.ndarray], ref_specs: list[InputSpec],
                   dep_specs: list[InputSpec], dep_path: str) -> dict[str, np.ndarray]:
    """The reference's inputs for the deployed model: by name when it takes a subset
    of them (tools drop unused inputs), else by position; cast to its element types
    (an fp16 copy that takes float16)."""
    ref_names = [s.name for s in ref_specs]
    if all(s.name in sample for s in dep_specs):
        chosen = {s.name: sample[s.name] for s in dep_specs}
    elif len(dep_specs) == len(ref_specs):
        chosen = {d.name: sample[r] for d, r in zip(dep_specs, ref_names)}
    else:
        raise NumericsError(f"{dep_path}: takes inputs {[s.name for s in dep_specs]}, the reference "
                            f"{ref_names}: not the same model's inputs")
    out = {}
    for s in dep_specs:
        a = chosen[s.name]
        want = _NP_OF.get(s.elem_type)
        if want is not None and a.dtype != np.dtype(want):
            if a.dtype.kind != np.dtype(want).kind:
                raise NumericsError(f"{dep_path}: input {s.name!r} is {_type_name(s.elem_type)}, the "
                                    f"reference's is {a.dtype}: not the same model's inputs")
            a = a.astype(want)
        out[s.name] = a
    return out


# ------------------------------------------------------------------ figures


class Stats:
    """Running sums over every sample of one pair of values, in float64, over the
    elements finite in both runs."""

    __slots__ = ("elements", "ss_ref", "ss_dep", "ss_diff", "dot", "max_abs",
                 "nonfinite_ref", "nonfinite_dep", "new_nonfinite", "mismatch")

    def __init__(self) -> None:
        self.elements = 0
        self.ss_ref = self.ss_dep = self.ss_diff = self.dot = 0.0
        self.max_abs = 0.0
        self.nonfinite_ref = self.nonfinite_dep = self.new_nonfinite = 0
        self.mismatch: str | None = None

    def add(self, r: np.ndarray, d: np.ndarray) -> None:
        if r.shape != d.shape:
            self.mismatch = f"shapes {list(r.shape)} and {list(d.shape)} on a later sample"
            return
        # float32 sums (BLAS dot products, a few 1e-7 relative) unless either side is
        # float64; one temporary (the difference), as large arrays cost page faults.
        dtype = np.float64 if np.float64 in (r.dtype, d.dtype) else np.float32
        r = np.ascontiguousarray(r, dtype).ravel()
        d = np.ascontiguousarray(d, dtype).ravel()
        with np.errstate(over="ignore", invalid="ignore"):  # huge values: the float64 path below
            ss_ref, ss_dep = float(np.dot(r, r)), float(np.dot(d, d))
        if not (math.isfinite(ss_ref) and math.isfinite(ss_dep)):
            fr, fd = np.isfinite(r), np.isfinite(d)
            self.nonfinite_ref += int(r.size - fr.sum())
            self.nonfinite_dep += int(d.size - fd.sum())
            self.new_nonfinite += int((fr & ~fd).sum())
            both = fr & fd
            r, d = r[both].astype(np.float64), d[both].astype(np.float64)
            ss_ref, ss_dep = float(np.dot(r, r)), float(np.dot(d, d))
        with np.errstate(over="ignore", invalid="ignore"):
            diff = np.subtract(d, r)
            ss_diff, dot = float(np.dot(diff, diff)), float(np.dot(r, d))
        if not (math.isfinite(ss_diff) and math.isfinite(dot)) and dtype != np.float64:
            r, d = r.astype(np.float64), d.astype(np.float64)
            diff = np.subtract(d, r)
            ss_ref, ss_dep = float(np.dot(r, r)), float(np.dot(d, d))
            ss_diff, dot = float(np.dot(diff, diff)), float(np.dot(r, d))
        self.elements += r.size
        self.ss_ref += ss_ref
        self.ss_dep += ss_dep
        self.ss_diff += ss_diff
        self.dot += dot
        if diff.size:
            np.abs(diff, out=diff)
            self.max_abs = max(self.max_abs, float(diff.max()))

    @property
    def rel_l2(self) -> float:
        if self.ss_ref == 0:
            return 0.0 if self.ss_diff == 0 else float("inf")
        return (self.ss_diff / self.ss_ref) ** 0.5

    def figures(self) -> dict[str, Any]:
        """rel_l2, sqnr_db (None: identical values), cosine, max_abs; nonfinite counts when any."""
        sqnr = None if self.ss_diff == 0 else (
            float("-inf") if self.ss_ref == 0 else 10 * np.log10(self.ss_ref / self.ss_diff))
        if self.ss_ref == 0 or self.ss_dep == 0:
            cosine = 1.0 if self.ss_ref == self.ss_dep else 0.0
        else:
            cosine = self.dot / (self.ss_ref * self.ss_dep) ** 0.5
        out: dict[str, Any] = {
            "rel_l2": self.rel_l2,
            "sqnr_db": None if sqnr is None else float(sqnr),
            "cosine": float(min(1.0, cosine)),
            "max_abs": self.max_abs,
        }
        if self.nonfinite_ref or self.nonfinite_dep:
            out["nonfinite"] = {"reference": self.nonfinite_ref, "deployed": self.nonfinite_dep,
                                "deployed_only": self.new_nonfinite}
        return out


@dataclass
class Timer:
    seconds: dict[str, float] = field(default_factory=dict)

    def add(self, key: str, start: float) -> None:
        self.seconds[key] = self.seconds.get(key, 0.0) + time.perf_counter() - start

