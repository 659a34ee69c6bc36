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
