"""The negative set: manifests of other models beside each architecture's exports.

``python -m semmap_corpus.negative fixtures/torch-2.15`` writes, for every
architecture of the slice, the manifest of the same architecture at another
depth, at another width, and of a task head around the same base model, into
``<slice>/negative/<arch>.<kind>/manifest.json``, and lists them with the
outcome expected when each is given to the architecture's exports in
``<slice>/negative/index.json``:

* ``depth``: one more layer or block per repeated stage -> misfit;
* ``width``: wider hidden sizes or channels -> misfit;
* ``task-head``: a transformers task model's base model (``AutoModel`` of the
  same config), or a vision model wrapped as ``backbone`` under a new
  ``head`` (:class:`semmap_corpus.zoo.TaskHead`) -> fits.

A kind the library cannot build for an architecture is listed under
``not_applicable`` with the reason. Pairs of each export with its own
manifest and with every other architecture's manifest need no file here:
``scripts/fit-check`` makes them from the slices' indexes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from semmap.manifest._atomic import write_json
from semmap.manifest._build import build_manifest
from semmap.manifest._meta import build_meta_model
from semmap_corpus import zoo
from semmap_corpus.specs import Arch, slice_archs
from semmap_corpus.store import quiet

EXPECT = {"depth": "misfit", "width": "misfit", "task-head": "fits"}

# Per architecture: config overrides giving another depth and another width,
# or the reason the library offers none. Depths are half as deep again per
# repeated stage (one more layer for two-layer stages), the step between
# sizes of a family; a deeper manifest is the hard direction, every scope of
# the graph still resolves in it. (One trailing layer more than a graph of
# four or more uses is not told apart from a dead last layer the exporter
# dropped: docs/mapping.md.)
VARIANTS: dict[str, dict[str, dict[str, Any] | str]] = {
    "bert-seqcls": {"depth": {"num_hidden_layers": 3}, "width": {"hidden_size": 32, "intermediate_size": 64}},
    "llama-causal-lm": {"depth": {"num_hidden_layers": 3}, "width": {"hidden_size": 32, "intermediate_size": 64}},
    "t5-seq2seq-lm": {"depth": {"num_layers": 3, "num_decoder_layers": 3}, "width": {"d_model": 32, "d_ff": 64}},
    "resnet-imgcls": {"depth": {"depths": [2, 1]}, "width": {"embedding_size": 16, "hidden_sizes": [16, 32]}},
    "vit-imgcls": {"depth": {"num_hidden_layers": 3}, "width": {"hidden_size": 32, "intermediate_size": 64}},
    "wav2vec2-ctc": {"depth": {"num_hidden_layers": 3}, "width": {"hidden_size": 32, "intermediate_size": 64}},
    "whisper-speech-seq2seq": {"depth": {"encoder_layers": 3, "decoder_layers": 3},
                               "width": {"d_model": 32, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64}},
    "clip": {"depth": {"text_config": {"num_hidden_layers": 3}, "vision_config": {"num_hidden_layers": 3}},
             "width": {"text_config": {"hidden_size": 32}, "vision_config": {"hidden_size": 32}}},
    "phi3-causal-lm": {"depth": {"num_hidden_layers": 3}, "width": {"hidden_size": 32, "intermediate_size": 64}},
    "swin-imgcls": {"depth": {"depths": [2, 1]}, "width": {"embed_dim": 16}},
    "albert-masked-lm": {
        "depth": "ALBERT shares one layer across depth: its manifest is the same at every num_hidden_layers",
        "width": {"hidden_size": 32, "intermediate_size": 64},
    },
    "tv-resnet18": {"depth": {"constructor": "resnet34"},
                    "width": "torchvision's BasicBlock ResNets have one width (width_per_group must be 64)"},
    "tv-mobilenet-v3": {"depth": "mobilenet_v3_small has no depth option", "width": {"width_mult": 0.5}},
    "tv-efficientnet": {"depth": {"depth_mult": 1.0}, "width": {"width_mult": 0.5}},
    "tv-convnext": {"depth": {"depths": [2, 2]}, "width": {"channels": [24, 48]}},
    "tv-regnet": {"depth": {"depth": 6}, "width": {"w_0": 16, "w_a": 16.0, "group_width": 16, "stem_width": 16}},
    "tv-vit": {"depth": {"num_layers": 3}, "width": {"hidden_dim": 32, "mlp_dim": 64}},
    "timm-resnet": {"depth": {"layers": (2, 1, 1, 1)}, "width": {"channels": (48, 64, 64, 128)}},
    "timm-efficientnet": {"depth": {"depth_multiplier": 2.0}, "width": {"channel_multiplier": 2.0}},
    "timm-convnext": {"depth": {"depths": [2, 2, 4, 2]}, "width": {"dims": [32, 48, 64, 96]}},
    "timm-vit": {"depth": {"depth": 9}, "width": {"embed_dim": 96}},
    "tv-densenet": {"depth": {"block_config": (3, 3)}, "width": {"growth_rate": 12}},
    "tv-googlenet": {"depth": "GoogLeNet has one depth", "width": "GoogLeNet has one width"},
    "tv-shufflenet": {"depth": {"stages_repeats": [3, 3, 3]},
                      "width": {"stages_out_channels": [8, 24, 48, 96, 128]}},
    "tv-swin-v2": {"depth": {"depths": [2, 1]}, "width": {"embed_dim": 16}},
    "tv-mobilenet-v2": {"depth": "mobilenet_v2 has no depth option", "width": {"width_mult": 0.5}},
    "tv-mnasnet": {"depth": "MNASNet's depths are fixed by its builder", "width": {"alpha": 0.5}},
    "tv-squeezenet": {"depth": "SqueezeNet has one depth", "width": "SqueezeNet has one width"},
    "timm-vit2": {"depth": {"depth": 12}, "width": {"embed_dim": 96}},
    "timm-efficientnet-gn": {"depth": {"depth_multiplier": 2.0}, "width": {"channel_multiplier": 2.0}},
    "timm-convnext2": {"depth": {"depths": [2, 2, 2, 2]}, "width": {"dims": [48, 96, 144, 192]}},
    "timm-byobnet": {"depth": "test_byobnet's blocks are fixed by its config table",
                     "width": "test_byobnet's widths are fixed by its config table"},
    "timm-nfnet": {"depth": "test_nfnet's depths are fixed by its config table",
                   "width": "test_nfnet's widths are fixed by its config table"},
    "timm-coatnet": {"depth": "test_coatnet's depths are fixed by its config table",
                     "width": "test_coatnet's widths are fixed by its config table"},
}


def _merge(config: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    out = dict(config)
    for key, value in overrides.items():
        out[key] = _merge(out.get(key, {}), value) if isinstance(value, dict) else value
    return out


def _transformers_model(arch: Arch, config: dict[str, Any], task: str) -> Any:
    return build_meta_model(model_type=arch.model_type, task=task, overrides=config)


def _vision_model(arch: Arch, overrides: dict[str, Any]) -> Any:
    overrides = dict(overrides)
    constructor = overrides.pop("constructor", arch.model_type)
    return zoo.build(arch.source, constructor, _merge(arch.config, overrides))


def manifest_for(arch: Arch, kind: str, overrides: dict[str, Any] | None) -> dict[str, Any] | str:
    """The manifest of ``kind`` for ``arch``, or the reason there is none."""
    if kind == "task-head":
        if arch.source != "transformers":
            model = zoo.build(arch.source, arch.model_type, arch.config)
            return build_manifest(zoo.TaskHead(model, outputs=int(arch.config.get("num_classes", 10))))
        if arch.task in ("auto", "feature-extraction"):
            return f"{arch.name} is built as its base model (task {arch.task!r}): no task head to remove"
        return build_manifest(_transformers_model(arch, arch.config, "feature-extraction"))
    assert overrides is not None
    if arch.source != "transformers":
        return build_manifest(_vision_model(arch, overrides))
    return build_manifest(_transformers_model(arch, _merge(arch.config, overrides), arch.task))


def build(dest: Path, slice_name: str, log: Any = print) -> dict[str, Any]:
    """Write ``dest/negative/`` for the slice whose directory is ``dest``."""
    out = dest / "negative"
    new = dest / ".negative.new"
    if new.exists():
        shutil.rmtree(new)
    new.mkdir(parents=True)
    manifests: list[dict[str, Any]] = []
    not_applicable: list[dict[str, Any]] = []
    for arch in slice_archs(slice_name):
        variants = VARIANTS.get(arch.name, {})
        for kind in ("depth", "width", "task-head"):
            spec = variants.get(kind, {}) if kind == "task-head" else variants.get(kind)
            if spec is None:
                raise KeyError(f"negative set: no {kind} entry for {arch.name}")
            try:
                with quiet():
                    manifest = spec if isinstance(spec, str) else manifest_for(arch, kind, spec)
            except Exception as e:  # recorded, never hidden
                manifest = f"could not be built: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
            entry = {"name": arch.name, "kind": kind, "held_out": arch.held_out, "source_library": arch.source}
            if isinstance(manifest, str):
                not_applicable.append({**entry, "reason": manifest})
                log(f"negative {arch.name}.{kind}: not applicable: {manifest}")
                continue
            d = new / f"{arch.name}.{kind}"
            d.mkdir()
            write_json(d / "manifest.json", manifest)
            manifests.append({**entry, "dir": f"negative/{arch.name}.{kind}", "expect": EXPECT[kind],
                              "overrides": spec if isinstance(spec, dict) else {}})
            log(f"negative {arch.name}.{kind} ready")
    index = {"format": "semmap.negative-set", "toolchain": slice_name, "manifests": manifests,
             "not_applicable": not_applicable}
    write_json(new / "index.json", index)
    if out.exists():
        shutil.rmtree(out)
    new.rename(out)
    return index


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m semmap_corpus.negative", description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path, help="the slice directory (fixtures/torch-2.15)")
    parser.add_argument("--slice", default="torch-2.15")
    args = parser.parse_args(argv)
    index = build(args.dest.resolve(), args.slice, log=lambda line: print(line, file=sys.stderr, flush=True))
    print(json.dumps({"manifests": len(index["manifests"]), "not_applicable": len(index["not_applicable"])}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
