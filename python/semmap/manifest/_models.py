"""Build HuggingFace models from a model type and a small config, and make example inputs.

Models are built from configs (``AutoConfig.for_model`` + ``AutoModel*.from_config``)
with ``torch.manual_seed(0)`` and in eval mode, so the same arguments always give
the same weights. ``--model-id`` loads a local directory or a hub id instead.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

from semmap.manifest._configs import ModelBuildError, config_for_type, load_config

# task name -> transformers auto class name ("auto": the class the config's
# ``architectures`` names, when there is one; see :func:`model_class`)
TASKS: dict[str, str] = {
    "auto": "AutoModel",
    "feature-extraction": "AutoModel",
    "sequence-classification": "AutoModelForSequenceClassification",
    "token-classification": "AutoModelForTokenClassification",
    "question-answering": "AutoModelForQuestionAnswering",
    "masked-lm": "AutoModelForMaskedLM",
    "causal-lm": "AutoModelForCausalLM",
    "seq2seq-lm": "AutoModelForSeq2SeqLM",
    "speech-seq2seq": "AutoModelForSpeechSeq2Seq",
    "ctc": "AutoModelForCTC",
    "audio-classification": "AutoModelForAudioClassification",
    "image-classification": "AutoModelForImageClassification",
    "zero-shot-image-classification": "AutoModelForZeroShotImageClassification",
}


def auto_class(task: str) -> Any:
    """The transformers auto class for ``task`` (see :data:`TASKS`)."""
    import transformers

    try:
        return getattr(transformers, TASKS[task])
    except KeyError:
        raise ModelBuildError(f"unknown task {task!r}; known tasks: {', '.join(sorted(TASKS))}") from None


def model_class(task: str, config: Any = None) -> Any:
    """The class to build for ``task`` and ``config``.

    For ``task="auto"`` that is the class the config's ``architectures`` names
    (what ``config.json`` of a saved model records, e.g. ``BertForSequenceClassification``),
    when transformers has it; otherwise, and for every other task, the auto
    class of :data:`TASKS`.
    """
    if task == "auto" and config is not None:
        import transformers

        for name in getattr(config, "architectures", None) or ():
            cls = getattr(transformers, str(name), None)
            if isinstance(cls, type) and issubclass(cls, transformers.PreTrainedModel):
                return cls
    return auto_class(task)


def from_config(cls: Any, config: Any, **kwargs: Any) -> torch.nn.Module:
    """``cls.from_config(config)`` for an auto class, ``cls._from_config(config)`` for a model class
    (what the auto classes call)."""
    if hasattr(cls, "from_config"):
        return cls.from_config(config, **kwargs)
    return cls._from_config(config, **kwargs)


def build_model(
    *,
    model_type: str | None = None,
    task: str = "auto",
    config: dict[str, Any] | None = None,
    model_id: str | None = None,
    attn_implementation: str | None = None,
    seed: int = 0,
    trained_like: bool = False,
) -> torch.nn.Module:
    """Build a model in eval mode.

    Exactly one of ``model_type`` (build from config, random weights drawn
    after ``torch.manual_seed(seed)``) and ``model_id`` (a local directory or
    hub id, via ``from_pretrained``, which reads the weights) must be given.
    ``config`` overrides config fields in both cases. For a manifest alone,
    :func:`semmap.manifest.build_meta_model` builds the same model
    without weights.

    ``trained_like`` adds small seeded noise to every parameter of a model
    built from a config. A fresh model's LayerNorm weights are all ones and its
    biases all zeros; torch's exporter de-duplicates identical initializers, so
    a fresh model's ONNX graph shares one tensor among dozens of modules
    through ``Identity`` nodes, which a trained model's graph never does.
    Noise gives the graph structure and initializer names of a trained model.
    Tied parameters (one ``Parameter`` under two names) stay tied.
    """

    if (model_type is None) == (model_id is None):
        raise ModelBuildError("give exactly one of model_type and model_id")
    auto_class(task)  # an unknown task fails before anything is read
    extra: dict[str, Any] = {}
    if attn_implementation is not None:
        extra["attn_implementation"] = attn_implementation
    if model_id is not None:
        loaded = load_config(model_id, config)
        model = model_class(task, loaded).from_pretrained(model_id, config=loaded, **extra)
    else:
        cfg = config_for_type(model_type, config)  # type: ignore[arg-type]
        torch.manual_seed(seed)
        model = from_config(model_class(task, cfg), cfg, **extra)
        if trained_like:
            perturb_parameters(model, seed)
    model.eval()
    return model


def perturb_parameters(model: torch.nn.Module, seed: int, scale: float = 0.02) -> None:
    """Add N(0, scale) noise to every floating-point parameter, deterministically."""
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for _, param in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            if param.is_floating_point():
                param.add_(torch.randn(param.shape, generator=gen, dtype=param.dtype) * scale)


def _forward_params(model: torch.nn.Module) -> set[str]:
    return set(inspect.signature(model.forward).parameters)


def example_inputs(model: torch.nn.Module, *, batch: int = 2, seq: int = 8) -> dict[str, torch.Tensor]:
    """Deterministic example inputs for ``model.forward``, chosen from its signature.

    Text models get ``input_ids`` and ``attention_mask`` (int64, ``batch x seq``),
    encoder-decoders also ``decoder_input_ids``, vision models ``pixel_values``
    at the config's image size, audio models ``input_features`` or
    ``input_values``. The inputs are on the device of the model's parameters
    (a model built on the meta device gets meta tensors: a forward pass on
    them computes nothing) and floating inputs in their dtype; the values are
    drawn on the CPU from a fixed seed, so they do not depend on the device.
    """
    cfg = model.config
    params = _forward_params(model)
    gen = torch.Generator().manual_seed(0)
    inputs: dict[str, torch.Tensor] = {}
    vocab = getattr(cfg, "vocab_size", None) or getattr(getattr(cfg, "text_config", None), "vocab_size", 100)
    main = getattr(model, "main_input_name", "input_ids")
    if "input_ids" in params and main in ("input_ids", "pixel_values") and (
        main == "input_ids" or "pixel_values" in params
    ):
        # low ids avoid special tokens such as eos being needed at the end
        inputs["input_ids"] = torch.randint(3, min(int(vocab), 100), (batch, seq), generator=gen)
        if "attention_mask" in params:
            inputs["attention_mask"] = torch.ones(batch, seq, dtype=torch.int64)
    if "pixel_values" in params:
        vcfg = getattr(cfg, "vision_config", cfg)
        size = getattr(vcfg, "image_size", 32)
        size = size[0] if isinstance(size, (list, tuple)) else size
        channels = getattr(vcfg, "num_channels", 3)
        inputs["pixel_values"] = torch.randn(batch, channels, size, size, generator=gen)
    if main == "input_features":
        frames = 2 * int(getattr(cfg, "max_source_positions", 1500))
        inputs["input_features"] = torch.randn(batch, int(cfg.num_mel_bins), frames, generator=gen)
    if main == "input_values":
        inputs["input_values"] = torch.randn(batch, 1600, generator=gen)
        # HF: models with feat_extract_norm == "group" (wav2vec2-base) must not get a mask
        if "attention_mask" in params and getattr(cfg, "feat_extract_norm", "layer") == "layer":
            inputs["attention_mask"] = torch.ones(batch, 1600, dtype=torch.int64)
    if getattr(cfg, "is_encoder_decoder", False) and "decoder_input_ids" in params:
        dec_vocab = min(int(vocab), 100)
        inputs["decoder_input_ids"] = torch.randint(3, dec_vocab, (batch, max(seq // 2, 2)), generator=gen)
    if not inputs:
        raise ModelBuildError(f"no example inputs known for {type(model).__name__} (main input {main!r})")
    return _placed_like(model, inputs)


def _placed_like(model: torch.nn.Module, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``inputs`` on the device of the model's first parameter, floating ones in its floating dtype."""
    params = list(model.parameters())
    if not params:
        return inputs
    device = params[0].device
    dtype = next((p.dtype for p in params if p.is_floating_point()), None)
    return {
        name: t.to(device=device, dtype=dtype if dtype is not None and t.is_floating_point() else t.dtype)
        for name, t in inputs.items()
    }


def dynamic_axes(inputs: dict[str, torch.Tensor]) -> dict[str, dict[int, str]]:
    """The dynamic axes a user would declare: batch everywhere, plus the sequence
    axis of token inputs (image and audio inputs keep their spatial sizes)."""
    axes: dict[str, dict[int, str]] = {}
    for name, tensor in inputs.items():
        if name in ("input_ids", "attention_mask", "token_type_ids") and tensor.dim() == 2 and name != "input_values":
            axes[name] = {0: "batch", 1: "sequence"}
        elif name == "decoder_input_ids":
            axes[name] = {0: "batch", 1: "decoder_sequence"}
        else:
            axes[name] = {0: "batch"}
    if "input_values" in inputs and "attention_mask" in inputs:
        axes["attention_mask"] = {0: "batch"}
    return axes
