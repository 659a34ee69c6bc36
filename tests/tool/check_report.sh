#!/usr/bin/env bash
# Runs check_report.py (semmap report in real headless Chromium) with the
# project's Python environment. A missing environment or browser is a
# failure, not a skip: scripts/setup-python and scripts/setup-browser must
# run before ctest.
#   check_report.sh PYTHON SEMMAP_BINARY FIXTURES_DIR SCREENSHOT.png
set -euo pipefail
python="$1"
shift
if [ ! -x "$python" ]; then
  echo "check_report: $python not found; run scripts/setup-python before ctest" >&2
  exit 1
fi
if ! command -v chromium >/dev/null 2>&1; then
  echo "check_report: chromium not found; run scripts/setup-browser before ctest" >&2
  exit 1
fi
exec "$python" "$(dirname "$0")/check_report.py" "$@"
