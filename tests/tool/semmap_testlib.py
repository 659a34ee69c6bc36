"""Helpers shared by the Python checks under tests/ (run by ctest with the project's .venv)."""

import json
import subprocess
import sys


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
