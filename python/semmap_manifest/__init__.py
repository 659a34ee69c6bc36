"""semmap_manifest: write the module hierarchy of a PyTorch model next to its ONNX export.

semmap maps ONNX nodes back to the HuggingFace / PyTorch module that produced
them. The C++ side reads a *manifest* (``schema/manifest.schema.json``, schema
version 1) that lists every entry of ``model.named_modules()``. This package
writes that manifest, exports models to ONNX the way users do, and builds the
fixture corpus with automatically derived ground truth.

Typical use from Python::

    from semmap_manifest import write_manifest
    write_manifest(model, "manifest.json")

for a model too big to hold, built on the meta device (no weight allocated or read)::

    from semmap_manifest import build_meta_model, write_manifest
    write_manifest(build_meta_model(model_id="./saved-model", task="causal-lm"), "manifest.json")

and from the shell::

    python -m semmap_manifest manifest --model-type bert --config '{"hidden_size": 32}' -o out/
"""

from __future__ import annotations

__version__ = "0.1.0"

from semmap_manifest.manifest import build_manifest, write_manifest  # noqa: E402
from semmap_manifest.meta import build_meta_model  # noqa: E402
from semmap_manifest.node_ids import node_ids  # noqa: E402

__all__ = ["__version__", "build_manifest", "build_meta_model", "write_manifest", "node_ids"]
