"""Build the fixture corpus: ``python -m semmap_corpus fixtures/ [--slice NAME]``.

For every architecture of the slice (:data:`semmap_corpus.specs.SLICES`):
build the model from its config (seed 0, eval mode), export it with the
TorchScript exporter (opset 17) and the dynamo exporter (its default opset,
20), derive the ground truth, and write one directory per fixture with
``model.onnx``, ``manifest.json`` and ``truth.json``. Then the post-processed
variants and (torch-2.9 slice) the Optimum exports. Failures are recorded in
``index.json``, never hidden. Every index entry names its ``toolchain`` (the slice).

Slices: ``torch-2.9`` (the default; ``fixtures/``, frozen, python/requirements.txt)
and ``torch-2.15`` (``fixtures/torch-2.15/``, python/requirements-current.txt).
The builder refuses to build a slice with another torch release.

The corpus is written to a temporary sibling directory and swapped into
place at the end, so a failed run leaves the previous corpus untouched.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import onnx
import torch

from semmap.manifest._atomic import write_json
from semmap.manifest._export import (
    DYNAMO_DEFAULT_OPSET,
    TORCHSCRIPT_DEFAULT_OPSET,
    export_onnx,
    packed_sequences_without_diff,
    traceable_masks,
)
from semmap.manifest._build import build_manifest
from semmap.manifest._models import example_inputs
from semmap_corpus import optimum_fixtures, variants, zoo
from semmap_corpus.sanitize import strip_local_paths
from semmap_corpus.specs import DEFAULT_SLICE, SLICES, Arch, slice_archs
from semmap_corpus.store import Corpus, Fixture, build_for, error_record, quiet
from semmap_corpus.truth import (
    Truth,
    add_folded_origins,
    dynamo_truth,
    folded_modules,
    torchscript_truth,
    truth_stats,
)

GENERATED_NAMES = {"index.json"}

# Tried in order until the export succeeds; every failure is recorded.
ATTEMPTS: tuple[dict[str, Any], ...] = (
    {},
    {"attn_implementation": "eager"},
    {"attn_implementation": "eager", "config": {"return_dict": False, "use_cache": False}},
    {"masks": "without-vmap"},
    {"masks": "without-vmap", "static_shapes": True},
    {"attn_implementation": "eager", "masks": "without-vmap", "static_shapes": True},
)
# transformers 5.x needs no mask patch; Whisper's decoder checks position ids for
# packed sequences with torch.diff, which the TorchScript exporter cannot export.
# torchvision's MultiheadAttention takes a fused fast path under no_grad in
# eval mode, an op the TorchScript exporter cannot export: torch's own switch
# turns it off.
ATTEMPTS_TORCH_2_15: tuple[dict[str, Any], ...] = (
    {},
    {"attn_implementation": "eager"},
    {"masks": "without-diff"},
    {"masks": "without-diff", "static_shapes": True},
    {"mha_fastpath": False},
)


@contextlib.contextmanager
def mha_fastpath(enabled: bool) -> Any:
    """torch.backends.mha's fast path set to ``enabled`` for the block."""
    previous = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(enabled)
    try:
        yield
    finally:
        torch.backends.mha.set_fastpath_enabled(previous)
SLICE_ATTEMPTS = {"torch-2.9": ATTEMPTS, "torch-2.15": ATTEMPTS_TORCH_2_15}
# torch release each slice must be built with
SLICE_TORCH = {"torch-2.9": "2.9.", "torch-2.15": "2.15."}
# distributions recorded in the index besides torch, transformers, onnx, onnxruntime
SLICE_DISTS = {
    "torch-2.9": ("optimum", "optimum-onnx", "onnxscript", "onnx-ir"),
    "torch-2.15": ("onnxscript", "onnx-ir", "onnxslim", "numpy"),
}


