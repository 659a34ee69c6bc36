"""Export a model to ONNX with ``torch.onnx.export``, the way users do.

``exporter="torchscript"`` is ``dynamo=False`` (default opset 17 here),
``exporter="dynamo"`` is ``dynamo=True`` (the exporter's own default opset,
20 in torch 2.9, unless ``opset`` is given). Dynamic batch and sequence axes
are declared as a user would: ``dynamic_axes`` for TorchScript, ``dynamic_shapes`` for dynamo.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator, Literal

import torch

from semmap.manifest._atomic import atomic_path, output_target
from semmap.manifest._forward import Inputs, split_inputs
from semmap.manifest._models import dynamic_axes

Exporter = Literal["torchscript", "dynamo"]
TORCHSCRIPT_DEFAULT_OPSET = 17
DYNAMO_DEFAULT_OPSET = None  # torch's own default: 20 in torch 2.9 and 2.15 (torchlib builds 18, then converts)


def _dynamic_shapes(inputs: dict[str, torch.Tensor]) -> dict[str, dict[int, object]]:
    # Dim.DYNAMIC lets torch.export specialise where the model requires it
    # (a named Dim fails on guards such as "batch != 1" or "sequence <= max positions").
    return {name: {i: torch.export.Dim.DYNAMIC for i in axes} for name, axes in dynamic_axes(inputs).items()}


def _use_cache_given_twice(model: torch.nn.Module) -> bool:
    """Whether tracing ``model`` would pass ``use_cache`` twice.

    transformers wraps some forwards (``BertModel``'s in 5.x, ``LlamaModel``'s
    in 4.5x: ``check_model_inputs``) in a decorator taking ``*args, **kwargs``
    that puts ``config.use_cache`` into the keyword arguments when it cannot
    find it among them. The TorchScript exporter passes every parameter of
    ``forward`` positionally, ``use_cache`` included: the call then gets it
    twice (``TypeError: ... got multiple values for argument 'use_cache'``).
    So: a wrapper whose own parameters do not name ``use_cache`` around a
    forward whose do.
    """
    config = getattr(model, "config", None)
    if getattr(config, "use_cache", None) is None:
        return False
    forward = type(model).forward
    code = getattr(forward, "__code__", None)
    if not hasattr(forward, "__wrapped__") or code is None:
        return False
    if "use_cache" in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]:
        return False
    import inspect

    return "use_cache" in inspect.signature(forward).parameters


@contextlib.contextmanager
def _forward_by_keyword(model: torch.nn.Module) -> Iterator[None]:
    """While tracing, ``model.forward`` takes the positional arguments the TorchScript
    exporter passes and hands them on by keyword, where ``use_cache`` would
    otherwise be passed twice (:func:`_use_cache_given_twice`). The trace, the
    graph and its node names are those of the model's own forward."""
    if not _use_cache_given_twice(model) or "forward" in vars(model):
        yield
        return
    import functools
    import inspect

    unbound = type(model).forward
    signature = inspect.signature(functools.partial(unbound, model))

    def forward(*args: Any, **kwargs: Any) -> Any:
        by_name: dict[str, Any] = {}
        for name, value in signature.bind(*args, **kwargs).arguments.items():
            if signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
                by_name.update(value)
            else:
                by_name[name] = value
        return unbound(model, **by_name)

    forward.__signature__ = signature  # type: ignore[attr-defined]  # what the exporter inspects
    model.forward = forward  # type: ignore[method-assign]
    try:
        yield
    finally:
        del model.forward


