"""Build and write a semmap manifest from a ``torch.nn.Module``.

The manifest lists every entry of ``model.named_modules()`` in order (root
first, path ``""``) with its class, parent, children and own parameters and
buffers; given example inputs, also what each module's forward ran
(:mod:`semmap.manifest._forward`). See ``docs/manifest.md`` for the format.

A TorchScript module (``torch.jit.script``, ``torch.jit.trace``,
``torch.jit.load``) gets the classes of the modules it was made from
(:func:`module_class`), and no forward signatures: hooks, which record them,
are not supported on ScriptModules.
"""

from __future__ import annotations

import os
import re
import warnings
from typing import Any

import torch

from semmap.manifest._atomic import output_target, write_json
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


#: The namespace atoms TorchScript inserts to tell apart the types it makes from one
#: Python class (a scripted module with other constants, every traced module after the
#: first): ``torch.nn.modules.conv.___torch_mangle_3.Conv2d``.
_TORCHSCRIPT_MANGLE = re.compile(r"___torch_mangle_[0-9]+")


def _script_class(module: torch.jit.ScriptModule) -> tuple[str, str] | None:
    """(class, qualified class) of the Python class a ScriptModule was made from, or None if unknown.

    TorchScript names a module's type ``__torch__.<module>.<class>``, with
    ``___torch_mangle_N`` atoms for the variants of one class and without the
    module for classes of ``__main__``; ``torchvision.models.resnet.ResNet``
    is ``__torch__.torchvision.models.resnet.ResNet``, a second ``Conv2d``
    ``__torch__.torch.nn.modules.conv.___torch_mangle_0.Conv2d``. The type
    keeps the class's ``__name__``, not its ``__qualname__``: a class nested
    in another loses the enclosing class's name.
    """
    try:
        name = str(module._c._type().qualified_name())
        original = module.original_name
    except (AttributeError, RuntimeError):  # a ScriptModule not yet initialised, or a future torch
        return None
    atoms = [a for a in name.split(".") if a and not _TORCHSCRIPT_MANGLE.fullmatch(a)]
    if atoms[:1] == ["__torch__"]:
        atoms = atoms[1:]
    if not atoms:
        return None
    if len(atoms) == 1:  # TorchScript drops the module name __main__
        atoms.insert(0, "__main__")
    return (original or atoms[-1]), ".".join(atoms)


def module_class(module: torch.nn.Module) -> tuple[str, str]:
    """The class name and qualified class the manifest records for ``module``.

    ``type(module).__name__`` and :func:`qualified_class`; for a TorchScript
    module (whose Python type is ``RecursiveScriptModule``), those of the class
    it was scripted or traced from, read from its TorchScript type
    (:func:`_script_class`), so that ``torch.nn.modules.linear.Linear`` reads
    the same for a loaded module as for an eager one.
    """
    if isinstance(module, torch.jit.ScriptModule):
        names = _script_class(module)
        if names is not None:
            return names
    return type(module).__name__, qualified_class(module)


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
    scripted = next((p for p, m in model.named_modules() if isinstance(m, torch.jit.ScriptModule)), None)
    if scripted is not None:
        # register_forward_pre_hook raises on a ScriptModule, and its forward runs
        # in TorchScript, where no TorchFunctionMode sees the ops: nothing to record
        where = "the model" if scripted == "" else f"module {scripted!r}"
        warnings.warn(
            f"semmap.manifest: forward signatures not recorded (schema version 1 written): {where} is a "
            "TorchScript module (hooks are not supported on ScriptModules); the manifest has module paths, "
            "classes and tensors only",
            stacklevel=3,
        )
        return {}
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
            A model that is or holds a TorchScript module (``torch.jit.script``,
            ``trace``, ``load``) is not run: hooks are not supported on
            ScriptModules, so a warning says so and the manifest is version 1.
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
        class_name, qualified = module_class(module)
        entry: dict[str, Any] = {
            "path": path,
            "class": class_name,
            "qualified_class": qualified,
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
    class_name, qualified = module_class(model)
    model_info: dict[str, Any] = {
        "class": class_name,
        "qualified_class": qualified,
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
    output_target(destination)
    manifest = build_manifest(model, config_summary=config_summary, inputs=inputs)
    write_json(destination, manifest)
    return manifest
