"""The tools end quietly when the reader of their output goes away, as git
does, and loudly when a write fails for any other reason
(tools/semmap/standard_output.h):

  - a pipe whose reader is gone: killed by SIGPIPE (-13 here, 141 in a
    shell) with nothing on stderr, whether SIGPIPE is delivered (the
    default) or ignored by the parent (Python's subprocess with
    restore_signals=False, `trap '' PIPE` in bash, many CI runners);
  - /dev/full: exit 2 and one line naming the cause.

    check_closed_pipe.py TOOL_DIR FIXTURES
"""

import os
import signal
import subprocess
import sys
from pathlib import Path


def main() -> int:
    tool_dir, fixtures = Path(sys.argv[1]), Path(sys.argv[2])
    bert = fixtures / "bert-seqcls.torchscript"
    model, manifest = str(bert / "model.onnx"), str(bert / "manifest.json")
    semmap = str(tool_dir / "semmap")
    commands = {
        "query": [semmap, "query", model, "--manifest", manifest, "--category", "attention"],
        "sidecar": [semmap, "sidecar", model, "--manifest", manifest],
        "map --json": [semmap, "map", model, "--manifest", manifest, "--json"],
        "tree": [semmap, "tree", model, "--manifest", manifest],
        "semmap-query": [str(tool_dir / "semmap-query"), model, "--manifest", manifest],
        "semmap-eval": [str(tool_dir / "semmap-eval"), model, "--manifest", manifest,
                        "--truth", str(bert / "truth.json")],
    }
    failures = []

    def check(name, ok, what):
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {what}")
        if not ok:
            failures.append(name)

    for name, argv in commands.items():
        for restore in (True, False):
            # The reader is gone before the first write: every write fails.
            r, w = os.pipe()
            os.close(r)
            done = subprocess.run(argv, stdout=w, stderr=subprocess.PIPE, text=True,
                                  restore_signals=restore, timeout=120)
            os.close(w)
            how = "SIGPIPE delivered" if restore else "SIGPIPE ignored"
            check(f"{name}, closed pipe, {how}",
                  done.returncode == -signal.SIGPIPE and done.stderr == "",
                  f"status {done.returncode}, stderr {done.stderr!r}")
        with open("/dev/full", "w") as full:
            done = subprocess.run(argv, stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
        check(f"{name} > /dev/full", done.returncode == 2
              and "cannot write the output to standard output: No space left on device" in done.stderr,
              f"status {done.returncode}, stderr {done.stderr!r}")

    # The pipelines in a shell that ignores SIGPIPE: the tool's status
    # is 141 (as git's), nothing is said, and head got its bytes. The sidecar
    # is far larger than a pipe's buffer, so the tool is still writing when
    # head leaves.
    sidecar = " ".join(f"'{a}'" for a in commands["sidecar"])
    shell = f"trap '' PIPE; {sidecar} | head -c 600 | wc -c; echo \"status ${{PIPESTATUS[0]}}\""
    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=120)
    check("trap '' PIPE; semmap sidecar | head -c 600",
          done.stdout.split() == ["600", "status", "141"] and done.stderr == "",
          f"stdout {done.stdout!r}, stderr {done.stderr!r}")
    # And a reader that stays: everything arrives, status 0.
    done = subprocess.run(["bash", "-c", f"trap '' PIPE; {sidecar} | wc -c; echo \"status ${{PIPESTATUS[0]}}\""],
                          capture_output=True, text=True, timeout=120)
    size = int(done.stdout.split()[0]) if done.stdout.split() else 0
    check("trap '' PIPE; semmap sidecar | wc -c", size > 100_000 and done.stdout.split()[1:] == ["status", "0"],
          f"stdout {done.stdout!r}, stderr {done.stderr!r}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
