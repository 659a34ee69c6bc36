"""The fixture corpus: which architectures, configs and tasks are exported.

Configs are tiny on purpose (hidden 32-64, 2 layers, small vocabularies and
images) so the whole corpus stays small and builds in minutes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Arch:
    """One architecture of the corpus."""

    name: str  # fixture directory stem
    model_type: str
    task: str
    config: dict[str, Any]
    held_out: bool = False
    # onnxruntime.transformers.optimizer model_type for the ort-optimized variant
    ort_model_type: str | None = None
    # (num_heads, hidden_size) for the optimizer
    ort_heads_hidden: tuple[int, int] | None = None
    variants: tuple[str, ...] = ()  # of the TorchScript export
    dynamo_variants: tuple[str, ...] = ()  # of the dynamo export
    # module paths whose classes are exported as ONNX functions (variant "functions")
    function_modules: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


_TEXT = dict(vocab_size=200, max_position_embeddings=64)

ARCHS: tuple[Arch, ...] = (
    Arch(
        "bert-seqcls", "bert", "sequence-classification",
        dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
             type_vocab_size=2, num_labels=2, **_TEXT),
        ort_model_type="bert", ort_heads_hidden=(2, 32),
        variants=("ort-optimized", "quantized", "stripped", "functions"), dynamo_variants=("stripped",),
        function_modules=("bert.encoder.layer.0",),
    ),
    # The same BERT with freshly initialised weights: identical LayerNorm and
    # bias tensors are de-duplicated by the exporter into Identity nodes.
    Arch(
        "bert-seqcls-fresh-init", "bert", "sequence-classification",
        dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
             type_vocab_size=2, num_labels=2, **_TEXT),
        variants=("stripped",),
        extra={"fresh_init": True},
    ),
    Arch(
        "distilbert-seqcls", "distilbert", "sequence-classification",
        dict(dim=32, n_layers=2, n_heads=2, hidden_dim=64, num_labels=2, **_TEXT),
    ),
    Arch(
        "roberta-masked-lm", "roberta", "masked-lm",
        dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
             vocab_size=200, max_position_embeddings=66, type_vocab_size=1),
    ),
    Arch(
        "gpt2-causal-lm", "gpt2", "causal-lm",
        dict(n_embd=32, n_layer=2, n_head=2, n_positions=64, vocab_size=200, use_cache=False),
        ort_model_type="gpt2", ort_heads_hidden=(2, 32), variants=("ort-optimized", "quantized", "stripped"),
        dynamo_variants=("stripped",),
    ),
    Arch(
        "llama-causal-lm", "llama", "causal-lm",
        dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, vocab_size=200, max_position_embeddings=64, use_cache=False),
    ),
    Arch(
        "qwen2-causal-lm", "qwen2", "causal-lm",
        dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, vocab_size=200, max_position_embeddings=64, use_cache=False),
    ),
    Arch(
        "t5-seq2seq-lm", "t5", "seq2seq-lm",
        dict(d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
             vocab_size=200, use_cache=False, decoder_start_token_id=0),
    ),
    Arch(
        "bart-seq2seq-lm", "bart", "seq2seq-lm",
        dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
             decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=200,
             max_position_embeddings=64, use_cache=False),
    ),
    Arch(
        "vit-imgcls", "vit", "image-classification",
        dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
             image_size=32, patch_size=8, num_labels=3),
        ort_model_type="vit", ort_heads_hidden=(2, 32), variants=("ort-optimized", "quantized", "stripped"),
        dynamo_variants=("stripped",),
    ),
    Arch(
        "resnet-imgcls", "resnet", "image-classification",
        dict(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], layer_type="basic", num_labels=3,
             downsample_in_first_stage=False),
    ),
    Arch(
        "convnext-imgcls", "convnext", "image-classification",
        dict(num_stages=2, hidden_sizes=[16, 32], depths=[1, 1], num_labels=3, image_size=32),
    ),
    Arch(
        "whisper-speech-seq2seq", "whisper", "speech-seq2seq",
        dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
             decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=200,
             num_mel_bins=16, max_source_positions=16, max_target_positions=32, use_cache=False,
             decoder_start_token_id=1, pad_token_id=0, bos_token_id=1, eos_token_id=2),
        held_out=True,
    ),
    Arch(
        "wav2vec2-ctc", "wav2vec2", "ctc",
        dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
             conv_dim=[16, 16], conv_stride=[5, 4], conv_kernel=[10, 8], num_conv_pos_embeddings=16,
             num_conv_pos_embedding_groups=2, vocab_size=32, do_stable_layer_norm=False),
    ),
    Arch(
        "clip", "clip", "auto",
        dict(text_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                              vocab_size=200, max_position_embeddings=16),
             vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                                image_size=32, patch_size=8),
             projection_dim=16),
        held_out=True,
    ),
)

# Optimum exports: (fixture stem, arch name, optimum task)
OPTIMUM: tuple[tuple[str, str, str], ...] = (
    ("t5", "t5-seq2seq-lm", "text2text-generation"),
    ("gpt2", "gpt2-causal-lm", "text-generation-with-past"),
)


def arch(name: str) -> Arch:
    for a in ARCHS:
        if a.name == name:
            return a
    raise KeyError(name)


# ---------------------------------------------------------------------------
# Slices. The corpus in fixtures/ (ARCHS above) is the "torch-2.9" slice, built
# with python/requirements.txt and frozen. "torch-2.15" (fixtures/torch-2.15/)
# is built with python/requirements-current.txt: the tuned set of the first
# slice's main families plus held-out whisper, clip, phi3 (fused qkv_proj and
# gate_up_proj) and swin (hierarchical windowed attention, patch merging).

# Variants of the torch-2.15 slice, in build order: "-resorted" variants derive
# from the variant named before the dash ("onnxslim", "stripped").
CURRENT_TORCHSCRIPT_VARIANTS = ("onnxslim", "ort-optimized", "quantized", "stripped", "stripped-resorted")
CURRENT_DYNAMO_VARIANTS = (
    "onnxslim", "onnxslim-resorted", "ort-optimized", "ort-session", "quantized", "stripped",
)


def _current(name: str, model_type: str, task: str, config: dict[str, Any], **kw: Any) -> Arch:
    return Arch(name, model_type, task, config, variants=CURRENT_TORCHSCRIPT_VARIANTS,
                dynamo_variants=CURRENT_DYNAMO_VARIANTS, **kw)


# Hidden size 16 (the torch-2.9 slice: 32-64) keeps the slice under 25 MB with
# every variant; the graphs have the same structure as with larger sizes.
_T = dict(vocab_size=200, max_position_embeddings=64)
_SMALL_DECODER = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, vocab_size=200, max_position_embeddings=64, use_cache=False)

ARCHS_TORCH_2_15: tuple[Arch, ...] = (
    _current("bert-seqcls", "bert", "sequence-classification",
             dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                  type_vocab_size=2, num_labels=2, **_T),
             ort_model_type="bert", ort_heads_hidden=(2, 16)),
    # GQA (4 heads of 4, 2 kv heads) and rotary
    _current("llama-causal-lm", "llama", "causal-lm", dict(_SMALL_DECODER)),
    _current("t5-seq2seq-lm", "t5", "seq2seq-lm",
             dict(d_model=16, d_kv=8, d_ff=32, num_layers=2, num_decoder_layers=2, num_heads=2,
                  vocab_size=200, use_cache=False, decoder_start_token_id=0),
             ort_model_type="t5", ort_heads_hidden=(2, 16)),
    _current("resnet-imgcls", "resnet", "image-classification",
             dict(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], layer_type="basic", num_labels=3,
                  downsample_in_first_stage=False)),
    _current("vit-imgcls", "vit", "image-classification",
             dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                  image_size=32, patch_size=8, num_labels=3),
             ort_model_type="vit", ort_heads_hidden=(2, 16)),
    _current("wav2vec2-ctc", "wav2vec2", "ctc",
             dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                  conv_dim=[8, 8], conv_stride=[5, 4], conv_kernel=[10, 8], num_conv_pos_embeddings=16,
                  num_conv_pos_embedding_groups=2, vocab_size=32, do_stable_layer_norm=False)),
    _current("whisper-speech-seq2seq", "whisper", "speech-seq2seq",
             dict(d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
                  decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, vocab_size=200,
                  num_mel_bins=16, max_source_positions=16, max_target_positions=32, use_cache=False,
                  decoder_start_token_id=1, pad_token_id=0, bos_token_id=1, eos_token_id=2),
             held_out=True),
    _current("clip", "clip", "auto",
             dict(text_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                                   vocab_size=200, max_position_embeddings=16),
                  vision_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, image_size=32, patch_size=8),
                  projection_dim=16),
             held_out=True, ort_model_type="clip", ort_heads_hidden=(2, 16)),
    # fused qkv_proj and gate_up_proj
    _current("phi3-causal-lm", "phi3", "causal-lm",
             dict(_SMALL_DECODER, original_max_position_embeddings=64, pad_token_id=0, bos_token_id=1,
                  eos_token_id=2),
             held_out=True),
    # hierarchical: windowed attention, patch merging between stages
    _current("swin-imgcls", "swin", "image-classification",
             dict(image_size=32, patch_size=2, embed_dim=8, depths=[1, 1], num_heads=[2, 2], window_size=4,
                  mlp_ratio=2.0, num_labels=3),
             held_out=True, ort_model_type="swin", ort_heads_hidden=(0, 0)),
)

SLICES: dict[str, tuple[Arch, ...]] = {"torch-2.9": ARCHS, "torch-2.15": ARCHS_TORCH_2_15}
# The directory of a slice below the corpus root (fixtures/); "" for the frozen first slice.
SLICE_DIRS: dict[str, str] = {"torch-2.9": "", "torch-2.15": "torch-2.15"}
DEFAULT_SLICE = "torch-2.9"


def slice_archs(slice_name: str) -> tuple[Arch, ...]:
    try:
        return SLICES[slice_name]
    except KeyError:
        raise KeyError(f"unknown slice {slice_name!r}; known: {', '.join(SLICES)}") from None
