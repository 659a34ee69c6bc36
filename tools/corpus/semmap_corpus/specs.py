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
    # Where the model comes from: "transformers" (model_type + config), or a
    # vision library whose constructor ``model_type`` names, called with
    # ``config`` as keyword arguments (semmap_corpus.zoo).
    source: str = "transformers"
    # Side of the square image input of vision-library models.
    image_size: int = 0


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
# "-fp16" variants convert the variant named before the dash. The formats
# people publish beside model.onnx: quantized (dynamic), qdq (static QDQ),
# q4 (4-bit MatMulNBits), fp16.
CURRENT_TORCHSCRIPT_VARIANTS = ("onnxslim", "ort-optimized", "quantized", "qdq", "q4", "stripped",
                                "stripped-resorted")
CURRENT_DYNAMO_VARIANTS = (
    "onnxslim", "onnxslim-resorted", "ort-optimized", "ort-session", "quantized", "qdq", "q4", "fp16",
    "onnxslim-fp16", "stripped",
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

# Models of the vision libraries people export most, and transformers models
# that reuse a module: built by their libraries' own constructors
# (semmap_corpus.zoo), narrowed where the library offers it. Fixtures of
# more than 128 KiB keep their weights' shapes but drop their payloads after
# every variant was made from the full file (Arch.extra "drop_payloads").
VISION_TORCHSCRIPT_VARIANTS = ("onnxslim", "quantized", "qdq", "stripped")
VISION_DYNAMO_VARIANTS = ("onnxslim", "ort-session", "quantized", "qdq", "fp16", "stripped")


def _vision(name: str, source: str, constructor: str, config: dict[str, Any], image_size: int,
            **kw: Any) -> Arch:
    return Arch(name, constructor, "image-classification", config, source=source, image_size=image_size,
                variants=VISION_TORCHSCRIPT_VARIANTS, dynamo_variants=VISION_DYNAMO_VARIANTS,
                extra={"drop_payloads": True}, **kw)


_TEN = dict(num_classes=10)
# timm's test_* models: its smallest real configurations of each family, at
# their own input size (160).

ARCHS_WIDE_2_15: tuple[Arch, ...] = (
    # tuned: the families the fit check was studied on
    _vision("tv-resnet18", "torchvision", "resnet18", dict(_TEN), 64),  # BasicBlock calls relu twice
    _vision("tv-mobilenet-v3", "torchvision", "mobilenet_v3_small", dict(_TEN, width_mult=0.25), 64),
    _vision("tv-efficientnet", "torchvision", "efficientnet", dict(_TEN, width_mult=0.25, depth_mult=0.5), 64),
    _vision("tv-convnext", "torchvision", "convnext", dict(_TEN, channels=[16, 32], depths=[1, 1]), 64),
    _vision("tv-regnet", "torchvision", "regnet",
            dict(_TEN, depth=4, w_0=8, w_a=8.0, w_m=2.0, group_width=8, se_ratio=0.25, stem_width=8), 64),
    _vision("tv-vit", "torchvision", "vit",
            dict(_TEN, image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=16, mlp_dim=32), 32),
    _vision("timm-resnet", "timm", "test_resnet", dict(_TEN), 160),
    _vision("timm-efficientnet", "timm", "test_efficientnet", dict(_TEN), 160),
    _vision("timm-convnext", "timm", "test_convnext", dict(_TEN), 160),
    _vision("timm-vit", "timm", "test_vit", dict(_TEN), 160),
    # held out: never used to choose a rule or a threshold
    _vision("tv-densenet", "torchvision", "densenet",
            dict(_TEN, growth_rate=8, block_config=(2, 2), num_init_features=16, bn_size=2), 64, held_out=True),
    _vision("tv-googlenet", "torchvision", "googlenet", dict(_TEN, aux_logits=False, init_weights=True), 64,
            held_out=True),
    _vision("tv-shufflenet", "torchvision", "shufflenet_v2",
            dict(_TEN, stages_repeats=[2, 2, 2], stages_out_channels=[8, 16, 32, 64, 128]), 64, held_out=True),
    _vision("tv-swin-v2", "torchvision", "swin_v2",
            dict(_TEN, patch_size=[2, 2], embed_dim=8, depths=[1, 1], num_heads=[2, 2], window_size=[4, 4]), 32,
            held_out=True),
    _vision("tv-mobilenet-v2", "torchvision", "mobilenet_v2", dict(_TEN, width_mult=0.25), 64, held_out=True),
    _vision("timm-byobnet", "timm", "test_byobnet", dict(_TEN), 160, held_out=True),
    _vision("timm-nfnet", "timm", "test_nfnet", dict(_TEN), 160, held_out=True),
    _vision("timm-coatnet", "timm", "test_coatnet", dict(_TEN), 160, held_out=True),
    # held out, added after the rules were settled: measured once, never tuned on
    _vision("tv-mnasnet", "torchvision", "mnasnet", dict(_TEN, alpha=0.25), 64, held_out=True),
    _vision("tv-squeezenet", "torchvision", "squeezenet1_1", dict(_TEN), 64, held_out=True),
    _vision("timm-vit2", "timm", "test_vit2", dict(_TEN), 160, held_out=True),
    _vision("timm-efficientnet-gn", "timm", "test_efficientnet_gn", dict(_TEN), 160, held_out=True),
    _vision("timm-convnext2", "timm", "test_convnext2", dict(_TEN), 160, held_out=True),
    # one layer shared across depth: ALBERT calls its single layer group num_hidden_layers times
    Arch("albert-masked-lm", "albert", "masked-lm",
         dict(embedding_size=16, hidden_size=16, num_hidden_layers=3, num_attention_heads=2, intermediate_size=32,
              num_hidden_groups=1, inner_group_num=1, **_T),
         variants=("onnxslim", "quantized", "qdq", "q4", "stripped"),
         dynamo_variants=("onnxslim", "quantized", "qdq", "q4", "fp16", "stripped"),
         held_out=True),
)
ARCHS_TORCH_2_15 = ARCHS_TORCH_2_15 + ARCHS_WIDE_2_15

SLICES: dict[str, tuple[Arch, ...]] = {"torch-2.9": ARCHS, "torch-2.15": ARCHS_TORCH_2_15}
# The directory of a slice below the corpus root (fixtures/); "" for the frozen first slice.
SLICE_DIRS: dict[str, str] = {"torch-2.9": "", "torch-2.15": "torch-2.15"}
DEFAULT_SLICE = "torch-2.9"


def slice_archs(slice_name: str) -> tuple[Arch, ...]:
    try:
        return SLICES[slice_name]
    except KeyError:
        raise KeyError(f"unknown slice {slice_name!r}; known: {', '.join(SLICES)}") from None
