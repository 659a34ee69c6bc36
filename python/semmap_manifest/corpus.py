"""Build the fixture corpus: ``python -m semmap_manifest.corpus fixtures/``.

For every architecture in :mod:`semmap_manifest.specs`: build the model from
its config (seed 0, eval mode), export it with the TorchScript exporter
(opset 17) and the dynamo exporter (its default opset, 20), derive the ground truth, and
write one directory per fixture with ``model.onnx``, ``manifest.json`` and
``truth.json``. Then the Optimum exports and the post-processed variants.
Failures are recorded in ``index.json``, never hidden.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import onnx
import torch

from semmap_manifest.atomic import write_json
from semmap_manifest.export import DYNAMO_DEFAULT_OPSET, TORCHSCRIPT_DEFAULT_OPSET, export_onnx, traceable_masks
from semmap_manifest.manifest import build_manifest
from semmap_manifest.models import build_model, example_inputs
from semmap_manifest.sanitize import strip_local_paths
from semmap_manifest.specs import ARCHS, Arch
from semmap_manifest.truth import Truth, dynamo_truth, torchscript_truth, truth_stats

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


def versions() -> dict[str, str]:
    import onnxruntime
    import transformers

    from semmap_manifest import __version__

    out = {
        "semmap_manifest": __version__,
        "torch": torch.__version__.split("+")[0],
        "transformers": transformers.__version__,
        "onnx": onnx.__version__,
        "onnxruntime": onnxruntime.__version__,
    }
    for dist in ("optimum", "optimum-onnx", "onnxscript", "onnx-ir"):
        with contextlib.suppress(Exception):
            from importlib.metadata import version

            out[dist] = version(dist)
    return out


def error_record(e: BaseException) -> dict[str, str]:
    """Exception type and the first non-empty line of its message."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    first = lines[0] if lines else ""
    # strip terminal colour codes and object addresses so the index is reproducible
    first = re.sub(r"\x1b\[[0-9;]*m", "", first)
    first = re.sub(r"0x[0-9a-fA-F]+", "0x...", first)
    first = re.sub(r"\(\d{9,}\)", "(...)", first)
    record = {"error_type": f"{type(e).__module__}.{type(e).__qualname__}", "error": first[:500]}
    # torch.onnx wraps the real failure; name it too
    cause = e.__cause__
    if cause is not None:
        record["cause"] = error_record(cause)
    return record


@dataclass
class Fixture:
    """A written fixture and what the index says about it."""

    dir: str
    arch: Arch
    model_class: str
    exporter: str
    variant: str
    opset: int | None
    stats: dict[str, int]
    extra: dict[str, Any] = field(default_factory=dict)

    def index_entry(self) -> dict[str, Any]:
        entry = {
            "dir": self.dir,
            "name": self.arch.name,
            "architecture": self.arch.model_type,
            "model_class": self.model_class,
            "task": self.arch.task,
            "exporter": self.exporter,
            "variant": self.variant,
            "opset": self.opset,
            "held_out": self.arch.held_out,
            "nodes": self.stats,
        }
        entry.update(self.extra)
        return entry


@dataclass
class Corpus:
    """Accumulates fixtures and failures while building."""

    root: Path
    fixtures: list[Fixture] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    log: Callable[[str], None] = print

    def write_fixture(
        self,
        name: str,
        onnx_model: onnx.ModelProto,
        manifest: dict[str, Any],
        truth: Truth,
        fixture: Fixture,
    ) -> None:
        d = self.root / name
        d.mkdir(parents=True, exist_ok=True)
        onnx.save(onnx_model, str(d / "model.onnx"))
        write_json(d / "manifest.json", manifest)
        write_json(d / "truth.json", truth)
        self.fixtures.append(fixture)
        self.log(f"{name} ready ({fixture.stats['total']} nodes, {fixture.stats['unknown']} unknown)")

    def fail(self, arch: Arch, exporter: str, variant: str, errors: list[dict[str, Any]]) -> None:
        self.failures.append(
            {"name": arch.name, "architecture": arch.model_type, "exporter": exporter, "variant": variant,
             "held_out": arch.held_out, "attempts": errors}
        )
        last = errors[-1] if errors else {}
        self.log(f"{arch.name}.{exporter}.{variant} FAILED: {last.get('error_type')}: {last.get('error')}")


@contextlib.contextmanager
def quiet() -> Any:
    """Silence exporter chatter (warnings, progress prints, loggers)."""
    sink = io.StringIO()
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)


def build_for(arch: Arch, options: dict[str, Any]) -> torch.nn.Module:
    config = {**arch.config, **options.get("config", {})}
    return build_model(
        model_type=arch.model_type,
        task=arch.task,
        config=config,
        attn_implementation=options.get("attn_implementation"),
        trained_like=not arch.extra.get("fresh_init", False),
    )