def versions(dists: tuple[str, ...] = SLICE_DISTS[DEFAULT_SLICE]) -> dict[str, str]:
    import onnxruntime
    import transformers

    from semmap import __version__

    out = {
        "semmap": __version__,
        "torch": torch.__version__.split("+")[0],
        "transformers": transformers.__version__,
        "onnx": onnx.__version__,
        "onnxruntime": onnxruntime.__version__,
    }
    for dist in dists:
        with contextlib.suppress(Exception):
            from importlib.metadata import version

            out[dist] = version(dist)
    return out


def model_inputs(arch: Arch, model: Any) -> Any:
    """Example inputs: from a transformers model's signature, or an image batch."""
    if arch.source != "transformers":
        return zoo.example_inputs(arch.image_size)
    return example_inputs(model)


def export_context(options: dict[str, Any]) -> contextlib.ExitStack:
    """The patches an export attempt's ``options`` ask for (mask functions, MHA fast path), entered."""
    stack = contextlib.ExitStack()
    masks = {
        "without-vmap": traceable_masks,
        "without-diff": packed_sequences_without_diff,
    }.get(options.get("masks", ""), contextlib.nullcontext)
    stack.enter_context(masks())
    stack.enter_context(mha_fastpath(options.get("mha_fastpath", True)))
    return stack


def plain_manifest(arch: Arch, options: dict[str, Any]) -> tuple[Any, Any, dict[str, Any]]:
    """(model, example inputs, manifest) of ``arch`` built with an export attempt's ``options``,
    as :func:`export_plain` builds them, without exporting: for manifests of fixtures already built."""
    with quiet():
        model = build_for(arch, options)
        inputs = model_inputs(arch, model)
    with export_context(options):
        manifest = build_manifest(model, inputs=inputs)
    return model, inputs, manifest


def export_plain(corpus: Corpus, arch: Arch, exporter: str, work: Path) -> variants.Plain | None:
    """Export one architecture with one exporter; returns the export (model, onnx model, truth,
    manifest) or None.

    The manifest records the forward signatures of a pass on the inputs of
    the export, with the same patches, once the export succeeded."""
    errors: list[dict[str, Any]] = []
    opset = TORCHSCRIPT_DEFAULT_OPSET if exporter == "torchscript" else DYNAMO_DEFAULT_OPSET
    path = work / f"{arch.name}.{exporter}.onnx"
    for options in SLICE_ATTEMPTS[corpus.toolchain]:
        try:
            with quiet():
                model = build_for(arch, options)
                inputs = model_inputs(arch, model)
                with export_context(options):
                    export_onnx(
                        model, inputs, path, exporter=exporter, opset=opset,
                        dynamic=not options.get("static_shapes", False),
                    )
        except Exception as e:  # recorded in the index
            errors.append({"options": options, **error_record(e)})
            continue
        onnx_model = strip_local_paths(onnx.load(str(path)))
        opset = next((o.version for o in onnx_model.opset_import if o.domain in ("", "ai.onnx")), opset)
        if exporter == "torchscript":
            truth = torchscript_truth(onnx_model, model)
        else:
            truth = dynamo_truth(onnx_model, model, rewriter_lca=corpus.toolchain != "torch-2.9")
        truth = add_folded_origins(onnx_model, truth, folded_modules(model, inputs))
        name = f"{arch.name}.{exporter}"
        named = inputs if isinstance(inputs, dict) else {f"input_{i}": v for i, v in enumerate(inputs)}
        extra: dict[str, Any] = {"export_options": options, "inputs": {k: list(v.shape) for k, v in named.items()}}
        if errors:
            extra["failed_attempts"] = errors
        fixture = Fixture(name, arch, type(model).__name__, exporter, "plain", opset, truth_stats(truth), extra)
        with quiet(), export_context(options):
            manifest = build_manifest(model, inputs=inputs)
        if manifest["schema_version"] == 1:
            corpus.log(f"{name}: the forward pass on the example inputs failed: no forward signatures")
        corpus.write_fixture(name, onnx_model, manifest, truth, fixture)
        return variants.Plain(model, onnx_model, truth, manifest, inputs)
    corpus.fail(arch, exporter, "plain", errors)
    return None


