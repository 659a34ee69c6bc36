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
import fcntl
import itertools
import json
import os
import re
import shutil
import stat
import tempfile
import time
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


# Temporary files are named as semmap's C++ writers name theirs,
# ".<output name>.tmp-<pid>-<n>-<t>" (the name cut to fit NAME_MAX), and
# held under an flock while written: either writer removes the other's
# stale ones (docs/robustness.md, "Writes never lose data").
_NAME_MAX = 255
_SUFFIX_MAX = 67  # ".tmp-", three decimal fields and their dashes
_counter = itertools.count()


def _temp_prefix(name: str) -> str | None:
    """".<name>.tmp-" as the C++ writers make it, or None for a name a
    library taking str paths could not open (no encoding, or cut inside a
    character)."""
    try:
        raw = name.encode("utf-8")
        return "." + raw[: _NAME_MAX - _SUFFIX_MAX].decode("utf-8") + ".tmp-"
    except UnicodeError:
        return None


def _remove_stale_temps(directory: Path, prefix: str) -> None:
    """Removes the temporary files a killed writer of the same output left:
    exactly semmap's name pattern, a pid that no longer exists, a regular
    file of this user's that no writer holds locked. Best effort."""
    pattern = re.compile(re.escape(prefix) + r"([0-9]{1,10})-[0-9]{1,10}-[0-9]{1,6}")
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        match = pattern.fullmatch(name)
        if match is None:
            continue
        pid = int(match.group(1))
        if pid <= 0 or pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
            continue  # alive
        except ProcessLookupError:
            pass
        except OSError:
            continue  # alive, another user's
        path = directory / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid():
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                os.unlink(path)
        except OSError:
            pass
        finally:
            os.close(fd)


def _create_temp(directory: Path, prefix: str | None) -> tuple[Path, int]:
    """A new temporary file in ``directory`` and an open descriptor holding
    its lock, created 0666 less the umask as a plain write would be."""
    if prefix is None:
        fd, name = tempfile.mkstemp(prefix=".semmap-output.", suffix=".tmp", dir=directory)
        os.chmod(name, 0o666 & ~_umask())  # mkstemp creates 0600
        return Path(name), fd
    _remove_stale_temps(directory, prefix)
    for _ in range(16):
        name = f"{prefix}{os.getpid()}-{next(_counter)}-{time.monotonic_ns() % 1000000}"
        try:
            fd = os.open(directory / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            continue
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return directory / name, fd
    raise FileExistsError(errno.EEXIST, "cannot create a temporary file", str(directory))


@contextlib.contextmanager
def atomic_path(dest: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path; on success, move it onto ``dest`` (or copy it
    into ``dest`` when that is a FIFO or a character device).

    The temporary file lives in the destination's directory so that the
    final ``os.replace`` is a rename on one file system; for a stream, whose
    directory need not be writable (``/dev``), in the system's temporary
    directory. On any exception the temporary file is removed and ``dest``
    is left untouched; one a killed writer left is removed by the next
    write of the same output. A symlink's target is replaced, never the
    link (:func:`output_target` says what is refused).
    """
    target, stream = output_target(dest)
    if stream:
        fd, tmp_name = tempfile.mkstemp(prefix=".semmap-stream.", suffix=".tmp")
        tmp = Path(tmp_name)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp, fd = _create_temp(target.parent, _temp_prefix(target.name))
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
    finally:
        os.close(fd)  # the lock goes with it


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
