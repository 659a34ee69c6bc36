"""Manifests built on the meta device equal those of the real models, byte for byte.

Every architecture of both corpus slices is built twice, once with weights
(``build_model``) and once on the meta device (``build_meta_model``), and the
two manifests are written and compared as files. The committed fixture
manifests of the slice of the running toolchain are compared too, forward
signatures included: the meta model's pass on meta example inputs, with the
export's mask functions, records what the export's pass recorded (the
generator block, which names the toolchain, aside). Saved directories are
compared with ``from_pretrained``, in the dtypes users save (float32,
bfloat16, float16), and read through a corrupt weight file to prove that only
``config.json`` is read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from conftest import FIXTURES
from semmap.manifest import write_manifest
from semmap.manifest._atomic import write_json
from semmap.manifest._build import build_manifest
from semmap.manifest._meta import MetaDeviceError, build_meta_model, pretrained_dtype
from semmap.manifest._models import ModelBuildError, build_model
from semmap_corpus import zoo
from semmap_corpus.corpus import SLICE_TORCH, export_context, model_inputs
from semmap_corpus.specs import SLICE_DIRS, SLICES, Arch


def _unique_archs() -> list[tuple[str, Arch]]:
    seen: set[str] = set()
    out = []
    for slice_name, archs in SLICES.items():
        # transformers models: the vision libraries' constructors have no
        # meta-device build here (their fixtures are checked by the corpus tests)
        for arch in (a for a in archs if a.source == "transformers"):
            key = json.dumps([arch.model_type, arch.task, arch.config], sort_keys=True)
            if key not in seen:
                seen.add(key)
                out.append((f"{slice_name}/{arch.name}", arch))
    return out


ARCHS = _unique_archs()


def _all_on_meta(model: torch.nn.Module) -> bool:
    tensors = [*model.parameters(), *model.buffers()]
    return bool(tensors) and all(t.device.type == "meta" for t in tensors)


def _manifest_bytes(model: torch.nn.Module, path: Path) -> bytes:
    write_manifest(model, path)
    return path.read_bytes()


@pytest.mark.parametrize("arch", [a for _, a in ARCHS], ids=[i for i, _ in ARCHS])
def test_meta_manifest_equals_real_model(arch: Arch, tmp_path: Path) -> None:
    real = build_model(model_type=arch.model_type, task=arch.task, config=arch.config)
    meta = build_meta_model(model_type=arch.model_type, task=arch.task, overrides=arch.config)
    assert _all_on_meta(meta)
    assert _manifest_bytes(meta, tmp_path / "meta.json") == _manifest_bytes(real, tmp_path / "real.json")
    # tied weights are one parameter under several names, as in the real model
    assert _parameter_names(meta) == _parameter_names(real)


def _parameter_names(model: torch.nn.Module) -> list[str]:
    """Names of the distinct parameters (named_parameters lists a tied one once)."""
    return [name for name, _ in model.named_parameters()]


def _running_slice() -> str | None:
    version = torch.__version__.split("+")[0]
    return next((s for s, prefix in SLICE_TORCH.items() if version.startswith(prefix)), None)


def _fixture_cases() -> list[tuple[str, Arch, dict[str, Any]]]:
    """(fixture dir, arch, export options) of the plain exports of every slice."""
    cases = []
    for slice_name, archs in SLICES.items():
        index = FIXTURES / SLICE_DIRS[slice_name] / "index.json"
        by_name = {a.name: a for a in archs}
        for entry in json.loads(index.read_text())["fixtures"]:
            if entry.get("variant") == "plain" and entry["name"] in by_name and "error" not in entry:
                cases.append((f"{SLICE_DIRS[slice_name]}/{entry['dir']}".lstrip("/"), by_name[entry["name"]],
                              {"slice": slice_name, **entry.get("export_options", {})}))
    return cases


FIXTURE_CASES = _fixture_cases()


def _meta_model(arch: Arch, options: dict[str, Any]) -> torch.nn.Module:
    config = {**arch.config, **options.get("config", {})}
    if arch.source == "transformers":
        return build_meta_model(model_type=arch.model_type, task=arch.task, overrides=config,
                                attn_implementation=options.get("attn_implementation"))
    try:
        with torch.device("meta"):  # a vision library's constructor, as a user builds it on the meta device
            model = zoo.build(arch.source, arch.model_type, config)
    except NotImplementedError:
        # a constructor computing with tensor values (torchvision's RegNet): built with weights and
        # moved, as a user holding such a model would; the pass still runs on meta tensors
        model = zoo.build(arch.source, arch.model_type, config).to("meta")
    return model.eval()


@pytest.mark.parametrize(("fixture", "arch", "options"), FIXTURE_CASES, ids=[c[0] for c in FIXTURE_CASES])
def test_meta_manifest_equals_fixture(fixture: str, arch: Arch, options: dict[str, Any], tmp_path: Path) -> None:
    """Written on the meta device, forward signatures included, the manifest is the export's."""
    if options["slice"] != _running_slice():
        pytest.skip(f"fixture of slice {options['slice']}, written by another toolchain")
    committed = FIXTURES / fixture / "manifest.json"
    meta = _meta_model(arch, options)
    assert _all_on_meta(meta)
    inputs = model_inputs(arch, meta)
    if not isinstance(inputs, dict):  # the vision libraries' image batch, made on the CPU
        inputs = tuple(t.to("meta") for t in inputs)
    # the same mask functions the export used: the pass computes nothing on meta tensors
    with export_context(options):
        manifest = build_manifest(meta, inputs=inputs)
    fixture_manifest = json.loads(committed.read_text())
    # the generator block names the writer's versions (semmap may have moved on)
    manifest["generator"] = fixture_manifest["generator"]
    write_json(tmp_path / "manifest.json", manifest)
    write_json(tmp_path / "fixture.json", fixture_manifest)
    assert manifest["schema_version"] == 2
    assert (tmp_path / "manifest.json").read_bytes() == (tmp_path / "fixture.json").read_bytes()


