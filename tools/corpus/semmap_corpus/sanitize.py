"""Make exported files independent of the machine that wrote them."""

from __future__ import annotations

import re

import onnx

from semmap_corpus.node_ids import iter_nodes

_SITE = re.compile(r'File "[^"\n]*?/(site-packages|dist-packages)/')
_ABS = re.compile(r'File "/[^"\n]*/(semmap/|semmap_corpus/)')


def clean_path_text(text: str) -> str:
    """Replace install prefixes in stack traces: ``File "/x/y/site-packages/t/m.py"`` -> ``File "site-packages/t/m.py"``."""
    text = _SITE.sub(lambda m: f'File "{m.group(1)}/', text)
    return _ABS.sub(lambda m: f'File "{m.group(1)}', text)


def strip_local_paths(model: onnx.ModelProto) -> onnx.ModelProto:
    """Rewrite absolute paths in node metadata and doc strings (in place)."""
    for node in iter_nodes(model):
        for prop in node.metadata_props:
            if "File \"" in prop.value:
                prop.value = clean_path_text(prop.value)
        if node.doc_string:
            node.doc_string = clean_path_text(node.doc_string)
    return model
