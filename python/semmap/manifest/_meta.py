"""Build HuggingFace models on PyTorch's ``meta`` device, for manifests of models of any size.

A manifest needs the module tree, the classes and the names, shapes and
dtypes of parameters and buffers, never a weight value. Built under
``torch.device("meta")``, a model allocates no storage: a 70B-parameter
config builds in seconds in a few hundred MB, where allocating its weights
would need 280 GB. The manifest of the meta-device model is the manifest of
the real one (``python/tests/manifest/test_meta.py`` proves it for every architecture
of the fixture corpus).

Three sources::

    build_meta_model(model_type="llama", task="causal-lm", overrides={"hidden_size": 4096})
    build_meta_model(model_id="./saved-model", task="causal-lm")   # reads config.json only
    build_meta_model(config=model.config, task="causal-lm")          # a config you hold

A model you already hold needs none of this: ``write_manifest(model, path)``
reads only shapes and dtypes, so it works for real and meta-device models alike.

From a directory the model gets the dtype ``from_pretrained`` would give it
without a ``dtype`` argument (transformers 4.x: torch's default dtype;
transformers 5.x: the config's ``dtype``, with the class's keep-in-float32
modules upcast as on loading), so its manifest equals the loaded model's.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
from typing import TYPE_CHECKING, Any, Mapping

import torch

from semmap.manifest._configs import config_for_type, load_config, transformers_major
from semmap.manifest._models import ModelBuildError, from_config, model_class

if TYPE_CHECKING:
    from transformers import PretrainedConfig


class MetaDeviceError(ModelBuildError):
    """The model's constructor needs real tensor values (it computes with them in
    ``__init__``), so it cannot be built on the meta device; build it with real
    weights instead (``semmap-manifest manifest --allocate-weights``)."""


def pretrained_dtype(config: "PretrainedConfig") -> torch.dtype:
    """The dtype ``from_pretrained`` gives a model of ``config`` when no ``dtype`` is passed.

    transformers 5.x loads with ``dtype="auto"``: the config's dtype. When the
    config names none, from_pretrained would look at the weights; this reads
    only the config, so it falls back to torch's default dtype.
    transformers 4.x loads in torch's default dtype (float32).
    """
    if transformers_major() >= 5:
        dtype = getattr(config, "dtype", None)
        if isinstance(dtype, str):
            dtype = getattr(torch, dtype, None)
        if isinstance(dtype, torch.dtype):
            return dtype
    return torch.get_default_dtype()


def _keep_in_float32(model: torch.nn.Module, dtype: torch.dtype) -> None:
    """Upcast the parameters transformers 5.x keeps in float32 when it loads ``dtype`` weights
    (the class's ``_keep_in_fp32_modules`` for float16, ``..._strict`` also for bfloat16)."""
    dtype_plan = getattr(model, "_get_dtype_plan", None)  # transformers >= 5 only
    if dtype_plan is None:
        return
    globs = list(dtype_plan(dtype))
    if not globs:
        return
    # the loader matches each checkpoint key against the globs, '*' meaning any run of characters
    pattern = re.compile("|".join(f"(?:{g.replace('*', '.*')})" for g in globs))
    for name, param in model.named_parameters():
        if pattern.search(name) and param.dtype != torch.float32:
            param.data = param.data.to(torch.float32)


def _skip_weight_init() -> contextlib.AbstractContextManager[object]:
    """transformers' own ``no_init_weights`` (what from_pretrained builds under), when it has one.

    Initialising meta tensors computes nothing but still walks every module:
    three quarters of the build time of a 70B config. The manifest does not
    change (the tests compare it with the initialised model's).
    """
    for where in ("transformers.initialization", "transformers.modeling_utils"):  # 5.x, 4.x
        try:
            module = importlib.import_module(where)
        except ImportError:
            continue
        skip = getattr(module, "no_init_weights", None)
        if skip is not None:
            return skip()
    return contextlib.nullcontext()


def _on_meta(config: "PretrainedConfig", task: str, attn_implementation: str | None) -> torch.nn.Module:
    cls = model_class(task, config)
    kwargs: dict[str, Any] = {}
    if attn_implementation is not None:
        kwargs["attn_implementation"] = attn_implementation
    try:
        with torch.device("meta"), _skip_weight_init():
            model = from_config(cls, config, **kwargs)
    except (NotImplementedError, RuntimeError) as e:
        if "meta" not in str(e):
            raise
        raise MetaDeviceError(
            f"{config.model_type} ({task}) cannot be built on the meta device: its constructor computes with "
            f"tensor values ({type(e).__name__}: {str(e).splitlines()[0]}); build it with real weights "
            "(semmap-manifest manifest --allocate-weights, or write_manifest on a model you hold)"
        ) from e
    # Legacy constructors (torch.Tensor(n), as in wav2vec2's masked_spec_embed) ignore the
    # device context and allocate on the CPU; move what they made.
    model.to(device="meta")
    # no_init_weights skips the tying post_init does; tie as the real model is tied
    # (lm_head.weight is embed_tokens.weight: one parameter under two names)
    tie_weights = getattr(model, "tie_weights", None)
    if callable(tie_weights):
        tie_weights()
    model.eval()
    return model


def build_meta_model(
    *,
    model_type: str | None = None,
    model_id: str | os.PathLike[str] | None = None,
    config: "PretrainedConfig | None" = None,
    task: str = "auto",
    overrides: Mapping[str, Any] | None = None,
    attn_implementation: str | None = None,
) -> torch.nn.Module:
    """Build a model on the meta device (no weight is allocated or read), in eval mode.

    Exactly one source: ``model_type`` (``AutoConfig.for_model`` with
    ``overrides``), ``model_id`` (a local directory, of which only
    ``config.json`` is read, or a hub id; ``overrides`` apply), or ``config``
    (a ``PretrainedConfig``, used as is). ``task`` picks the class
    (:func:`semmap.manifest._models.model_class`: for ``"auto"``, the one the
    config's ``architectures`` names).

    Raises :class:`ModelBuildError` when the config cannot be made or does not
    build, :class:`MetaDeviceError` when the model needs real tensors to build.
    """
    if sum(s is not None for s in (model_type, model_id, config)) != 1:
        raise ModelBuildError("give exactly one of model_type, model_id and config")
    if config is not None:
        if overrides:
            raise ModelBuildError("overrides apply to model_type and model_id; change the config object instead")
        return _on_meta(config, task, attn_implementation)
    if model_type is not None:
        return _on_meta(config_for_type(model_type, overrides), task, attn_implementation)
    loaded = load_config(model_id, overrides)  # type: ignore[arg-type]
    dtype = pretrained_dtype(loaded)
    loaded.dtype = dtype  # as from_pretrained records the dtype it loaded with
    model = _on_meta(loaded, task, attn_implementation)
    _keep_in_float32(model, dtype)
    return model
