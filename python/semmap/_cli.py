"""The console scripts: `semmap` and `semmap-eval` run the C++ tools shipped
inside the package, except `semmap compare-numerics`, which runs ONNX Runtime
and is semmap.numerics's (the library and the C++ tool never link a runtime);
`semmap-manifest` is semmap.manifest's command, which needs PyTorch."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def tool_path(name: str = "semmap") -> Path:
    """The executable NAME (`semmap`, `semmap-eval`) installed with this package."""
    return Path(__file__).resolve().parent / "_bin" / name


def run_tool(name: str) -> None:
    tool = tool_path(name)
    if not os.access(tool, os.X_OK):
        sys.stderr.write(f"{name}: the {name} tool is missing from this installation ({tool})\n")
        raise SystemExit(2)
    argv = [str(tool), *sys.argv[1:]]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(argv[0], argv)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "compare-numerics":
        raise SystemExit(numerics_main(sys.argv[2:]))
    run_tool("semmap")


def numerics_main(argv: list[str]) -> int:
    """`semmap compare-numerics`: a clear message, not a traceback, without ONNX Runtime."""
    try:
        from semmap.numerics import main as run
    except ImportError as e:
        sys.stderr.write(f"semmap compare-numerics needs ONNX Runtime, onnx and numpy: "
                         f"pip install 'semmap[onnxruntime]' ({e})\n")
        return 2
    return run(argv)


def eval_main() -> None:
    """`semmap-eval`: semmap's answers against a ground-truth file."""
    run_tool("semmap-eval")


def manifest_main() -> None:
    """`semmap-manifest`: a clear message, not a traceback, when PyTorch is missing."""
    try:
        from semmap.manifest._cli import main as run
    except ImportError as e:
        sys.stderr.write(f"semmap-manifest: {e}\n")
        raise SystemExit(1) from None
    raise SystemExit(run())


if __name__ == "__main__":
    main()