def export_onnx(
    model: torch.nn.Module,
    inputs: Inputs,
    path: str | os.PathLike[str],
    *,
    exporter: Exporter = "torchscript",
    opset: int | None = None,
    dynamic: bool = True,
    quiet: bool = True,
    modules_as_functions: set[type[torch.nn.Module]] | None = None,
) -> None:
    """Export ``model(**inputs)`` (or ``model(*inputs)``) to ``path`` atomically
    (a temp file renamed into place).

    With ``dynamic``, keyword inputs get the axes a user declares (batch, and
    the sequence of token inputs; :func:`dynamic_axes`); positional inputs,
    whose meaning is unknown, get a dynamic batch axis (axis 0).
    ``modules_as_functions`` (TorchScript only) exports modules of these
    classes as ONNX model-local functions (``export_modules_as_functions``).
    Raises whatever the exporter raises; ``path`` is then left untouched.
    """
    if exporter not in ("torchscript", "dynamo"):
        raise ValueError(f"unknown exporter {exporter!r}; use 'torchscript' or 'dynamo'")
    args, kwargs = split_inputs(inputs)
    if args:
        names = [f"input_{i}" for i in range(len(args))]
        axes = {name: {0: "batch"} for name, a in zip(names, args) if a.dim() > 0}
        shapes: Any = tuple({0: torch.export.Dim.DYNAMIC} if a.dim() > 0 else None for a in args)
    else:
        names = list(kwargs)
        axes = dynamic_axes(kwargs)
        shapes = _dynamic_shapes(kwargs)
    sink = io.StringIO()
    redirect = contextlib.ExitStack()
    with redirect, atomic_path(path) as tmp, torch.no_grad(), warnings.catch_warnings():
        if quiet:
            warnings.simplefilter("ignore")
            redirect.enter_context(contextlib.redirect_stdout(sink))
        if exporter == "torchscript":
            redirect.enter_context(_forward_by_keyword(model))
            torch.onnx.export(
                model,
                args,
                str(tmp),
                kwargs=kwargs,
                input_names=names,
                dynamic_axes=axes if dynamic else None,
                opset_version=opset or TORCHSCRIPT_DEFAULT_OPSET,
                dynamo=False,
                **({"export_modules_as_functions": modules_as_functions} if modules_as_functions else {}),
            )
        else:
            program = torch.onnx.export(
                model,
                args,
                kwargs=kwargs,
                input_names=names,
                dynamic_shapes=shapes if dynamic else None,
                **({"opset_version": opset} if opset else {}),
                dynamo=True,
                verbose=False,
            )
            # torch >= 2.10 writes the weights to a separate <file>.data unless told
            # otherwise; fixtures are single self-contained files.
            program.save(str(tmp), external_data=False)


class MissingDependencyError(RuntimeError):
    """An option needs a package that is not installed; the message says how to get it."""


def vmap_free_masks_needed() -> bool:
    """Whether the installed transformers builds attention masks with ``torch.vmap`` (4.53 to 4.x).

    transformers 5.x builds them without vmap, so causal LMs and Whisper
    export without :func:`traceable_masks`.
    """
    from semmap.manifest._configs import transformers_major

    return transformers_major() < 5


def optimum_model_patcher() -> ModuleType:
    """Optimum's ``model_patcher`` module, or a :class:`MissingDependencyError` saying how to install it."""
    try:
        from optimum.exporters.onnx import model_patcher
    except ImportError as e:
        raise MissingDependencyError(
            f"--vmap-free-masks uses Optimum's mask functions, which are not installed ({e}); install them with "
            "pip install 'semmap[masks]' (optimum-onnx, which needs transformers < 4.58). "
            "transformers >= 5 exports causal LMs and Whisper without the flag."
        ) from e
    return model_patcher


@contextlib.contextmanager
def traceable_masks() -> Iterator[None]:
    """Use Optimum's vmap-free attention-mask functions while exporting.

    transformers >= 4.53 builds causal masks with ``torch.vmap``, which the
    TorchScript tracer cannot record (``RuntimeError: unordered_map::at``).
    Optimum's exporter swaps in vectorised equivalents for the duration of an
    export; this does the same, using Optimum's functions, and restores the
    originals afterwards. Raises :class:`MissingDependencyError` when Optimum
    is not installed (the ``masks`` extra).
    """
    import transformers.masking_utils as mu

    mp = optimum_model_patcher()
    saved_sdpa = mu.ALL_MASK_ATTENTION_FUNCTIONS["sdpa"]
    saved_eager = mu.ALL_MASK_ATTENTION_FUNCTIONS["eager"]
    saved_packed = mu.find_packed_sequence_indices
    mu.ALL_MASK_ATTENTION_FUNCTIONS.register("sdpa", mp.sdpa_mask_without_vmap)
    mu.ALL_MASK_ATTENTION_FUNCTIONS.register("eager", mp.eager_mask_without_vmap)
    mu.find_packed_sequence_indices = mp.find_packed_sequence_indices_patched
    try:
        yield
    finally:
        mu.ALL_MASK_ATTENTION_FUNCTIONS.register("sdpa", saved_sdpa)
        mu.ALL_MASK_ATTENTION_FUNCTIONS.register("eager", saved_eager)
        mu.find_packed_sequence_indices = saved_packed


def _packed_sequence_indices_without_diff(position_ids: torch.Tensor) -> torch.Tensor | None:
    """``transformers.masking_utils.find_packed_sequence_indices`` without ``torch.diff``.

    Same result: consecutive position ids that do not increase by one start a
    new packed sequence. ``aten::diff`` has no TorchScript ONNX symbolic.
    """
    import transformers.masking_utils as mu

    first_dummy_value = position_ids[:, :1] - 1
    extended = torch.cat([first_dummy_value, position_ids], dim=-1)
    position_diff = extended[:, 1:] - extended[:, :-1]
    packed_sequence_mask = (position_diff != 1).cumsum(-1)
    if not mu.is_tracing(packed_sequence_mask) and (packed_sequence_mask[:, -1] == 0).all():
        return None
    return packed_sequence_mask


