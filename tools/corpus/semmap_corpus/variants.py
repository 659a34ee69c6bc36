"""Post-processed variants of an export, with truth matched back to it.

* ``ort-optimized``: ``onnxruntime.transformers.optimizer.optimize_model``
  (opt_level 0: the Python fusions only, so fused Attention /
  SkipLayerNormalization / Gelu nodes appear and nothing else is rewritten;
  a higher level first runs an ONNX Runtime session whose own fusions would
  mix two tools' effects in one fixture). Architectures without a fitting
  optimizer model type are recorded as not applicable.
* ``ort-session``: the file ONNX Runtime writes with
  ``SessionOptions.optimized_model_filepath`` at ``ORT_ENABLE_EXTENDED``, CPU provider.
* ``onnxslim``: ``onnxslim.slim(model)`` with its defaults.
* ``quantized``: ``onnxruntime.quantization.quantize_dynamic`` (QInt8 weights).
* ``qdq``: ``onnxruntime.quantization.quantize_static`` in the QDQ format (the
  format NPU toolchains require): per-channel QInt8 weights, QUInt8
  activations calibrated on the export's example inputs; every weight and
  activation passes through a ``QuantizeLinear`` / ``DequantizeLinear`` pair.
* ``q4``: ONNX Runtime's ``MatMulNBitsQuantizer`` (4-bit weight-only, how the
  ``model_q4.onnx`` files people publish are made): block size 16 (the
  corpus' hidden size), symmetric.
* ``fp16``: ``onnxruntime.transformers.float16.convert_float_to_float16`` with
  float32 inputs and outputs kept (``model_fp16.onnx``); ``onnxslim-fp16`` is
  the onnxslim variant converted the same way (a chain).
* ``stripped``: :func:`semmap_corpus.strip.strip_names` (of the TorchScript
  and of the dynamo export).
* ``<base>-resorted``: variant ``<base>`` re-sorted topologically with a seeded
  random tie-break (:func:`semmap_corpus.matching.resort`); ``stripped-resorted``
  is stripped again afterwards so names do not give the old order away. The
  permutation is written next to the model (``resort.json``) and the truth is
  carried over through it.
* ``functions``: a fresh TorchScript export with ``export_modules_as_functions``
  for the classes of ``Arch.function_modules`` (truth: TorchScript scopes).

Every variant carries the manifest of the export it derives from, forward
signatures included.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import onnx

from semmap.manifest._export import TORCHSCRIPT_DEFAULT_OPSET, export_onnx
from semmap.manifest._models import example_inputs
from semmap_corpus.matching import matched_truth, permuted_truth, positional_truth, resort
from semmap_corpus.sanitize import strip_local_paths
from semmap_corpus.store import Corpus, Fixture, error_record, quiet
from semmap_corpus.strip import strip_names
from semmap_corpus.truth import Truth, parameter_owners, torchscript_truth, truth_stats

if TYPE_CHECKING:
    from semmap_corpus.specs import Arch


class Plain(NamedTuple):
    """A plain export variants derive from: the model, its ONNX export, truth, manifest and
    the example inputs it was exported with (a dict by name or a tuple)."""

    model: Any
    onnx_model: onnx.ModelProto
    truth: Truth
    manifest: dict[str, Any]
    inputs: Any = None


def ort_optimize(src: Path, dest: Path, model_type: str, num_heads: int, hidden_size: int) -> None:
    from onnxruntime.transformers.optimizer import optimize_model

    optimized = optimize_model(
        str(src), model_type=model_type, num_heads=num_heads, hidden_size=hidden_size, opt_level=0, use_gpu=False
    )
    optimized.save_model_to_file(str(dest))


def ort_session_optimize(src: Path, dest: Path) -> None:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(dest)
    options.intra_op_num_threads = 1
    ort.InferenceSession(str(src), options, providers=["CPUExecutionProvider"])


def slim(model: onnx.ModelProto) -> onnx.ModelProto:
    import copy

    import onnxslim

    return onnxslim.slim(copy.deepcopy(model))


RESORT_SEED = 0


def quantize(src: Path, dest: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(src), str(dest), weight_type=QuantType.QInt8)


def onnx_feeds(model: onnx.ModelProto, inputs: Any) -> dict[str, Any]:
    """The export's example inputs as ONNX Runtime feeds for the graph's inputs: the
    example of the same name where its dtype and rank agree, else the first unused one
    that agrees (an exporter may name inputs in another order than the example's);
    a scalar input without an example (``logits_to_keep``) gets 0."""
    import numpy as np
    from onnx import helper

    initializers = {t.name for t in model.graph.initializer}
    values = list(inputs.values()) if isinstance(inputs, dict) else list(inputs)
    names = list(inputs) if isinstance(inputs, dict) else [None] * len(values)
    arrays = [v.detach().cpu().numpy() for v in values]
    unused = list(range(len(arrays)))
    feeds = {}
    for graph_input in model.graph.input:
        if graph_input.name in initializers:
            continue
        tensor_type = graph_input.type.tensor_type
        dtype = helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)
        rank = len(tensor_type.shape.dim)
        fits = [k for k in unused if arrays[k].dtype == dtype and arrays[k].ndim == rank]
        named = [k for k in fits if names[k] == graph_input.name]
        chosen = (named or fits or [None])[0]
        if chosen is not None:
            unused.remove(chosen)
            feeds[graph_input.name] = arrays[chosen]
        elif rank == 0:
            feeds[graph_input.name] = np.zeros((), dtype=dtype)
        else:
            raise RuntimeError(f"no example input for graph input {graph_input.name!r}")
    return feeds


def quantize_qdq(src: Path, dest: Path, feeds: dict[str, Any]) -> None:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.items = iter([feeds])

        def get_next(self) -> dict[str, Any] | None:
            return next(self.items, None)

    quantize_static(str(src), str(dest), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    weight_type=QuantType.QInt8, activation_type=QuantType.QUInt8)


def quantize_4bit(model: onnx.ModelProto) -> onnx.ModelProto:
    import copy

    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    quantizer = MatMulNBitsQuantizer(copy.deepcopy(model), bits=4, block_size=16, is_symmetric=True)
    quantizer.process()
    return quantizer.model.model


def to_fp16(model: onnx.ModelProto) -> onnx.ModelProto:
    import copy

    from onnxruntime.transformers.float16 import convert_float_to_float16

    return convert_float_to_float16(copy.deepcopy(model), keep_io_types=True)


def _base_variant(variant: str, suffix: str, built: dict[str, Any], exporter: str) -> str:
    """The variant ``<base><suffix>`` derives from, which must be built already."""
    base = variant[: -len(suffix)]
    if base not in built:
        raise RuntimeError(f"no {exporter} {base} variant to derive {variant} from")
    return base


def build_variant(
    corpus: "Corpus",
    arch: "Arch",
    variant: str,
    plain: Plain,
    work: Path,
    exporter: str = "torchscript",
    built: dict[str, tuple[onnx.ModelProto, Truth]] | None = None,
) -> tuple[onnx.ModelProto, Truth] | None:
    """Write ``<arch>.<exporter>.<variant>`` derived from that export.

    ``built`` holds the variants of the same export built so far (a
    ``<base>-resorted`` variant derives from ``built[<base>]``); the new one is
    added to it. Returns the processed model and its truth, or None on failure.
    """

    built = {} if built is None else built
    model, original, truth, manifest, inputs = plain
    if variant == "functions":
        build_functions_variant(corpus, arch, model, work, manifest)
        return None
    source = f"{arch.name}.{exporter}"
    name = f"{source}.{variant}"
    if variant == "ort-optimized" and not arch.ort_model_type:
        corpus.not_applicable_variant(arch, exporter, variant,
                                      "no onnxruntime.transformers.optimizer model_type fits this architecture")
        return None
    src = work / f"{source}.onnx"
    onnx.save(original, str(src))
    dest = work / f"{name}.onnx"
    extra: dict[str, Any] = {"source": source}
    files: dict[str, Any] = {}
    derived_from = original
    try:
        with quiet():
            if variant == "ort-optimized":
                assert arch.ort_model_type and arch.ort_heads_hidden
                heads, hidden = arch.ort_heads_hidden
                ort_optimize(src, dest, arch.ort_model_type, heads, hidden)
                extra["ort_model_type"] = arch.ort_model_type
            elif variant == "ort-session":
                ort_session_optimize(src, dest)
                extra["ort_graph_optimization_level"] = "ORT_ENABLE_EXTENDED"
            elif variant == "onnxslim":
                onnx.save(slim(original), str(dest))
            elif variant == "quantized":
                quantize(src, dest)
            elif variant == "qdq":
                quantize_qdq(src, dest, onnx_feeds(original, inputs))
            elif variant == "q4":
                onnx.save(quantize_4bit(original), str(dest))
            elif variant == "fp16":
                onnx.save(to_fp16(original), str(dest))
            elif variant.endswith("-fp16"):
                base = _base_variant(variant, "-fp16", built, exporter)
                onnx.save(to_fp16(built[base][0]), str(dest))
                extra["derived_from"] = f"{source}.{base}"
            elif variant == "stripped":
                onnx.save(strip_names(original), str(dest))
            elif variant.endswith("-resorted"):
                base = _base_variant(variant, "-resorted", built, exporter)
                derived_from, base_truth = built[base]
                resorted, order = resort(derived_from, RESORT_SEED)
                if base == "stripped":
                    resorted = strip_names(resorted)
                onnx.save(resorted, str(dest))
                extra["derived_from"] = f"{source}.{base}"
                extra["resort_seed"] = RESORT_SEED
                files["resort.json"] = {"source": f"{source}.{base}", "seed": RESORT_SEED, "order": order}
            else:
                raise ValueError(f"unknown variant {variant!r}")
        processed = onnx.load(str(dest))
        if variant == "stripped":
            new_truth = positional_truth(processed, original, truth, source)
        elif variant.endswith("-resorted"):
            new_truth = permuted_truth(processed, derived_from, base_truth, files["resort.json"]["order"],
                                       extra["derived_from"], RESORT_SEED, renamed=variant.startswith("stripped"))
        else:
            new_truth = matched_truth(processed, original, truth, source,
                                      in_place_fusions=corpus.toolchain != "torch-2.9",
                                      owners=parameter_owners(model))
    except Exception as e:  # recorded in the index
        corpus.fail(arch, exporter, variant, [{"options": {}, **error_record(e)}])
        return None
    if variant not in ("stripped",) and not variant.endswith("-resorted"):
        before = Counter(n.op_type for n in original.graph.node)
        after = Counter(n.op_type for n in processed.graph.node)
        extra["new_op_types"] = {op: n for op, n in sorted(after.items()) if op not in before}
    opset = next((o.version for o in processed.opset_import if o.domain in ("", "ai.onnx")), None)
    fixture = Fixture(name, arch, type(model).__name__, exporter, variant, opset, truth_stats(new_truth), extra)
    corpus.write_fixture(name, processed, manifest, new_truth, fixture, files)
    built[variant] = (processed, new_truth)
    return processed, new_truth


def build_functions_variant(
    corpus: "Corpus", arch: "Arch", model: Any, work: Path, manifest: dict[str, Any]
) -> None:
    """TorchScript export with ``export_modules_as_functions`` (model-local functions) of the
    plain export's model, whose ``manifest`` it shares."""

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
    corpus.write_fixture(name, onnx_model, manifest, truth, fixture)
