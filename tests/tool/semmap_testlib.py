"""Helpers shared by the Python checks under tests/ (run by ctest with the project's .venv)."""

import json
import os
import subprocess
import sys
import time

# Under the sanitizers (SEMMAP_SANITIZED=1, set by the sanitizer build's
# ctest) every run is several times slower than in the release build.
SANITIZED = os.environ.get("SEMMAP_SANITIZED") == "1"


_measured = [0.0, 1.0]  # when, the machine's factor then


def _machine_factor():
    """The load average per core, or how much of a core a 50 ms spin gets
    now (wall time over this thread's CPU time), whichever says slower: the
    load average follows a busy machine within a minute, the spin at once."""
    try:
        load = os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:
        load = 1.0
    wall, cpu = time.monotonic(), time.thread_time()
    while time.monotonic() - wall < 0.05:
        pass
    share = (time.monotonic() - wall) / max(time.thread_time() - cpu, 1e-3)
    return max(load, share)


def time_factor():
    """How many times a budget stretches on this machine now: the build's
    slowdown (10 under the sanitizers; SEMMAP_BUILD_SLOWDOWN, which ctest sets
    for an unoptimized build) times the machine's, which is
    SEMMAP_TIME_FACTOR when set, else _machine_factor() (at least 1: a quiet
    machine keeps the budgets as written), measured again after 5 s."""
    build = 10.0 if SANITIZED else float(os.environ.get("SEMMAP_BUILD_SLOWDOWN") or 1.0)
    stated = os.environ.get("SEMMAP_TIME_FACTOR")
    if stated:
        try:
            return build * max(1.0, float(stated))
        except ValueError:
            sys.exit(f"SEMMAP_TIME_FACTOR={stated!r}: expected a number")
    if time.monotonic() - _measured[0] > 5.0:
        _measured[:] = [time.monotonic(), _machine_factor()]
    return build * max(1.0, _measured[1])


def budget(seconds):
    """A wait of `seconds` on a quiet machine, stretched by time_factor()."""
    return seconds * time_factor()


def fastest(limit, work, tries=3):
    """Runs work() until a run takes at most budget(limit) seconds, up to
    `tries` times (a busy moment of the machine is not the code's cost; a
    quadratic walk is over its bound every time). Returns (seconds of the
    fastest run, its result, the bound it was held to or None when within it)."""
    best = None
    bound = budget(limit)
    for _ in range(tries):
        start = time.monotonic()
        result = work()
        seconds = time.monotonic() - start
        if best is None or seconds < best[0]:
            best = (seconds, result)
        bound = budget(limit)
        if seconds <= bound:
            return seconds, result, None
    return best[0], best[1], bound


def run(binary, *args):
    """Run a semmap binary; exit the check with its stderr when it fails."""
    done = subprocess.run([binary, *args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"semmap {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
    return done.stdout


# ONNX models written byte by byte (the wire format), so that a test can
# hold what onnx would refuse to build.
def varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def field(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def node(name, op="MatMul", inputs=(), outputs=()):
    """A NodeProto (in a GraphProto) with a name, an op type and value names
    (str, or bytes taken as they are)."""
    encode = lambda s: s if isinstance(s, bytes) else s.encode()
    values = b"".join(field(1, encode(v)) for v in inputs)
    values += b"".join(field(2, encode(v)) for v in outputs)
    return field(1, values + field(3, encode(name)) + field(4, encode(op)))


def graph_io(inputs=(), outputs=()):
    """GraphProto input and output entries (ValueInfoProto with a name only)."""
    return (b"".join(field(11, field(1, v.encode())) for v in inputs) +
            b"".join(field(12, field(1, v.encode())) for v in outputs))


def model(graph, opset=17):
    """A ModelProto (ir_version 7) around GraphProto bytes `graph`."""
    return b"\x08\x07" + field(7, graph) + field(8, field(1, b"") + b"\x10" + varint(opset))


def initializer(name, dims=(4, 4)):
    """A float TensorProto (GraphProto field 5) with dims and a name, no data."""
    tensor = b"".join(varint(1 << 3) + varint(d) for d in dims) + varint(2 << 3) + varint(1)
    return field(5, tensor + field(8, name.encode()))


def module(path, parent, children=(), parameters=(), forward=None, cls="C", shape=(4, 4)):
    """A manifest module entry: float32 parameters of `shape`, no buffers."""
    m = {"path": path, "class": cls, "qualified_class": "t." + cls, "parent": parent,
         "children": list(children),
         "parameters": [{"name": p, "shape": list(shape), "dtype": "float32"} for p in parameters],
         "buffers": []}
    if forward is not None:
        m["forward"] = forward
    return m


def manifest(modules):
    """The manifest's JSON text: schema 2 when a module has a forward, else 1."""
    version = 2 if any("forward" in m for m in modules) else 1
    return json.dumps({"format": "semmap.manifest", "schema_version": version,
                       "model": {"class": "M", "qualified_class": "t.M"}, "modules": modules},
                      separators=(",", ":"))


def write(path, data):
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    return path


def all_nodes(graph):
    """Every node of an onnx GraphProto, subgraph bodies included, in traversal order."""
    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.HasField("g"):
                yield from all_nodes(attr.g)
            for body in attr.graphs:
                yield from all_nodes(body)
