"""``python -m semmap_corpus refresh-manifests --slice NAME``: the corpus manifests with forward signatures.

For every fixture the slice's ``index.json`` lists, rebuild the model its
manifest came from exactly as the builder did (the architecture's spec,
seed 0, the export options of the export; a derived fixture shares the
manifest of the export it derives from, an Optimum fixture that of the model
Optimum exported), record the forward signatures of a pass on the example
inputs with the same patches (:func:`semmap_corpus.corpus.plain_manifest`),
and rewrite ``manifest.json``. One model is rebuilt per architecture,
exporter and options.

A rebuilt manifest that differs from the committed one in anything but
``schema_version``, the modules' ``forward`` fields and the ``generator``
block is refused: nothing is written for that fixture, and the command exits
with status 1 after the others. ONNX files, truths and indexes are not
touched, nor directories the index does not list (``mismatch/``,
``negative/``: manifests of other models, built on the meta device).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

from semmap.manifest._atomic import write_json
from semmap_corpus import optimum_fixtures
from semmap_corpus.corpus import SLICE_TORCH, plain_manifest
from semmap_corpus.specs import SLICE_DIRS, SLICES, Arch, slice_archs
from semmap_corpus.store import quiet

REPO = Path(__file__).resolve().parents[3]
# What a refresh may change in a committed manifest.
REFRESHED_FIELDS = ("schema_version", "generator")
REFRESHED_MODULE_FIELDS = ("forward",)
NOT_RECORDED = "semmap.manifest: forward signatures not recorded"

# How a fixture's manifest is rebuilt: ("plain", arch name, exporter, options as JSON)
# or ("optimum", arch name, optimum task).
Key = tuple[str, ...]


@dataclass
class Outcome:
    """What a refresh did, fixture directory by fixture directory."""

    refreshed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (dir, why)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (dir, why)

    def summary(self) -> dict[str, Any]:
        return {
            "refreshed": len(self.refreshed),
            "unchanged": len(self.unchanged),
            "skipped": [{"dir": d, "reason": r} for d, r in self.skipped],
            "refused": [{"dir": d, "reason": r} for d, r in self.refused],
        }


def source_key(entry: dict[str, Any], by_dir: dict[str, dict[str, Any]]) -> Key | str:
    """How the manifest of the fixture ``entry`` is rebuilt, or why it cannot be."""
    if entry["exporter"] == "optimum":
        return ("optimum", entry["name"], entry["optimum_task"])
    if entry["variant"] == "plain":
        options = entry.get("export_options", {})
        return ("plain", entry["name"], entry["exporter"], json.dumps(options, sort_keys=True))
    # derived: the variants of an export carry its manifest; "functions" re-exports its model
    source = f"{entry['name']}.torchscript" if entry["variant"] == "functions" else entry.get("source")
    if source not in by_dir:
        return f"derived from {source!r}, which the index does not list"
    return source_key(by_dir[source], by_dir)


def rebuild(key: Key, archs: dict[str, Arch]) -> dict[str, Any]:
    """The manifest, with forward signatures, of the model ``key`` names."""
    if key[0] == "optimum":
        _, name, task = key
        with quiet(), tempfile.TemporaryDirectory(prefix="semmap-refresh-") as saved:
            model = optimum_fixtures.optimum_model(name, task, Path(saved))
        return optimum_fixtures.optimum_manifest(model)
    _, name, _, options = key
    return plain_manifest(archs[name], json.loads(options))[2]


def structure(manifest: dict[str, Any]) -> dict[str, Any]:
    """``manifest`` without what a refresh may change."""
    out = {k: v for k, v in manifest.items() if k not in REFRESHED_FIELDS}
    if isinstance(out.get("modules"), list):
        out["modules"] = [
            {k: v for k, v in m.items() if k not in REFRESHED_MODULE_FIELDS} if isinstance(m, dict) else m
            for m in out["modules"]
        ]
    return out


def first_difference(a: Any, b: Any, pointer: str = "") -> str | None:
    """The JSON pointer of the first place ``a`` and ``b`` differ, or None when they are equal."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in [*a, *(k for k in b if k not in a)]:
            if key not in a or key not in b:
                return f"{pointer}/{key} ({'added' if key not in a else 'missing'} in the rebuilt manifest)"
            found = first_difference(a[key], b[key], f"{pointer}/{key}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{pointer}/{i}")
            if found:
                return found
        return None if len(a) == len(b) else f"{pointer} ({len(a)} items committed, {len(b)} rebuilt)"
    if a != b or type(a) is not type(b):
        return f"{pointer} ({json.dumps(a)[:80]} committed, {json.dumps(b)[:80]} rebuilt)"
    return None