# (model type, task, config, dtype the model is saved in): tied lm_head (gpt2), rotary
# inv_freq buffers and bfloat16 (llama), a shared embedding module and float16 with
# modules kept in float32 on loading (t5)
SAVED = {
    "gpt2-float32": ("gpt2", "causal-lm", dict(n_embd=32, n_layer=2, n_head=2, n_positions=64, vocab_size=200),
                     torch.float32),
    "llama-bfloat16": ("llama", "causal-lm",
                       dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                            num_key_value_heads=2, vocab_size=200, max_position_embeddings=64),
                       torch.bfloat16),
    "t5-float16": ("t5", "seq2seq-lm", dict(d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, vocab_size=200),
                   torch.float16),
}


def save_model(directory: Path, model_type: str, task: str, config: dict[str, Any], dtype: torch.dtype) -> None:
    """A directory as save_pretrained writes it, with weights in ``dtype``."""
    model = build_model(model_type=model_type, task=task, config=config).to(dtype)
    model.config.dtype = dtype
    model.save_pretrained(directory)


@pytest.mark.parametrize("name", sorted(SAVED))
def test_saved_directory_reads_only_config(name: str, tmp_path: Path) -> None:
    model_type, task, config, dtype = SAVED[name]
    saved = tmp_path / "saved"
    save_model(saved, model_type, task, config, dtype)
    real = build_model(model_id=str(saved), task=task)
    loaded, loaded_names = _manifest_bytes(real, tmp_path / "loaded.json"), _parameter_names(real)
    weights = saved / "model.safetensors"
    assert weights.is_file()
    weights.write_bytes(b"not a safetensors file")  # any read of the weights now fails
    meta = build_meta_model(model_id=saved, task=task)
    assert _all_on_meta(meta)
    assert _manifest_bytes(meta, tmp_path / "meta.json") == loaded
    assert _parameter_names(meta) == loaded_names
    with pytest.raises(Exception):
        build_model(model_id=str(saved), task=task)


def test_pretrained_dtype_follows_transformers(tmp_path: Path) -> None:
    import transformers

    from semmap.manifest._configs import config_for_type

    config = config_for_type("llama", {"dtype": "bfloat16"})
    expected = torch.bfloat16 if int(transformers.__version__.split(".")[0]) >= 5 else torch.float32
    assert pretrained_dtype(config) == expected


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "config.json: not found"),
        ("{", "config.json: not valid JSON: line 1"),
        ("[1]", "config.json: expected a JSON object"),
        ('{"hidden_size": 8}', 'config.json: no "model_type" field'),
        ('{"model_type": "no-such-model"}', "config.json: unknown model_type 'no-such-model'"),
        ('{"model_type": "own-model", "auto_map": {}}', "brings its own modelling code"),
    ],
    ids=["missing", "not-json", "not-object", "no-model-type", "unknown-model-type", "remote-code"],
)
def test_config_errors_name_the_file(tmp_path: Path, content: str | None, message: str) -> None:
    if content is not None:
        (tmp_path / "config.json").write_text(content)
    with pytest.raises(ModelBuildError, match=message) as info:
        build_meta_model(model_id=tmp_path)
    assert str(tmp_path / "config.json") in str(info.value)


def test_a_file_is_not_a_model_directory(tmp_path: Path) -> None:
    file = tmp_path / "config.json"
    file.write_text('{"model_type": "bert"}')
    with pytest.raises(ModelBuildError, match="not a directory"):
        build_meta_model(model_id=file)


def test_exactly_one_source() -> None:
    with pytest.raises(ModelBuildError, match="exactly one"):
        build_meta_model()
    with pytest.raises(ModelBuildError, match="exactly one"):
        build_meta_model(model_type="bert", model_id="x")


def test_constructor_that_needs_values_names_the_way_out() -> None:
    from transformers import AutoConfig, AutoModel, PretrainedConfig, PreTrainedModel

    class ItemConfig(PretrainedConfig):
        model_type = "semmap-test-item"

    class ItemModel(PreTrainedModel):
        config_class = ItemConfig

        def __init__(self, config: ItemConfig) -> None:
            super().__init__(config)
            # a size computed from tensor values, as some constructors do
            self.proj = torch.nn.Linear(4, int(torch.linspace(2, 6, 3)[1].item()))
            self.post_init()

    AutoConfig.register("semmap-test-item", ItemConfig)
    AutoModel.register(ItemConfig, ItemModel)
    with pytest.raises(MetaDeviceError, match="--allocate-weights"):
        build_meta_model(config=ItemConfig())
    assert build_model(model_type="semmap-test-item").proj.out_features == 4
