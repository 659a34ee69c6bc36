#!/usr/bin/env bash
# semmap-query's contract: output keys, exit codes 0/1/2, one-line errors
# that name the file and the cause.
#   cli_test.sh BIN_DIR FIXTURES_DIR
set -uo pipefail
bin="$1/semmap-query"
fx="$2/bert-seqcls.torchscript"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0
passes=0

# expect CODE STDERR_FRAGMENT (--|usage) ARGS...  ("usage": the usage text may follow)
# Errors about input (not usage) must be exactly one line on stderr.
expect() {
  local code="$1" fragment="$2" sep="$3"
  shift 3
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -ne "$code" ]; then
    echo "FAIL: semmap-query $*: exit $got, expected $code; stderr: $(cat "$tmp/err")"
    failures=$((failures + 1)); return
  fi
  if [ -n "$fragment" ] && ! grep -qF -- "$fragment" "$tmp/err"; then
    echo "FAIL: semmap-query $*: stderr lacks '$fragment': $(cat "$tmp/err")"
    failures=$((failures + 1)); return
  fi
  if [ "$sep" = "--" ] && [ "$code" -ne 0 ] && [ "$(wc -l <"$tmp/err")" -ne 1 ]; then
    echo "FAIL: semmap-query $*: error is not one line: $(cat "$tmp/err")"
    failures=$((failures + 1)); return
  fi
  passes=$((passes + 1))
}

# expect_json ARGS... -- python-free key check with grep
expect_keys() {
  local keys="$1"
  shift
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err" || { echo "FAIL: semmap-query $* exited $?"; failures=$((failures + 1)); return; }
  for k in $keys; do
    if ! grep -q "\"$k\"" "$tmp/out"; then
      echo "FAIL: semmap-query $*: JSON lacks key $k"; failures=$((failures + 1)); return
    fi
  done
  passes=$((passes + 1))
}

expect 0 "" -- "$fx/model.onnx" --manifest "$fx/manifest.json"
expect 0 "" -- "$fx/model.onnx"
expect 0 "" -- --help
expect_keys "node op_type module class qualified_class confidence strategy evidence" \
  "$fx/model.onnx" --manifest "$fx/manifest.json" --json \
  --node /bert/encoder/layer.0/attention/self/query/MatMul
expect_keys "nodes mapped strategies" "$fx/model.onnx" --manifest "$fx/manifest.json" --json
"$bin" "$fx/model.onnx" --manifest "$fx/manifest.json" --json \
  --node /bert/encoder/layer.0/attention/self/query/MatMul >"$tmp/q"
if grep -q '"module": "bert.encoder.layer.0.attention.self.query"' "$tmp/q" &&
   grep -q '"class": "Linear"' "$tmp/q" && grep -q '"strategy": "exact_scope"' "$tmp/q" &&
   grep -q '"confidence": 1.0' "$tmp/q"; then
  passes=$((passes + 1))
else
  echo "FAIL: query projection mapping: $(cat "$tmp/q")"; failures=$((failures + 1))
fi

expect 1 "no node named" -- "$fx/model.onnx" --manifest "$fx/manifest.json" --node /does/not/Exist
expect 2 "$tmp/missing.onnx: no such file" -- "$tmp/missing.onnx"
: >"$tmp/empty.onnx"
expect 2 "$tmp/empty.onnx: empty file" -- "$tmp/empty.onnx"
head -c 5000 /dev/urandom >"$tmp/random.onnx"
expect 2 "$tmp/random.onnx: " -- "$tmp/random.onnx"
head -c 3000 "$fx/model.onnx" >"$tmp/truncated.onnx"
expect 2 "$tmp/truncated.onnx: not a valid ONNX model" -- "$tmp/truncated.onnx"
echo '{"nodes": {}}' >"$tmp/not-manifest.json"
expect 2 "$tmp/not-manifest.json: /format: not a semmap manifest" -- "$fx/model.onnx" --manifest "$tmp/not-manifest.json"
sed 's/"schema_version": [0-9]*/"schema_version": 7/' "$fx/manifest.json" >"$tmp/v7.json"
expect 2 "$tmp/v7.json: manifest schema version 7 is not supported" -- "$fx/model.onnx" --manifest "$tmp/v7.json"
expect 2 "$tmp/none.json: no such file" -- "$fx/model.onnx" --manifest "$tmp/none.json"
expect 2 "unknown option --bogus" usage "$fx/model.onnx" --bogus
expect 2 "expected exactly one MODEL.onnx" usage
expect 2 "--depth needs an integer" usage "$fx/model.onnx" --depth -3

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