def write_index(corpus: Corpus) -> None:
    library_versions = versions(SLICE_DISTS[corpus.toolchain])
    fixtures = []
    for f in sorted(corpus.fixtures, key=lambda f: f.dir):
        entry = f.index_entry(corpus.toolchain)
        entry["versions"] = library_versions
        fixtures.append(entry)
    index: dict[str, Any] = {
        "format": "semmap.fixtures",
        "toolchain": corpus.toolchain,
        "versions": library_versions,
        "held_out": sorted({a.model_type for a in slice_archs(corpus.toolchain) if a.held_out}),
        "fixtures": fixtures,
        "failed": corpus.failures,
        # combinations that failed with the default options and needed a fix
        "fallbacks": [
            {"dir": f.dir, "used_options": f.extra.get("export_options"), "failed_attempts": f.extra["failed_attempts"]}
            for f in sorted(corpus.fixtures, key=lambda f: f.dir)
            if f.extra.get("failed_attempts")
        ],
    }
    if corpus.not_applicable:
        index["not_applicable"] = corpus.not_applicable
    write_json(corpus.root / "index.json", index)


def build(
    root: Path, only: set[str] | None, log: Callable[[str], None], slice_name: str = DEFAULT_SLICE,
    fresh_weights: bool = False,
) -> Corpus:
    """Build the slice's corpus (or the architectures in ``only``) into ``root``; with
    ``fresh_weights``, every model keeps the weights its constructor initialised."""
    corpus = Corpus(root, log=log, toolchain=slice_name)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="semmap-corpus-work-") as work_dir:
        work = Path(work_dir)
        for arch in slice_archs(slice_name):
            if only and arch.name not in only:
                continue
            if fresh_weights:
                arch = dataclasses.replace(arch, extra={**arch.extra, "fresh_init": True})
            for exporter in ("torchscript", "dynamo"):
                result = export_plain(corpus, arch, exporter, work)
                wanted = arch.variants if exporter == "torchscript" else arch.dynamo_variants
                built: dict[str, Any] = {}
                for variant in wanted:
                    if result is None:
                        corpus.fail(arch, exporter, variant, [{"options": {}, "error_type": "skipped",
                                                               "error": f"no {exporter} export to derive from"}])
                    else:
                        variants.build_variant(corpus, arch, variant, result, work, exporter, built)
        if slice_name == "torch-2.9":
            optimum_fixtures.build_all(corpus, work, only)
    write_index(corpus)
    log(f"built in {time.monotonic() - start:.0f} s")
    return corpus


def _is_other_slice(item: Path) -> bool:
    """A directory holding a slice of its own (``fixtures/torch-2.15/``), not a fixture."""
    return item.is_dir() and (item / "index.json").exists()


def _is_kept_directory(item: Path) -> bool:
    """A directory the builder does not generate: another slice, or inputs kept beside the
    fixtures (``fixtures/mismatch/``: manifests only). A fixture directory holds a model."""
    return item.is_dir() and not item.name.startswith(".") and (
        _is_other_slice(item) or not (item / "model.onnx").exists()
    )


def _swap_in(new: Path, dest: Path) -> None:
    """Replace ``dest`` with ``new``, keeping what the builder does not generate there:
    files such as README.md, the directories of other slices and directories of kept
    inputs (moved over, untouched)."""
    if dest.exists():
        for item in dest.iterdir():
            if item.is_file() and item.name not in GENERATED_NAMES and not (new / item.name).exists():
                shutil.copy2(item, new / item.name)
            elif _is_kept_directory(item) and not (new / item.name).exists():
                os.replace(item, new / item.name)
        old = dest.with_name(f".{dest.name}.old")
        if old.exists():
            shutil.rmtree(old)
        os.replace(dest, old)
        os.replace(new, dest)
        shutil.rmtree(old)
    else:
        os.replace(new, dest)


