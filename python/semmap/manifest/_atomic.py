"""Atomic file writes: a failed run never leaves a partial file behind."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterator


@contextlib.contextmanager
def atomic_path(dest: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path in ``dest``'s directory; move it onto ``dest`` on success.

    The temporary file lives in the destination directory so that the final
    ``os.replace`` is a rename on one file system. On any exception the
    temporary file is removed and ``dest`` is left untouched.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        dest.name.encode("utf-8")
        prefix = f".{dest.name}."
    except UnicodeEncodeError:
        # A name in no encoding (surrogate escapes): libraries that take str
        # paths, such as torch's TorchScript exporter, cannot open it; the
        # temporary file gets a plain name and the rename gives the real one.
        prefix = ".semmap-output."
    fd, tmp_name = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=dest.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the file normal permissions
    try:
        yield tmp
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_json(dest: str | os.PathLike[str], data: Any) -> None:
    """Write ``data`` as indented, key-order-preserving JSON, atomically."""
    with atomic_path(dest) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, ensure_ascii=False)
            f.write("\n")
