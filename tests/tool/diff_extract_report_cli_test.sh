#!/usr/bin/env bash
# `semmap diff`, `semmap extract` and `semmap report` from the outside: exit
# codes 0/1/2, one-line errors, and no output file left behind on refusal.
#   diff_extract_report_cli_test.sh SEMMAP_BINARY FIXTURES_DIR
set -uo pipefail
bin="$1"
fixtures="$2"
bert="$fixtures/bert-seqcls.torchscript"
bert_opt="$fixtures/bert-seqcls.torchscript.ort-optimized"
gpt2="$fixtures/gpt2-causal-lm.torchscript"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0
passes=0

# fail, expect and expect_stdout.
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

no_file() {
  if [ -e "$1" ]; then fail "$2: left $1 behind"; else passes=$((passes + 1)); fi
  if [ -n "$(find "$tmp" -name '*.tmp*' -o -name '.*semmap*' 2>/dev/null)" ]; then
    fail "$2: left a temporary file in $tmp"
  fi
}

for sub in diff extract report; do
  expect_stdout "usage: semmap $sub" "$sub" --help
done

# diff
expect_stdout "Attention Attention_1" diff "$bert/model.onnx" "$bert_opt/model.onnx" --manifest "$bert/manifest.json"
expect_stdout '"format": "semmap.diff"' diff "$bert/model.onnx" "$bert_opt/model.onnx" --manifest "$bert/manifest.json" --json
expect_stdout "nodes in both: 0" diff "$bert/model.onnx" "$fixtures/bert-seqcls.dynamo/model.onnx" \
  --manifest "$bert/manifest.json" --manifest-b "$fixtures/bert-seqcls.dynamo/manifest.json"
expect 2 "unrelated models: A is a BertForSequenceClassification, B is a GPT2LMHeadModel" \
  diff "$bert/model.onnx" "$gpt2/model.onnx" --manifest "$bert/manifest.json" --manifest-b "$gpt2/manifest.json"
expect 2 "is of another model" diff "$bert/model.onnx" "$gpt2/model.onnx" --manifest "$bert/manifest.json"
expect 2 "unrelated models: 0 of the" diff "$bert/model.onnx" "$gpt2/model.onnx" --manifest "$bert/manifest.json" \
  --allow-manifest-mismatch
expect 2 "expected A.onnx and B.onnx" diff "$bert/model.onnx" --manifest "$bert/manifest.json"
expect 2 "$tmp/missing.onnx" diff "$bert/model.onnx" "$tmp/missing.onnx" --manifest "$bert/manifest.json"

# extract
model=("$bert/model.onnx" --manifest "$bert/manifest.json")
expect_stdout "bert.encoder.layer.1, 79 nodes" extract "${model[@]}" --module bert.encoder.layer.1 -o "$tmp/l1.onnx"
[ -s "$tmp/l1.onnx" ] && passes=$((passes + 1)) || fail "extract wrote no file"
expect 1 "$bert/manifest.json: no module \"bert.nope\" in the manifest" \
  extract "${model[@]}" --module bert.nope -o "$tmp/nope.onnx"
no_file "$tmp/nope.onnx" "extract unknown module"
expect 2 "module \"bert.embeddings.dropout\" holds no node" \
  extract "${model[@]}" --module bert.embeddings.dropout -o "$tmp/empty.onnx"
no_file "$tmp/empty.onnx" "extract empty module"
expect 2 "missing --module" extract "${model[@]}" -o "$tmp/x.onnx"
expect 2 "missing -o" extract "${model[@]}" --module bert.encoder
expect 2 "output directory $tmp/nodir does not exist" \
  extract "${model[@]}" --module bert.encoder -o "$tmp/nodir/x.onnx"
cp "$bert/model.onnx" "$tmp/model.onnx"
expect 2 "refusing to overwrite" extract "$tmp/model.onnx" --manifest "$bert/manifest.json" \
  --module bert.encoder -o "$tmp/model.onnx"
cmp -s "$tmp/model.onnx" "$bert/model.onnx" && passes=$((passes + 1)) || fail "extract touched its input"

# report
expect_stdout "usage: semmap report" report --help
expect_stdout "report of" report "${model[@]}" -o "$tmp/report.html"
grep -q 'id="semmap-data"' "$tmp/report.html" && passes=$((passes + 1)) || fail "report lacks its data"
expect 2 "missing -o" report "${model[@]}"
expect 2 "refusing to overwrite" report "$tmp/model.onnx" --manifest "$bert/manifest.json" -o "$tmp/model.onnx"
expect 2 "output directory $tmp/nodir does not exist" report "${model[@]}" -o "$tmp/nodir/r.html"
no_file "$tmp/nodir" "report into a missing directory"

# report --numerics: a real semmap compare-numerics document (tests/data/README.md)
numerics="$(cd "$(dirname "${BASH_SOURCE[0]}")/../data" && pwd)/bert-seqcls.dynamo.quantized.numerics.json"
quantized=("$fixtures/torch-2.15/bert-seqcls.dynamo.quantized/model.onnx"
           --manifest "$fixtures/torch-2.15/bert-seqcls.dynamo.quantized/manifest.json")
expect_stdout "report of 51 modules, 181 nodes (181 mapped), error of 34 modules" \
  report "${quantized[@]}" --numerics "$numerics" -o "$tmp/numerics.html"
grep -q '"numerics":{"deployed":"fixtures/torch-2.15/bert-seqcls.dynamo.quantized/model.onnx"' \
  "$tmp/numerics.html" && passes=$((passes + 1)) || fail "report --numerics lacks the numerics data"
expect 2 "$tmp/missing.json: no such file" report "${quantized[@]}" --numerics "$tmp/missing.json" \
  -o "$tmp/n.html"
no_file "$tmp/n.html" "report with a missing numerics file"
head -c 300 "$numerics" >"$tmp/cut.json"
expect 2 "$tmp/cut.json: not valid JSON at byte" report "${quantized[@]}" --numerics "$tmp/cut.json" \
  -o "$tmp/n.html"
echo '{"format": "semmap.report", "schema_version": 2}' >"$tmp/other.json"
expect 2 "$tmp/other.json: /format: not a \"semmap.numerics\" document (format \"semmap.report\")" \
  report "${quantized[@]}" --numerics "$tmp/other.json" -o "$tmp/n.html"
sed 's/"version": 1,/"version": 7,/' "$numerics" >"$tmp/v7.json"
expect 2 "$tmp/v7.json: /version: version 7, this semmap reads semmap.numerics version 1" \
  report "${quantized[@]}" --numerics "$tmp/v7.json" -o "$tmp/n.html"
no_file "$tmp/n.html" "report with a bad numerics file"
cp "$numerics" "$tmp/numerics.json"
expect 2 "refusing to overwrite" report "${quantized[@]}" --numerics "$tmp/numerics.json" -o "$tmp/numerics.json"
cmp -s "$tmp/numerics.json" "$numerics" && passes=$((passes + 1)) || fail "report touched its numerics"

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
