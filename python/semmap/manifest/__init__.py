"""semmap.manifest: write the module hierarchy of a PyTorch model next to its ONNX export.

semmap maps ONNX nodes back to the PyTorch / HuggingFace module that produced
them. It reads a *manifest* (``schema/manifest.schema.json``, documented in
``docs/manifest.md``) that lists every entry of ``model.named_modules()`` and,
given the example inputs of the export, what each module's forward ran
(schema version 2; version 1 without). This module writes it. It needs
PyTorch (the ``semmap[torch]`` extra); ``import semmap`` does not.

When you already hold the model::

    from semmap.manifest import write_manifest
    write_manifest(model, "manifest.json", inputs=example_inputs)  # inputs: optional

for a model too big to hold, built on the meta device (no weight allocated or
read); its forward pass on meta example inputs computes nothing and records
the signatures an export's pass would::

    from semmap.manifest import build_meta_model, example_inputs, write_manifest
    model = build_meta_model(model_id="./saved-model", task="causal-lm")
    write_manifest(model, "manifest.json", inputs=example_inputs(model))

to export and map in one call, see :func:`semmap.export`; from the shell::

    semmap-manifest manifest --model-type bert --config '{"hidden_size": 32}' -o out/

(``semmap-manifest`` is the same as ``python -m semmap.manifest``).
"""

from __future__ import annotations

try:
    import torch  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"semmap.manifest needs PyTorch, which is not importable ({e}); "
        "install it with: pip install 'semmap[torch]'"
    ) from e

from semmap.manifest._build import FORMAT, SCHEMA_VERSION, build_manifest, write_manifest  # noqa: E402
from semmap.manifest._meta import MetaDeviceError, build_meta_model  # noqa: E402
from semmap.manifest._configs import ModelBuildError  # noqa: E402
from semmap.manifest._models import example_inputs  # noqa: E402

__all__ = [
    "FORMAT",
    "SCHEMA_VERSION",
    "MetaDeviceError",
    "ModelBuildError",
    "build_manifest",
    "build_meta_model",
    "example_inputs",
    "write_manifest",
]
