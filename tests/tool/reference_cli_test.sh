#!/usr/bin/env bash
# --reference ORIGINAL.onnx on every mapping command: the processed copy is
# mapped through its source export; another model as reference, or a missing
# file, is refused with exit 2 and one line naming both files and the cause.
#   reference_cli_test.sh SEMMAP_BINARY EXAMPLES_BIN_DIR FIXTURES_DIR
set -uo pipefail
tool="$1"
examples="$2"
src="$3/bert-seqcls.torchscript"
stripped="$3/bert-seqcls.torchscript.stripped"
other="$3/gpt2-causal-lm.torchscript"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0
passes=0
model=("$stripped/model.onnx" --manifest "$stripped/manifest.json")
good=(--reference "$src/model.onnx")
bad=(--reference "$other/model.onnx")
missing=(--reference "$tmp/absent.onnx")
refusal="is not the export this model came from: the model has 0 of the reference's 29 initializers"

# fail, expect and expect_stdout (on $bin).
QUIET_SUCCESS=1
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

# The query projection of the stripped copy is node n32 (node order kept).
query_node=$(grep -o '"n[0-9]*": "bert.encoder.layer.0.attention.self.query"' "$stripped/truth.json" |
  head -1 | cut -d'"' -f2)
[ -n "$query_node" ] || { echo "FAIL: no query node in the truth file"; exit 1; }

bin="$tool"
for sub in map query tree annotate sidecar report; do
  expect_stdout "--reference ORIGINAL.onnx" "$sub" --help
done
expect_stdout "reference: $src/model.onnx" map "${model[@]}" "${good[@]}"
expect_stdout '"strategy": "reference"' map "${model[@]}" "${good[@]}" --json --node "$query_node"
expect_stdout '"module": "bert.encoder.layer.0.attention.self.query"' map "${model[@]}" \
  "${good[@]}" --json --node "$query_node"
expect_stdout "$query_node" query "${model[@]}" "${good[@]}" \
  --module bert.encoder.layer.0.attention.self.query
expect_stdout "bert.encoder.layer.0.attention.self.query" tree "${model[@]}" "${good[@]}" --depth 8
expect_stdout "annotated" annotate "${model[@]}" "${good[@]}" -o "$tmp/annotated.onnx"
expect_stdout '"reference"' sidecar "${model[@]}" "${good[@]}"
expect_stdout "report of" report "${model[@]}" "${good[@]}" -o "$tmp/report.html"
# Without a manifest: the module paths come from the reference's scopes.
expect_stdout '"module": "bert.encoder.layer.0.attention.self.query"' map \
  "$stripped/model.onnx" "${good[@]}" --json --node "$query_node"

for sub in map query tree annotate sidecar report; do
  extra=()
  case "$sub" in
    query) extra=(--module bert) ;;
    annotate) extra=(-o "$tmp/never.onnx") ;;
    report) extra=(-o "$tmp/never.html") ;;
  esac
  expect 2 "$stripped/model.onnx: reference $other/model.onnx: reference graph $refusal" \
    "$sub" "${model[@]}" "${bad[@]}" "${extra[@]}"
  expect 2 "reference $tmp/absent.onnx: no such file" "$sub" "${model[@]}" "${missing[@]}" "${extra[@]}"
done
[ ! -e "$tmp/never.onnx" ] && [ ! -e "$tmp/never.html" ] && passes=$((passes + 1)) ||
  fail "a refused reference still wrote an output"
expect 2 "--reference needs a value" map "${model[@]}" --reference

# semmap-query and semmap-eval.
bin="$examples/semmap-query"
expect_stdout "--reference ORIGINAL.onnx" --help
expect_stdout "reference: $src/model.onnx" "${model[@]}" "${good[@]}"
expect 2 ": reference $other/model.onnx: reference graph $refusal" "${model[@]}" "${bad[@]}"
expect 2 "reference $tmp/absent.onnx: no such file" "${model[@]}" "${missing[@]}"
bin="$examples/semmap-eval"
truth=(--truth "$stripped/truth.json")
expect_stdout "accuracy:  100.00%" "${model[@]}" "${truth[@]}" "${good[@]}"
expect 2 ": reference $other/model.onnx: reference graph $refusal" "${model[@]}" "${truth[@]}" \
  "${bad[@]}"
expect 2 "reference $tmp/absent.onnx: no such file" "${model[@]}" "${truth[@]}" "${missing[@]}"

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