@contextlib.contextmanager
def packed_sequences_without_diff() -> Iterator[None]:
    """Swap in :func:`_packed_sequence_indices_without_diff` while exporting.

    transformers 5.x checks decoder position ids for packed sequences with
    ``torch.diff`` when no decoder attention mask is given (Whisper's decoder);
    the TorchScript exporter has no ``aten::diff`` (``UnsupportedOperatorError``).
    """
    import transformers.masking_utils as mu

    saved = mu.find_packed_sequence_indices
    mu.find_packed_sequence_indices = _packed_sequence_indices_without_diff
    try:
        yield
    finally:
        mu.find_packed_sequence_indices = saved


def default_manifest_path(model_path: str | os.PathLike[str]) -> Path:
    """Where :func:`semmap.export` puts the manifest: ``model.onnx`` -> ``model.manifest.json``."""
    path = Path(model_path)
    stem = path.name[: -len(".onnx")] if path.name.endswith(".onnx") else path.name
    return path.with_name(f"{stem}.manifest.json")


def _refuse_foreign_file(path: Path) -> None:
    """Refuses to replace a file at ``path`` unless it is a semmap manifest (an earlier export's)."""
    if not path.exists():
        return
    try:
        with open(path, encoding="utf-8") as f:
            is_manifest = json.load(f).get("format") == "semmap.manifest"
    except (OSError, ValueError, AttributeError):
        is_manifest = False
    if not is_manifest:
        raise FileExistsError(
            f"{path}: exists and is not a semmap manifest; refusing to replace it "
            "(pass manifest= another path)"
        )


def export_with_manifest(
    model: torch.nn.Module,
    inputs: Inputs,
    path: str | os.PathLike[str],
    *,
    manifest: str | os.PathLike[str] | None,
    exporter: Exporter,
    opset: int | None,
    dynamic: bool,
    vmap_free_masks: bool | None,
) -> Path:
    """Exports ``model`` to ``path`` and writes its manifest; returns the manifest's path.

    The manifest is checked for a foreign file before anything is written,
    and written only after the export succeeded, so a failed export leaves
    both files as they were. It records the forward signatures of a pass on
    ``inputs``, with the mask functions the export used.
    ``vmap_free_masks``: None exports as is and, if that fails for a transformers model where the installed transformers builds masks with vmap
    (:func:`vmap_free_masks_needed`) and Optimum is installed, once more with
    Optimum's vmap-free mask functions (which add nodes, hence not first);
    True always uses them (an error if Optimum is missing), False never.
    """
    from semmap.manifest._build import write_manifest

    if not isinstance(model, torch.nn.Module):  # before anything runs or is written
        raise TypeError(f"model must be a torch.nn.Module, not {type(model).__name__}")
    manifest_path = Path(manifest) if manifest is not None else default_manifest_path(path)
    # Refused before any work: a special file or a link that leads nowhere
    # (output_target), and a FIFO or a device, which semmap.export, mapping
    # what it wrote, could not read back (never replaced either way).
    for output in (Path(path), manifest_path):
        if output_target(output)[1]:
            raise ValueError(
                f"{output}: a FIFO or character device; semmap.export maps the files it writes "
                "and cannot read one back (semmap.manifest.write_manifest writes into one)"
            )
    if manifest_path.resolve() == Path(path).resolve():
        raise ValueError(f"{manifest_path}: the manifest path is the model path")
    _refuse_foreign_file(manifest_path)

    def masks_context(masks: bool) -> contextlib.AbstractContextManager[None]:
        return traceable_masks() if masks else contextlib.nullcontext()

    def run(masks: bool) -> None:
        with masks_context(masks):
            export_onnx(model, inputs, path, exporter=exporter, opset=opset, dynamic=dynamic)

    masks = bool(vmap_free_masks)
    if vmap_free_masks is None:
        try:
            run(False)
        except Exception:
            # The masks change the graph (more nodes), so they are a fallback,
            # as in the corpus builder, not the first attempt; and they only
            # touch transformers' mask functions, so other models' failures
            # are not exported a second time.
            if not (_is_transformers_model(model) and vmap_free_masks_needed() and _optimum_available()):
                raise
            run(True)
            masks = True
    else:
        run(vmap_free_masks)
    with masks_context(masks):
        write_manifest(model, manifest_path, inputs=inputs)
    return manifest_path


def _is_transformers_model(model: torch.nn.Module) -> bool:
    """Whether ``model`` is a transformers model (without importing transformers for one that is not)."""
    import sys

    transformers = sys.modules.get("transformers")
    return transformers is not None and isinstance(model, transformers.PreTrainedModel)


def _optimum_available() -> bool:
    try:
        optimum_model_patcher()
    except MissingDependencyError:
        return False
    return True
