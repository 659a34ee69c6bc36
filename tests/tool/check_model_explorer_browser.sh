#!/usr/bin/env bash
# Runs check_model_explorer_browser.py (an annotated export in the real Model
# Explorer web app, in headless Chromium) with the viewers' Python
# environment, which holds Model Explorer and its ONNX adapter. A missing
# environment or browser is a failure, not a skip: scripts/setup-python
# viewers and scripts/setup-browser must run before ctest.
#   check_model_explorer_browser.sh VIEWERS_PYTHON SEMMAP_BINARY FIXTURES_DIR SCREENSHOT.png
set -euo pipefail
python="$1"
shift
if [ ! -x "$python" ]; then
  echo "model_explorer_browser: $python not found; run scripts/setup-python viewers before ctest" >&2
  exit 1
fi
if ! "$python" -c "import model_explorer, model_explorer_onnx" 2>/dev/null; then
  echo "model_explorer_browser: $python cannot import model_explorer and model_explorer_onnx;" \
       "run scripts/setup-python viewers before ctest" >&2
  exit 1
fi
if ! command -v chromium >/dev/null 2>&1; then
  echo "model_explorer_browser: chromium not found; run scripts/setup-browser before ctest" >&2
  exit 1
fi
exec "$python" "$(dirname "$0")/check_model_explorer_browser.py" "$@"
