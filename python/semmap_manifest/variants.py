"""Post-processed variants of a TorchScript export, with truth matched back to it.

* ``ort-optimized``: ``onnxruntime.transformers.optimizer.optimize_model``
  (opt_level 0: the Python fusions only, so fused Attention /
  SkipLayerNormalization / Gelu nodes appear and nothing else is rewritten).
* ``quantized``: ``onnxruntime.quantization.quantize_dynamic`` (QInt8 weights).
* ``stripped``: :func:`semmap_manifest.strip.strip_names` (of the TorchScript
  and of the dynamo export).
* ``functions``: a fresh TorchScript export with ``export_modules_as_functions``
  for the classes of ``Arch.function_modules`` (truth: TorchScript scopes).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import onnx

from semmap_manifest.manifest import build_manifest
from semmap_manifest.matching import matched_truth, positional_truth
from semmap_manifest.strip import strip_names
from semmap_manifest.truth import Truth, truth_stats

if TYPE_CHECKING:
    from semmap_manifest.corpus import Corpus
    from semmap_manifest.specs import Arch


def ort_optimize(src: Path, dest: Path, model_type: str, num_heads: int, hidden_size: int) -> None:
    from onnxruntime.transformers.optimizer import optimize_model

    optimized = optimize_model(
        str(src), model_type=model_type, num_heads=num_heads, hidden_size=hidden_size, opt_level=0, use_gpu=False
    )
    optimized.save_model_to_file(str(dest))


def quantize(src: Path, dest: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(src), str(dest), weight_type=QuantType.QInt8)


def build_variant(
    corpus: "Corpus",
    arch: "Arch",
    variant: str,
    plain: tuple[Any, onnx.ModelProto, Truth],
    work: Path,
    exporter: str = "torchscript",
) -> None:
    """Write ``<arch>.<exporter>.<variant>`` derived from that export."""
    from semmap_manifest.corpus import Fixture, error_record, quiet

    model, original, truth = plain
    if variant == "functions":
        build_functions_variant(corpus, arch, model, work)
        return
    source = f"{arch.name}.{exporter}"
    name = f"{source}.{variant}"
    src = work / f"{source}.onnx"
    onnx.save(original, str(src))
    dest = work / f"{name}.onnx"
    extra: dict[str, Any] = {"source": source}
    try:
        with quiet():
            if variant == "ort-optimized":
                assert arch.ort_model_type and arch.ort_heads_hidden
                heads, hidden = arch.ort_heads_hidden
                ort_optimize(src, dest, arch.ort_model_type, heads, hidden)
                extra["ort_model_type"] = arch.ort_model_type
            elif variant == "quantized":
                quantize(src, dest)
            elif variant == "stripped":
                onnx.save(strip_names(original), str(dest))
            else:
                raise ValueError(f"unknown variant {variant!r}")
        processed = onnx.load(str(dest))
        if variant == "stripped":
            new_truth = positional_truth(processed, original, truth, source)
        else:
            new_truth = matched_truth(processed, original, truth, source)
    except Exception as e:  # recorded in the index
        corpus.fail(arch, exporter, variant, [{"options": {}, **error_record(e)}])
        return
    if variant != "stripped":
        before = Counter(n.op_type for n in original.graph.node)
        after = Counter(n.op_type for n in processed.graph.node)
        extra["new_op_types"] = {op: n for op, n in sorted(after.items()) if op not in before}
    opset = next((o.version for o in processed.opset_import if o.domain in ("", "ai.onnx")), None)
    fixture = Fixture(name, arch, type(model).__name__, exporter, variant, opset, truth_stats(new_truth), extra)
    corpus.write_fixture(name, processed, build_manifest(model), new_truth, fixture)


def build_functions_variant(corpus: "Corpus", arch: "Arch", model: Any, work: Path) -> None:
    """TorchScript export with ``export_modules_as_functions`` (model-local functions)."""
    from semmap_manifest.corpus import Fixture, error_record, quiet
    from semmap_manifest.export import TORCHSCRIPT_DEFAULT_OPSET, export_onnx
    from semmap_manifest.models import example_inputs
    from semmap_manifest.sanitize import strip_local_paths
    from semmap_manifest.truth import torchscript_truth

    classes = {type(model.get_submodule(p)) for p in arch.function_modules}
    options = {"export_modules_as_functions": sorted(f"{c.__module__}.{c.__qualname__}" for c in classes)}
    name = f"{arch.name}.torchscript.functions"
    path = work / f"{name}.onnx"
    try:
        with quiet():
            export_onnx(model, example_inputs(model), path, exporter="torchscript", modules_as_functions=classes)
        onnx_model = strip_local_paths(onnx.load(str(path)))
        truth = torchscript_truth(onnx_model, model)
    except Exception as e:  # recorded in the index
        corpus.fail(arch, "torchscript", "functions", [{"options": options, **error_record(e)}])
        return
    fixture = Fixture(name, arch, type(model).__name__, "torchscript", "functions", TORCHSCRIPT_DEFAULT_OPSET,
                      truth_stats(truth), {"export_options": options})
    corpus.write_fixture(name, onnx_model, build_manifest(model), truth, fixture)
