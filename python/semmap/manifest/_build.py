"""Build and write a semmap manifest from a ``torch.nn.Module``.

The manifest lists every entry of ``model.named_modules()`` in order (root
first, path ``""``) with its class, parent, children and own parameters and
buffers; given example inputs, also what each module's forward ran
(:mod:`semmap.manifest._forward`). See ``docs/manifest.md`` for the format.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import torch

from semmap.manifest._atomic import write_json
from semmap.manifest._forward import Inputs, record_signatures, split_inputs

FORMAT = "semmap.manifest"
#: The newest schema version written: 2, a manifest with forward signatures.
SCHEMA_VERSION = 2
#: The version of a manifest without forward signatures, which readers of version 1 read.
SCHEMA_VERSION_WITHOUT_FORWARD = 1


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


def _signatures(model: torch.nn.Module, inputs: Inputs | None) -> dict[str, list[dict[str, Any]]]:
    """The forward signatures of ``model`` on ``inputs``; none, with a warning, if its forward raises."""
    if inputs is None:
        return {}
    args, kwargs = split_inputs(inputs)  # inputs of another kind are the caller's error: TypeError
    try:
        return record_signatures(model, args, kwargs)
    except Exception as e:  # the structure is still worth writing
        error = e
    warnings.warn(
        f"semmap.manifest: forward signatures not recorded (schema version 1 written): the forward pass on "
        f"the example inputs raised {type(error).__name__}: {next(iter(str(error).splitlines()), '')}",
        stacklevel=3,
    )
    return {}


def build_manifest(
    model: torch.nn.Module, *, config_summary: bool = True, inputs: Inputs | None = None
) -> dict[str, Any]:
    """Return the manifest of ``model`` as a JSON-ready dict.

    Args:
        model: any ``torch.nn.Module``; HF models also contribute
            ``model_type`` and the scalar config fields.
        config_summary: include the scalar fields of ``model.config``.
        inputs: example inputs (those of the export: keyword arguments as a
            dict, positional ones as a tuple, or one tensor). Given, one eager
            forward pass (eval mode, no grad) records each module's
            ``forward`` signature and the manifest is schema version 2; if
            that pass raises, a warning says so and the manifest is version 1.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, not {type(model).__name__}")
    signatures = _signatures(model, inputs)
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
        entry: dict[str, Any] = {
            "path": path,
            "class": type(module).__name__,
            "qualified_class": qualified_class(module),
            "parent": parent,
            "children": children,
            "parameters": [_tensor_entry(n, t) for n, t in module.named_parameters(recurse=False)],
            "buffers": [_tensor_entry(n, t) for n, t in module.named_buffers(recurse=False) if t is not None],
        }
        if path in signatures:
            entry["forward"] = signatures[path]
        entries.append(entry)
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
        "schema_version": SCHEMA_VERSION if signatures else SCHEMA_VERSION_WITHOUT_FORWARD,
        "generator": generator_info(),
        "model": model_info,
        "modules": entries,
    }
    if aliases:
        # optional (the schema allows extra top-level fields): other paths of shared modules
        manifest["aliases"] = aliases
    return manifest


def manifest_destination(path: str | bytes | os.PathLike[str] | os.PathLike[bytes]) -> str:
    """``path`` as a str (bytes, as ``os.listdir(bytes)`` gives names in any
    encoding, through ``os.fsdecode``); ValueError for a NUL byte, as open()
    raises, since the system would cut the name there."""
    text = os.fsdecode(os.fspath(path))
    if "\0" in text:
        raise ValueError(f"embedded null byte in the manifest path {text!r}")
    return text


def write_manifest(
    model: torch.nn.Module,
    path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
    *,
    config_summary: bool = True,
    inputs: Inputs | None = None,
) -> dict[str, Any]:
    """Write the manifest of ``model`` to ``path`` atomically and return it.

    ``config_summary`` and ``inputs`` are those of :func:`build_manifest`;
    ``path`` may be bytes (a name in any encoding). A path with a NUL byte is
    ValueError and a model that is not a ``torch.nn.Module`` TypeError,
    before the model runs.
    The file is written to a temporary file in the same directory and renamed
    into place, so an error never leaves a partial manifest.
    """
    destination = manifest_destination(path)  # a bad path is refused before the model runs
    manifest = build_manifest(model, config_summary=config_summary, inputs=inputs)
    write_json(destination, manifest)
    return manifest
