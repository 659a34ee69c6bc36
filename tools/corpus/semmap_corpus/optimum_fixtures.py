"""Optimum exports (``optimum.exporters.onnx.main_export``) of config-built models.

The model is built exactly as for the plain fixtures, saved with
``save_pretrained`` to a local directory (no hub access), and exported by
Optimum in-process. Optimum drives the TorchScript exporter, so the truth
comes from :func:`semmap_corpus.truth.torchscript_truth`, resolved against
the full model (every file of one export shares the full model's manifest).

* ``t5``   ``text2text-generation``: ``encoder_model.onnx`` and ``decoder_model.onnx``
  become the ``optimum-encoder`` / ``optimum-decoder`` fixtures.
* ``bart`` ``text2text-generation-with-past``: Optimum merges the decoder with
  and without past into ``decoder_model_merged.onnx``, one ``If`` node whose
  ``then_branch``/``else_branch`` subgraphs hold the modules (``optimum-merged``).
* ``gpt2`` ``text-generation-with-past``: optimum-onnx 0.1.0 exports decoder-only
  models as one ``model.onnx`` with past inputs (no merge) (``optimum-with-past``).

Optimum makes its own dummy inputs inside the export, per file; the shared
manifest records the forward signatures of a pass of the full model on the
example inputs of the plain exports (:func:`semmap.manifest._models.example_inputs`),
with Optimum's vmap-free mask functions, which its exporter swaps in too.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

from typing import Any

import onnx
import torch

from semmap.manifest._build import build_manifest
from semmap.manifest._export import traceable_masks
from semmap.manifest._models import example_inputs
from semmap_corpus.sanitize import strip_local_paths
from semmap_corpus.specs import arch as get_arch
from semmap_corpus.store import Corpus, Fixture, build_for, error_record, quiet
from semmap_corpus.truth import torchscript_truth, truth_stats

# (architecture, optimum task, {onnx file: (variant, path of the traced submodule)})
# Optimum traces model.get_encoder() for encoder_model.onnx (names start at the
# encoder: "/block.0/..."), and the whole model for decoders ("/decoder/...").
OPTIMUM_EXPORTS: tuple[tuple[str, str, dict[str, tuple[str, str]]], ...] = (
    ("t5-seq2seq-lm", "text2text-generation",
     {"encoder_model.onnx": ("optimum-encoder", "encoder"), "decoder_model.onnx": ("optimum-decoder", "")}),
    ("bart-seq2seq-lm", "text2text-generation-with-past",
     {"decoder_model_merged.onnx": ("optimum-merged", "")}),
    ("gpt2-causal-lm", "text-generation-with-past", {"model.onnx": ("optimum-with-past", "")}),
)


def optimum_model(arch_name: str, task: str, saved: Path) -> torch.nn.Module:
    """The model Optimum exports for ``task``: built as for the plain fixtures, with the cache on
    for the ``-with-past`` tasks, and saved to ``saved`` (``save_pretrained`` records the
    dtype in the config, which the manifest summarises)."""
    model = build_for(get_arch(arch_name), {})
    if task.endswith("-with-past"):
        model.config.use_cache = True
    model.save_pretrained(saved)
    return model


def optimum_manifest(model: torch.nn.Module) -> dict[str, Any]:
    """The manifest every file of the model's Optimum export shares."""
    with traceable_masks():
        return build_manifest(model, inputs=example_inputs(model))


def build_all(corpus: "Corpus", work: Path, only: set[str] | None) -> None:
    from optimum.exporters.onnx import main_export


    for arch_name, task, files in OPTIMUM_EXPORTS:
        if only and arch_name not in only:
            continue
        arch = get_arch(arch_name)
        saved = work / f"{arch_name}.hf"
        out = work / f"{arch_name}.optimum"
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(out)
        try:
            with quiet():
                model = optimum_model(arch_name, task, saved)
                main_export(str(saved), str(out), task=task, device="cpu", do_validation=False)
        except Exception as e:  # recorded in the index
            for variant, _ in files.values():
                corpus.fail(arch, "optimum", variant, [{"options": {"task": task}, **error_record(e)}])
            continue
        with quiet():
            manifest = optimum_manifest(model)
        for filename, (variant, traced_root) in files.items():
            path = out / filename
            if not path.exists():
                corpus.fail(arch, "optimum", variant, [{"options": {"task": task}, "error_type": "FileNotFoundError",
                                                        "error": f"optimum wrote no {filename}"}])
                continue
            onnx_model = strip_local_paths(onnx.load(str(path)))
            truth = torchscript_truth(onnx_model, model, traced_root)
            name = f"{arch.name}.optimum.{variant}"
            opset = next((o.version for o in onnx_model.opset_import if o.domain in ("", "ai.onnx")), None)
            fixture = Fixture(
                name, arch, type(model).__name__, "optimum", variant, opset, truth_stats(truth),
                {"optimum_task": task, "optimum_file": filename, "traced_root": traced_root},
            )
            corpus.write_fixture(name, onnx_model, manifest, truth, fixture)
