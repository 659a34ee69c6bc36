"""What the corpus builder records while it builds: written fixtures and failures.

Shared by the plain exports (:mod:`semmap_corpus.corpus`), the post-processed
variants (:mod:`semmap_corpus.variants`) and the Optimum exports
(:mod:`semmap_corpus.optimum_fixtures`), which the first one drives.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import onnx
import torch

from semmap.manifest._atomic import write_json
from semmap.manifest._models import build_model
from semmap_corpus.specs import DEFAULT_SLICE, Arch
from semmap_corpus.truth import Truth


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


# Fixtures larger than this keep the weights' names, types and shapes but not
# their payloads (Arch.extra "drop_payloads"): semmap reads no payload, and the
# variants were all made from the full export before it was written.
DROP_ABOVE_BYTES = 128 << 10
DROP_MIN_ELEMENTS = 1024


def drop_payloads(model: onnx.ModelProto) -> tuple[onnx.ModelProto, int]:
    """A copy of ``model`` without the payloads of initializers of at least
    DROP_MIN_ELEMENTS elements, when the model is larger than DROP_ABOVE_BYTES;
    returns the model and how many payloads were dropped."""
    if model.ByteSize() <= DROP_ABOVE_BYTES:
        return model, 0
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    dropped = 0
    for t in copy.graph.initializer:
        elements = 1
        for d in t.dims:
            elements *= d
        if elements < DROP_MIN_ELEMENTS:
            continue
        for data_field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
            t.ClearField(data_field)
        dropped += 1
    return copy, dropped


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

    def index_entry(self, toolchain: str = DEFAULT_SLICE) -> dict[str, Any]:
        entry = {
            "dir": self.dir,
            "name": self.arch.name,
            "architecture": self.arch.model_type,
            "model_class": self.model_class,
            "task": self.arch.task,
            "exporter": self.exporter,
            "variant": self.variant,
            "toolchain": toolchain,
            "opset": self.opset,
            "held_out": self.arch.held_out,
            "source_library": self.arch.source,
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
    toolchain: str = DEFAULT_SLICE
    # variants that do not apply to an architecture (e.g. no ORT optimizer model type)
    not_applicable: list[dict[str, Any]] = field(default_factory=list)

    def write_fixture(
        self,
        name: str,
        onnx_model: onnx.ModelProto,
        manifest: dict[str, Any],
        truth: Truth,
        fixture: Fixture,
        files: dict[str, Any] | None = None,
    ) -> None:
        d = self.root / name
        d.mkdir(parents=True, exist_ok=True)
        if fixture.arch.extra.get("drop_payloads"):
            onnx_model, dropped = drop_payloads(onnx_model)
            if dropped:
                fixture.extra["payloads_dropped"] = {"min_elements": DROP_MIN_ELEMENTS, "tensors": dropped}
        onnx.save(onnx_model, str(d / "model.onnx"))
        write_json(d / "manifest.json", manifest)
        write_json(d / "truth.json", truth)
        for file_name, data in (files or {}).items():
            write_json(d / file_name, data)
        self.fixtures.append(fixture)
        self.log(f"{name} ready ({fixture.stats['total']} nodes, {fixture.stats['unknown']} unknown)")

    def fail(self, arch: Arch, exporter: str, variant: str, errors: list[dict[str, Any]]) -> None:
        self.failures.append(
            {"name": arch.name, "architecture": arch.model_type, "exporter": exporter, "variant": variant,
             "held_out": arch.held_out, "attempts": errors}
        )
        last = errors[-1] if errors else {}
        self.log(f"{arch.name}.{exporter}.{variant} FAILED: {last.get('error_type')}: {last.get('error')}")

    def not_applicable_variant(self, arch: Arch, exporter: str, variant: str, reason: str) -> None:
        self.not_applicable.append(
            {"name": arch.name, "architecture": arch.model_type, "exporter": exporter, "variant": variant,
             "reason": reason}
        )
        self.log(f"{arch.name}.{exporter}.{variant} not applicable: {reason}")


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
    if arch.source != "transformers":
        from semmap_corpus import zoo

        return zoo.build(arch.source, arch.model_type, config, trained_like=not arch.extra.get("fresh_init", False))
    return build_model(
        model_type=arch.model_type,
        task=arch.task,
        config=config,
        attn_implementation=options.get("attn_implementation"),
        trained_like=not arch.extra.get("fresh_init", False),
    )
