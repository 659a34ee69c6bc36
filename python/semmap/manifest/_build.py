"""Build and write a semmap manifest (schema version 1) from a ``torch.nn.Module``.

The manifest lists every entry of ``model.named_modules()`` in order (root
first, path ``""``) with its class, parent, children and own parameters and
buffers. See ``docs/manifest.md`` for the format.
"""

from __future__ import annotations

import os
from typing import Any

import torch

from semmap.manifest._atomic import write_json

FORMAT = "semmap.manifest"
SCHEMA_VERSION = 1


def qualified_class(obj: object) -> str:
    """``type(obj).__module__ + "." + type(obj).__qualname__``."""
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _tensor_entry(name: str, tensor: torch.Tensor) -> dict[str, Any]:
    return {"name": name, "shape": [int(d) for d in tensor.shape], "dtype": _dtype_name(tensor.dtype)}


def _scalar_config(config: Any) -> dict[str, Any]:
    """The scalar fields (str, int, float, bool, None) of a HF config, sorted by key."""
    if config is None:
        return {}
    items = config.to_dict().items() if hasattr(config, "to_dict") else vars(config).items()
    out: dict[str, Any] = {}
    for key, value in sorted(items):
        if value is None or isinstance(value, (str, bool, int)):
            out[key] = value
        elif isinstance(value, float):
            if value == value and value not in (float("inf"), float("-inf")):  # JSON has no NaN/inf
                out[key] = value
    return out


def generator_info() -> dict[str, str]:
    """Versions of the writer and of the libraries the model came from."""
    from semmap._version import __version__

    info = {"semmap": __version__, "torch": torch.__version__.split("+")[0]}
    try:
        import transformers

        info["transformers"] = transformers.__version__
    except ImportError:  # plain PyTorch models need no transformers
        pass
    return info


def build_manifest(model: torch.nn.Module, *, config_summary: bool = True) -> dict[str, Any]:
    """Return the manifest of ``model`` as a JSON-ready dict.

    Args:
        model: any ``torch.nn.Module``; HF models also contribute
            ``model_type`` and the scalar config fields.
        config_summary: include the scalar fields of ``model.config``.
    """
    named = list(model.named_modules(remove_duplicate=False))
    # named_modules() (remove_duplicate=True) is the documented order; a module
    # registered under two names appears once, at its first path.
    paths = [p for p, _ in model.named_modules()]
    path_set = set(paths)
    modules_by_path = dict(named)
    paths_by_id = {id(m): p for p, m in model.named_modules()}
    entries: list[dict[str, Any]] = []
    for path in paths:
        module = modules_by_path[path]
        parent = None if path == "" else (path.rsplit(".", 1)[0] if "." in path else "")
        children = []
        for child_name, _ in module.named_children():
            child_path = f"{path}.{child_name}" if path else child_name
            if child_path in path_set:
                children.append(child_path)
        entries.append(
            {
                "path": path,
                "class": type(module).__name__,
                "qualified_class": qualified_class(module),
                "parent": parent,
                "children": children,
                "parameters": [_tensor_entry(n, t) for n, t in module.named_parameters(recurse=False)],
                "buffers": [
                    _tensor_entry(n, t) for n, t in module.named_buffers(recurse=False) if t is not None
                ],
            }
        )
    aliases = {
        p: paths_by_id[id(m)] for p, m in named if p not in path_set and id(m) in paths_by_id
    }
    config = getattr(model, "config", None)
    model_info: dict[str, Any] = {
        "class": type(model).__name__,
        "qualified_class": qualified_class(model),
        "model_type": getattr(config, "model_type", None),
    }
    if config_summary:
        model_info["config"] = _scalar_config(config)
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "generator": generator_info(),
        "model": model_info,
        "modules": entries,
    }
    if aliases:
        # optional (schema v1 allows extra top-level fields): other paths of shared modules
        manifest["aliases"] = aliases
    return manifest


def write_manifest(
    model: torch.nn.Module, path: str | os.PathLike[str], *, config_summary: bool = True
) -> dict[str, Any]:
    """Write the manifest of ``model`` to ``path`` atomically and return it.

    The file is written to a temporary file in the same directory and renamed
    into place, so an error never leaves a partial manifest.
    """
    manifest = build_manifest(model, config_summary=config_summary)
    write_json(path, manifest)
    return manifest