def _merge_into(new: Path, dest: Path) -> None:
    """Partial build: replace only the rebuilt fixture directories and merge the index."""
    dest.mkdir(parents=True, exist_ok=True)
    new_index = json.loads((new / "index.json").read_text())
    old_index_path = dest / "index.json"
    old_index = json.loads(old_index_path.read_text()) if old_index_path.exists() else {"fixtures": [], "failed": []}
    rebuilt = {f["name"] for f in new_index["fixtures"]} | {f["name"] for f in new_index["failed"]}
    for item in new.iterdir():
        if item.is_dir():
            target = dest / item.name
            if target.exists():
                shutil.rmtree(target)
            os.replace(item, target)
    merged = dict(new_index)
    merged["fixtures"] = sorted(
        [f for f in old_index["fixtures"] if f["name"] not in rebuilt] + new_index["fixtures"], key=lambda f: f["dir"]
    )
    merged["failed"] = [f for f in old_index["failed"] if f["name"] not in rebuilt] + new_index["failed"]
    merged["fallbacks"] = sorted(
        [f for f in old_index.get("fallbacks", []) if f["dir"].split(".", 1)[0] not in rebuilt]
        + new_index["fallbacks"],
        key=lambda f: f["dir"],
    )
    # in build order (architecture order of the slice, TorchScript before dynamo), as a full build writes them
    arch_order = {a.name: i for i, a in enumerate(slice_archs(new_index.get("toolchain", DEFAULT_SLICE)))}
    not_applicable = sorted(
        [f for f in old_index.get("not_applicable", []) if f["name"] not in rebuilt]
        + new_index.get("not_applicable", []),
        key=lambda f: (arch_order.get(f["name"], len(arch_order)), f["exporter"] != "torchscript"),
    )
    merged.pop("not_applicable", None)
    if not_applicable:
        merged["not_applicable"] = not_applicable
    write_json(old_index_path, merged)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m semmap_corpus", description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path, help="corpus directory of the slice (fixtures/, fixtures/torch-2.15/)")
    parser.add_argument("--slice", default=DEFAULT_SLICE, choices=sorted(SLICES),
                        help=f"which slice (toolchain) to build (default {DEFAULT_SLICE})")
    parser.add_argument("--only", action="append", help="build only this architecture (repeatable); merges into dest")
    parser.add_argument("--status-file", type=Path, help="append one line per finished fixture to this file")
    parser.add_argument("--fresh-weights", action="store_true",
                        help="keep the weights each constructor initialised (not perturbed to look trained); "
                             "for a directory of its own, never the committed slice")
    args = parser.parse_args(argv)

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)
        if args.status_file:
            with open(args.status_file, "a", encoding="utf-8") as f:
                f.write(line + "\n")

    if not torch.__version__.startswith(SLICE_TORCH[args.slice]):
        parser.error(f"slice {args.slice} is built with torch {SLICE_TORCH[args.slice]}x, "
                     f"this is torch {torch.__version__} (scripts/build-corpus --slice {args.slice} picks the venv)")
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    dest: Path = args.dest.resolve()
    committed = (Path(__file__).resolve().parents[3] / "fixtures").resolve()
    if args.fresh_weights and (dest == committed or committed in dest.parents):
        parser.error(f"--fresh-weights builds into a directory of its own, not into the committed corpus {dest}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    new = Path(tempfile.mkdtemp(prefix=f".{dest.name}.new-", dir=dest.parent))
    os.chmod(new, 0o755)
    try:
        corpus = build(new, set(args.only) if args.only else None, log, args.slice, args.fresh_weights)
        if args.only:
            _merge_into(new, dest)
            shutil.rmtree(new)
        else:
            _swap_in(new, dest)
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        raise
    log(f"corpus: {len(corpus.fixtures)} fixtures, {len(corpus.failures)} failed combinations -> {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