def refresh(
    slice_dir: Path,
    slice_name: str,
    log: Callable[[str], None] = print,
    only: set[str] | None = None,
    rebuild_manifest: Callable[[Key, dict[str, Arch]], dict[str, Any]] = rebuild,
) -> Outcome:
    """Refresh the manifests of the slice in ``slice_dir`` (see the module's docstring)."""
    index = json.loads((slice_dir / "index.json").read_text())
    if index.get("toolchain") != slice_name:
        raise ValueError(f"{slice_dir / 'index.json'}: toolchain {index.get('toolchain')!r}, not {slice_name!r}")
    archs = {a.name: a for a in slice_archs(slice_name)}
    by_dir = {f["dir"]: f for f in index["fixtures"]}
    outcome = Outcome()
    groups: dict[Key, list[str]] = {}
    for entry in sorted(index["fixtures"], key=lambda f: f["dir"]):
        if only and entry["name"] not in only:
            continue
        key = source_key(entry, by_dir)
        if isinstance(key, str):
            outcome.skipped.append((entry["dir"], key))
        elif key[1] not in archs:
            outcome.skipped.append((entry["dir"], f"{key[1]} is not an architecture of slice {slice_name}"))
        else:
            groups.setdefault(key, []).append(entry["dir"])
    for key, dirs in groups.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                manifest = rebuild_manifest(key, archs)
            except Exception as e:  # one model that no longer builds does not stop the others
                why = f"the model does not build: {type(e).__name__}: {next(iter(str(e).splitlines()), '')}"
                for d in dirs:
                    outcome.skipped.append((d, why))
                log(f"{'/'.join(key[1:3])}: {why}")
                continue
        if manifest.get("schema_version") != 2:
            why = next((str(w.message) for w in caught if str(w.message).startswith(NOT_RECORDED)),
                       "no module recorded a forward signature")
            for d in dirs:
                outcome.skipped.append((d, why))
            log(f"{'/'.join(key[1:3])}: {why}")
            continue
        text = json.dumps(manifest, indent=1, ensure_ascii=False) + "\n"
        for d in dirs:
            path = slice_dir / d / "manifest.json"
            committed = json.loads(path.read_text())
            difference = first_difference(structure(committed), structure(manifest))
            if difference:
                outcome.refused.append((d, f"the rebuilt manifest differs at {difference}"))
                log(f"{d}: REFUSED: the rebuilt manifest differs at {difference}")
                continue
            if path.read_text() == text:
                outcome.unchanged.append(d)
                continue
            write_json(path, manifest)
            outcome.refreshed.append(d)
            log(f"{d}: refreshed")
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m semmap_corpus refresh-manifests",
                                     description="Rewrite the corpus manifests with forward signatures.")
    parser.add_argument("--slice", required=True, choices=sorted(SLICES), help="which slice (toolchain)")
    parser.add_argument("--fixtures", type=Path, default=REPO / "fixtures",
                        help="the corpus root (default: the repository's fixtures/)")
    parser.add_argument("--only", action="append", help="only the fixtures of this architecture (repeatable)")
    args = parser.parse_args(argv)
    if not torch.__version__.startswith(SLICE_TORCH[args.slice]):
        parser.error(f"slice {args.slice} is built with torch {SLICE_TORCH[args.slice]}x, "
                     f"this is torch {torch.__version__}")
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    slice_dir = (args.fixtures / SLICE_DIRS[args.slice]).resolve()
    outcome = refresh(slice_dir, args.slice, log=lambda line: print(line, file=sys.stderr, flush=True),
                      only=set(args.only) if args.only else None)
    print(json.dumps(outcome.summary(), indent=1))
    return 1 if outcome.refused else 0