def export_plain(corpus: Corpus, arch: Arch, exporter: str, work: Path) -> tuple[Any, onnx.ModelProto, Truth] | None:
    """Export one architecture with one exporter; returns (model, onnx model, truth) or None."""
    errors: list[dict[str, Any]] = []
    opset = TORCHSCRIPT_DEFAULT_OPSET if exporter == "torchscript" else DYNAMO_DEFAULT_OPSET
    path = work / f"{arch.name}.{exporter}.onnx"
    for options in ATTEMPTS:
        try:
            with quiet():
                model = build_for(arch, options)
                inputs = example_inputs(model)
                masks = traceable_masks() if options.get("masks") else contextlib.nullcontext()
                with masks:
                    export_onnx(
                        model, inputs, path, exporter=exporter, opset=opset,
                        dynamic=not options.get("static_shapes", False),
                    )
        except Exception as e:  # recorded in the index
            errors.append({"options": options, **error_record(e)})
            continue
        onnx_model = strip_local_paths(onnx.load(str(path)))
        opset = next((o.version for o in onnx_model.opset_import if o.domain in ("", "ai.onnx")), opset)
        truth = (torchscript_truth if exporter == "torchscript" else dynamo_truth)(onnx_model, model)
        name = f"{arch.name}.{exporter}"
        extra: dict[str, Any] = {"export_options": options, "inputs": {k: list(v.shape) for k, v in inputs.items()}}
        if errors:
            extra["failed_attempts"] = errors
        fixture = Fixture(name, arch, type(model).__name__, exporter, "plain", opset, truth_stats(truth), extra)
        corpus.write_fixture(name, onnx_model, build_manifest(model), truth, fixture)
        return model, onnx_model, truth
    corpus.fail(arch, exporter, "plain", errors)
    return None


def write_index(corpus: Corpus) -> None:
    library_versions = versions()
    fixtures = []
    for f in sorted(corpus.fixtures, key=lambda f: f.dir):
        entry = f.index_entry()
        entry["versions"] = library_versions
        fixtures.append(entry)
    index = {
        "format": "semmap.fixtures",
        "versions": library_versions,
        "held_out": sorted({a.model_type for a in ARCHS if a.held_out}),
        "fixtures": fixtures,
        "failed": corpus.failures,
        # combinations that failed with the default options and needed a fix
        "fallbacks": [
            {"dir": f.dir, "used_options": f.extra.get("export_options"), "failed_attempts": f.extra["failed_attempts"]}
            for f in sorted(corpus.fixtures, key=lambda f: f.dir)
            if f.extra.get("failed_attempts")
        ],
    }
    write_json(corpus.root / "index.json", index)


def build(root: Path, only: set[str] | None, log: Callable[[str], None]) -> Corpus:
    """Build the corpus (or the architectures in ``only``) into ``root``."""
    from semmap_manifest import optimum_fixtures, variants

    corpus = Corpus(root, log=log)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="semmap-corpus-work-") as work_dir:
        work = Path(work_dir)
        for arch in ARCHS:
            if only and arch.name not in only:
                continue
            for exporter in ("torchscript", "dynamo"):
                result = export_plain(corpus, arch, exporter, work)
                wanted = arch.variants if exporter == "torchscript" else arch.dynamo_variants
                for variant in wanted:
                    if result is None:
                        corpus.fail(arch, exporter, variant, [{"options": {}, "error_type": "skipped",
                                                               "error": f"no {exporter} export to derive from"}])
                    else:
                        variants.build_variant(corpus, arch, variant, result, work, exporter)
        optimum_fixtures.build_all(corpus, work, only)
    write_index(corpus)
    log(f"built in {time.monotonic() - start:.0f} s")
    return corpus


def _swap_in(new: Path, dest: Path) -> None:
    """Replace ``dest`` with ``new``, keeping files in ``dest`` that the builder does not generate (README.md)."""
    if dest.exists():
        for item in dest.iterdir():
            if item.is_file() and item.name not in GENERATED_NAMES and not (new / item.name).exists():
                shutil.copy2(item, new / item.name)
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
    write_json(old_index_path, merged)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m semmap_manifest.corpus", description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path, help="corpus directory (e.g. fixtures/)")
    parser.add_argument("--only", action="append", help="build only this architecture (repeatable); merges into dest")
    parser.add_argument("--status-file", type=Path, help="append one line per finished fixture to this file")
    args = parser.parse_args(argv)

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)
        if args.status_file:
            with open(args.status_file, "a", encoding="utf-8") as f:
                f.write(line + "\n")

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    dest: Path = args.dest.resolve()
    dest.parent.mkdir(parents=True, exist_ok=True)
    new = Path(tempfile.mkdtemp(prefix=f".{dest.name}.new-", dir=dest.parent))
    os.chmod(new, 0o755)
    try:
        corpus = build(new, set(args.only) if args.only else None, log)
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
