"""Helpers shared by the Python checks under tests/ (run by ctest with the project's .venv)."""

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
