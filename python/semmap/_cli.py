"""The `semmap` console script: runs the C++ tool shipped inside the package."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def tool_path() -> Path:
    """The `semmap` executable installed with this package."""
    return Path(__file__).resolve().parent / "_bin" / "semmap"


def main() -> None:
    tool = tool_path()
    if not os.access(tool, os.X_OK):
        sys.stderr.write(f"semmap: the semmap tool is missing from this installation ({tool})\n")
        raise SystemExit(2)
    argv = [str(tool), *sys.argv[1:]]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
