"""Helpers shared by the Python checks under tests/ (run by ctest with the project's .venv)."""

import subprocess
import sys


def run(binary, *args):
    """Run a semmap binary; exit the check with its stderr when it fails."""
    done = subprocess.run([binary, *args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"semmap {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def all_nodes(graph):
    """Every node of an onnx GraphProto, subgraph bodies included, in traversal order."""
    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.HasField("g"):
                yield from all_nodes(attr.g)
            for body in attr.graphs:
                yield from all_nodes(body)
