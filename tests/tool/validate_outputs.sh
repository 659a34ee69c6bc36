#!/usr/bin/env bash
# Runs validate_outputs.py with the project's Python environment, which
# has onnx and jsonschema. A missing environment is a failure, not a skip:
# scripts/setup-python must run before ctest.
#   validate_outputs.sh PYTHON SEMMAP_BINARY FIXTURES_DIR SCHEMA_FILE
set -euo pipefail
python="$1"
shift
if [ ! -x "$python" ]; then
  echo "validate_outputs: $python not found; run scripts/setup-python before ctest" >&2
  exit 1
fi
exec "$python" "$(dirname "$0")/validate_outputs.py" "$@"
