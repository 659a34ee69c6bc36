"""The ``semmap-manifest`` command (also ``python -m semmap.manifest``): ``manifest`` and ``export``.

``manifest`` builds the model on PyTorch's meta device (no weight is allocated,
and ``--model-id DIR`` reads only ``DIR/config.json``), so it works for models
of any size, and records the forward signatures of one pass on meta example
inputs, which computes nothing (schema version 2; ``--no-forward``, or a model
whose forward needs tensor values, gives version 1). ``export`` needs real
weights and builds or loads them; its manifest records the forward signatures
of a pass on the example inputs of the export (schema version 2). Both
commands make the same example inputs (``--batch``, ``--sequence``), so a
manifest written with ``manifest`` records what ``export`` would.

Exit status 0 on success; 2 for bad arguments; 1 when the model cannot be
built or exported, with the underlying error on stderr. Output files are
written atomically: on failure none of them is created or changed.
"""

from __future__ import annotations

import argparse
import os
import json
import sys
import traceback
from pathlib import Path
from typing import Any, Sequence

from semmap.manifest._models import TASKS


def _parse_config(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"--config is not valid JSON: {e}") from e
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("--config must be a JSON object")
    return value


def _add_model_options(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--model-type", help="transformers model type, e.g. bert, gpt2, llama (built from config)")
    src.add_argument("--model-id", help="local directory saved with save_pretrained, or a hub id")
    p.add_argument(
        "--task",
        default="auto",
        choices=sorted(TASKS),
        help="which class to build (default: auto, the class config.json's architectures names, else AutoModel)",
    )
    p.add_argument("--config", type=_parse_config, default={}, help="JSON object of config overrides")
    p.add_argument("--attn-implementation", default=None, help="e.g. eager or sdpa")
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="torch.manual_seed before building (default 0); weights exist only for export and --allocate-weights",
    )
    p.add_argument("-o", "--output-dir", type=Path, default=Path("."), help="directory for the output files")
    p.add_argument("--no-config-summary", action="store_true", help="omit model.config from the manifest")
    p.add_argument(
        "--vmap-free-masks",
        action="store_true",
        help="build attention masks without torch.vmap while exporting and recording (Optimum's functions, the "
        "'masks' extra); needed by causal LMs and Whisper with transformers 4.53 to 4.x, ignored with "
        "transformers 5.x; give it to manifest too when the export used it",
    )
    p.add_argument("--batch", type=int, default=2, help="batch of the example inputs (default 2)")
    p.add_argument("--sequence", type=int, default=8, help="sequence length of the example inputs (default 8)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="semmap-manifest",
        description="Write semmap manifests (module hierarchy) and ONNX exports of HuggingFace models.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser(
        "manifest",
        help="write manifest.json for a model (built on the meta device: no weight is allocated or read; "
        "the forward signatures come from a pass on meta example inputs, which computes nothing)",
    )
    _add_model_options(m)
    m.add_argument(
        "--allocate-weights",
        action="store_true",
        help="build the model with real weights (random, or loaded with --model-id) instead of on the meta "
        "device; only for models whose constructor needs real tensors (the signatures' pass then computes)",
    )
    m.add_argument(
        "--no-forward",
        action="store_true",
        help="run no forward pass: a manifest without forward signatures (schema version 1)",
    )
    e = sub.add_parser(
        "export",
        help="write model.onnx (torch.onnx.export) and manifest.json with the forward signatures of a pass "
        "on the example inputs",
    )
    _add_model_options(e)
    e.add_argument("--exporter", choices=["torchscript", "dynamo"], default="torchscript")
    e.add_argument("--opset", type=int, default=None, help="opset (default: 17 for torchscript, the exporter's default (20) for dynamo)")
    e.add_argument("--static", action="store_true", help="do not declare dynamic batch/sequence axes")
    return parser


def _use_vmap_free_masks(args: argparse.Namespace) -> bool:
    """Whether to patch the masks; checked before the model is built so a missing package fails fast."""
    if not args.vmap_free_masks or getattr(args, "no_forward", False):
        return False
    from semmap.manifest._export import optimum_model_patcher, vmap_free_masks_needed

    if not vmap_free_masks_needed():
        import transformers

        print(f"semmap-manifest: note: --vmap-free-masks is not needed with transformers {transformers.__version__} "
              "(it builds masks without torch.vmap); ignored", file=sys.stderr)
        return False
    optimum_model_patcher()
    return True


def _build(args: argparse.Namespace, config: dict[str, Any]) -> Any:
    """The model: on the meta device for a manifest, with weights for an export or --allocate-weights."""
    if args.command == "manifest" and not args.allocate_weights:
        from semmap.manifest._meta import build_meta_model

        return build_meta_model(
            model_type=args.model_type,
            model_id=args.model_id,
            task=args.task,
            overrides=config,
            attn_implementation=args.attn_implementation,
        )
    from semmap.manifest._models import build_model

    return build_model(
        model_type=args.model_type,
        model_id=args.model_id,
        task=args.task,
        config=config,
        attn_implementation=args.attn_implementation,
        seed=args.seed,
    )


def _run(args: argparse.Namespace) -> list[str]:
    """Writes what the command makes; returns one line per file written."""
    from semmap.manifest._build import build_manifest
    from semmap.manifest._atomic import write_json
    from semmap.manifest._models import example_inputs

    config = dict(args.config)
    if args.command == "export" or not args.no_forward:
        # an export without past key/value inputs must not return a cache object; a manifest's
        # pass records what that export runs
        config.setdefault("use_cache", False)
    vmap_free_masks = _use_vmap_free_masks(args)
    model = _build(args, config)
    out_dir: Path = args.output_dir
    if args.command == "manifest" and args.no_forward:
        manifest = build_manifest(model, config_summary=not args.no_config_summary)
    else:
        import contextlib

        from semmap.manifest._export import export_onnx, traceable_masks

        # on the model's device: meta tensors for a model built on the meta device
        inputs = example_inputs(model, batch=args.batch, seq=args.sequence)
        with traceable_masks() if vmap_free_masks else contextlib.nullcontext():
            # recorded before the export so that a failure leaves no file
            manifest = build_manifest(model, config_summary=not args.no_config_summary, inputs=inputs)
            if args.command == "export":
                export_onnx(
                    model,
                    inputs,
                    out_dir / "model.onnx",
                    exporter=args.exporter,
                    opset=args.opset,
                    dynamic=not args.static,
                )
    write_json(out_dir / "manifest.json", manifest)
    written = [f"{out_dir / 'manifest.json'}: manifest of {manifest['model']['class']}, "
               f"{len(manifest['modules'])} modules, schema version {manifest['schema_version']}"]
    if args.command == "export":
        written.append(f"{out_dir / 'model.onnx'}: ONNX export ({args.exporter} exporter)")
    return written


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        written = _run(args)
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # report the underlying error, not a bare traceback
        if "SEMMAP_TRACEBACK" in os.environ:
            traceback.print_exc()
        print(f"semmap-manifest: error: {type(e).__name__}: {e}", file=sys.stderr)
        cause = e.__cause__ or e.__context__
        if cause is not None and str(cause) not in str(e):
            print(f"  caused by {type(cause).__name__}: {cause}", file=sys.stderr)
        return 1
    for line in written:
        print(line, file=sys.stderr)
    return 0
