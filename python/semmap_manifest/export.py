"""Export a model to ONNX with ``torch.onnx.export``, the way users do.

``exporter="torchscript"`` is ``dynamo=False`` (default opset 17 here),
``exporter="dynamo"`` is ``dynamo=True`` (the exporter's own default opset,
20 in torch 2.9, unless ``opset`` is given). Dynamic batch and sequence axes
are declared as a user would: ``dynamic_axes`` for TorchScript, ``dynamic_shapes`` for dynamo.
"""

from __future__ import annotations

import contextlib
import io
import os
import warnings
from types import ModuleType
from typing import Iterator, Literal

import torch

from semmap_manifest.atomic import atomic_path
from semmap_manifest.models import dynamic_axes

Exporter = Literal["torchscript", "dynamo"]
TORCHSCRIPT_DEFAULT_OPSET = 17
DYNAMO_DEFAULT_OPSET = None  # torch's own default: 20 in torch 2.9 and 2.15 (torchlib builds 18, then converts)


def _dynamic_shapes(inputs: dict[str, torch.Tensor]) -> dict[str, dict[int, object]]:
    # Dim.DYNAMIC lets torch.export specialise where the model requires it
    # (a named Dim fails on guards such as "batch != 1" or "sequence <= max positions").
    return {name: {i: torch.export.Dim.DYNAMIC for i in axes} for name, axes in dynamic_axes(inputs).items()}


def export_onnx(
    model: torch.nn.Module,
    inputs: dict[str, torch.Tensor],
    path: str | os.PathLike[str],
    *,
    exporter: Exporter = "torchscript",
    opset: int | None = None,
    dynamic: bool = True,
    quiet: bool = True,
    modules_as_functions: set[type[torch.nn.Module]] | None = None,
) -> None:
    """Export ``model(**inputs)`` to ``path`` atomically (a temp file renamed into place).

    ``modules_as_functions`` (TorchScript only) exports modules of these
    classes as ONNX model-local functions (``export_modules_as_functions``).
    Raises whatever the exporter raises; ``path`` is then left untouched.
    """
    if exporter not in ("torchscript", "dynamo"):
        raise ValueError(f"unknown exporter {exporter!r}; use 'torchscript' or 'dynamo'")
    sink = io.StringIO()
    redirect = contextlib.ExitStack()
    with redirect, atomic_path(path) as tmp, torch.no_grad(), warnings.catch_warnings():
        if quiet:
            warnings.simplefilter("ignore")
            redirect.enter_context(contextlib.redirect_stdout(sink))
        if exporter == "torchscript":
            torch.onnx.export(
                model,
                (),
                str(tmp),
                kwargs=dict(inputs),
                input_names=list(inputs),
                dynamic_axes=dynamic_axes(inputs) if dynamic else None,
                opset_version=opset or TORCHSCRIPT_DEFAULT_OPSET,
                dynamo=False,
                **({"export_modules_as_functions": modules_as_functions} if modules_as_functions else {}),
            )
        else:
            program = torch.onnx.export(
                model,
                (),
                kwargs=dict(inputs),
                input_names=list(inputs),
                dynamic_shapes=_dynamic_shapes(inputs) if dynamic else None,
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
    from semmap_manifest.configs import transformers_major

    return transformers_major() < 5


def optimum_model_patcher() -> ModuleType:
    """Optimum's ``model_patcher`` module, or a :class:`MissingDependencyError` saying how to install it."""
    try:
        from optimum.exporters.onnx import model_patcher
    except ImportError as e:
        raise MissingDependencyError(
            f"--vmap-free-masks uses Optimum's mask functions, which are not installed ({e}); install them with "
            "pip install 'semmap-manifest[masks]' (optimum-onnx, which needs transformers < 4.58). "
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
