"""Writes a copy of an ONNX model whose nodes lost their names and node
metadata, as a tool that renames everything leaves it; the model-level
metadata (a semmap record) and everything else are kept.

  strip_names.py IN.onnx OUT.onnx
"""
import sys

import onnx


def main() -> int:
    model = onnx.load(sys.argv[1])
    for node in model.graph.node:
        node.name = ""
        del node.metadata_props[:]
    onnx.save(model, sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
