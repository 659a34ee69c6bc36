"""Atomic file writes: a failed run never leaves a partial file behind.

As semmap's C++ writers do (docs/robustness.md, "Writes never lose data"):
a symbolic link is followed and its target replaced, never the link; a
FIFO or a character device (``/dev/null``, a terminal) is written into,
never replaced; other special files, a directory and a link that leads
nowhere are refused before anything is written.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any, Iterator


def output_target(dest: str | os.PathLike[str]) -> tuple[Path, bool]:
    """The file a write to ``dest`` replaces, and whether it is a stream.

    A symlink gives its target; a FIFO or a character device is a stream,
    written into rather than replaced. ValueError for a link that leads
    nowhere (dangling, a loop) and for a special file of another kind
    (a socket, a block device), IsADirectoryError for a directory: each
    before anything runs or is written.
    """
    dest = Path(dest)
    try:
        st = os.stat(dest)  # follows links
    except FileNotFoundError:
        if not os.path.islink(dest):
            return dest, False
        raise ValueError(f"{dest}: a symbolic link that leads nowhere; "
                         "semmap writes through links and never replaces one") from None
    except OSError as e:
        if e.errno != errno.ELOOP:
            raise
        raise ValueError(f"{dest}: a symbolic link that leads nowhere (a loop of links); "
                         "semmap writes through links and never replaces one") from None
    if stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode):
        return dest, True
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file", str(dest))
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{dest}: not a regular file, FIFO or character device; "
                         "refusing to replace it")
    return (Path(os.path.realpath(dest)) if os.path.islink(dest) else dest), False


@contextlib.contextmanager
def atomic_path(dest: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path; on success, move it onto ``dest`` (or copy it
    into ``dest`` when that is a FIFO or a character device).

    The temporary file lives in the destination's directory so that the
    final ``os.replace`` is a rename on one file system; for a stream, whose
    directory need not be writable (``/dev``), in the system's temporary
    directory. On any exception the temporary file is removed and ``dest``
    is left untouched. A symlink's target is replaced, never the link
    (:func:`output_target` says what is refused).
    """
    target, stream = output_target(dest)
    if not stream:
        target.parent.mkdir(parents=True, exist_ok=True)
    try:
        target.name.encode("utf-8")
        prefix = f".{target.name}."
    except UnicodeEncodeError:
        # A name in no encoding (surrogate escapes): libraries that take str
        # paths, such as torch's TorchScript exporter, cannot open it; the
        # temporary file gets a plain name and the rename gives the real one.
        prefix = ".semmap-output."
    fd, tmp_name = tempfile.mkstemp(prefix=prefix, suffix=".tmp",
                                    dir=None if stream else target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the file normal permissions
    try:
        yield tmp
        if stream:
            _copy_into_stream(tmp, target)
            tmp.unlink()
        else:
            os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def _copy_into_stream(source: Path, stream: Path) -> None:
    """Writes ``source``'s bytes into the FIFO or device ``stream``, opened
    without creating or truncating anything; a file that is no longer a
    stream when opened (replaced meanwhile) is left as it is."""
    fd = os.open(stream, os.O_WRONLY | os.O_CLOEXEC)
    with open(fd, "wb") as out:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):
            raise ValueError(f"{stream}: no longer a FIFO or character device; not written")
        with open(source, "rb") as f:
            shutil.copyfileobj(f, out, 1 << 20)


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
