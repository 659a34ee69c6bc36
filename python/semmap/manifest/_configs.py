"""Make and read transformers configs, with errors that name the file and the cause.

``config_for_type`` builds a config from a model type and overrides;
``load_config`` reads a saved model's ``config.json`` (and nothing else from
its directory) or fetches a hub id's config.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from transformers import PretrainedConfig

CONFIG_NAME = "config.json"


class ModelBuildError(RuntimeError):
    """The model type, task or config could not be turned into a model."""


def transformers_major() -> int:
    """The major version of the installed transformers (4 or 5)."""
    import transformers

    return int(transformers.__version__.split(".", 1)[0])


def _read_config_file(directory: Path) -> dict[str, Any]:
    """Parse and check ``directory/config.json``; errors name the file and the cause."""
    file = directory / CONFIG_NAME
    if not file.is_file():
        raise ModelBuildError(f"{file}: not found (a directory written by save_pretrained holds its {CONFIG_NAME})")
    try:
        value = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise ModelBuildError(f"{file}: cannot read: {e}") from e
    except json.JSONDecodeError as e:
        raise ModelBuildError(f"{file}: not valid JSON: line {e.lineno} column {e.colno}: {e.msg}") from e
    if not isinstance(value, dict):
        raise ModelBuildError(f"{file}: expected a JSON object, found {type(value).__name__}")
    model_type = value.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise ModelBuildError(f'{file}: no "model_type" field (a transformers config names its model type)')
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    if model_type not in CONFIG_MAPPING:
        import transformers

        why = (
            "the directory brings its own modelling code (auto_map), which semmap-manifest does not run"
            if "auto_map" in value
            else "a newer transformers release may know it"
        )
        raise ModelBuildError(
            f"{file}: unknown model_type {model_type!r} (not in transformers {transformers.__version__}; {why})"
        )
    return value


def config_for_type(model_type: str, overrides: Mapping[str, Any] | None = None) -> "PretrainedConfig":
    """``AutoConfig.for_model(model_type, **overrides)`` with a clear error."""
    from transformers import AutoConfig

    try:
        return AutoConfig.for_model(model_type, **dict(overrides or {}))
    except ValueError as e:
        raise ModelBuildError(f"cannot make a config for model type {model_type!r}: {e}") from e


def load_config(model_id: str | os.PathLike[str], overrides: Mapping[str, Any] | None = None) -> "PretrainedConfig":
    """The config of a local directory (only its ``config.json`` is read) or of a hub id.

    Raises :class:`ModelBuildError` naming the file and the cause when
    ``config.json`` is missing, is not JSON, has no or an unknown ``model_type``,
    or does not make a config.
    """
    from transformers import AutoConfig

    path = Path(model_id)
    if path.is_dir():
        _read_config_file(path)
        where = str(path / CONFIG_NAME)
    elif path.exists():
        raise ModelBuildError(f"{path}: not a directory (give the directory that holds {CONFIG_NAME})")
    else:
        where = f"config of {model_id!s}"
    try:
        return AutoConfig.from_pretrained(str(model_id), **dict(overrides or {}))
    except (OSError, ValueError, KeyError) as e:
        raise ModelBuildError(f"{where}: {e}") from e
