#!/usr/bin/env bash
# The `semmap` tool's contract: subcommands, exit codes 0/1/2, one-line
# errors naming the file and the cause, inputs never touched on refusal.
#   semmap_cli_test.sh SEMMAP_BINARY FIXTURES_DIR
set -uo pipefail
bin="$1"
fx="$2/bert-seqcls.torchscript"
t5="$2/t5-seq2seq-lm.torchscript"
tmp="$(mktemp -d)"
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
failures=0
passes=0
model=("$fx/model.onnx" --manifest "$fx/manifest.json")

# fail, expect and expect_stdout.
QUIET_SUCCESS=1
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

# Help for the tool and every subcommand.
expect 0 "" --help
expect 0 "" --version
expect 0 "" -V
expect_stdout "--version" --help
expect_stdout "usage: semmap annotate" help annotate
expect 2 "unknown command \"frobnicate\"" help frobnicate
expect 1 "did you mean \"bert.encoder.layer.0.attention.self.query\"" query "${model[@]}" \
  --module bert.encoder.layer.0.attention.self.querry
expect 1 "did you mean \"bert.encoder.layer.0.attention.self.query\"" query "${model[@]}" \
  --module encoder.layer.0.attention.self.query
expect 2 "-o given twice" annotate "$fx/model.onnx" -o "$tmp/a.onnx" -o "$tmp/b.onnx"
for sub in map query tree annotate sidecar; do
  expect_stdout "usage: semmap $sub" "$sub" --help
done
expect 2 "missing command"
expect 2 "unknown command \"frobnicate\"" frobnicate

# map: the semmap-query behaviour.
expect_stdout "answered: 237 of 237" map "${model[@]}"
expect_stdout "confident: " map "${model[@]}"
expect_stdout "fit:      fits" map "${model[@]}"

# A manifest of another model is refused by every mapping command, in one
# line naming both files; --allow-manifest-mismatch maps anyway.
gpt2="$2/gpt2-causal-lm.torchscript/manifest.json"
for sub in map tree sidecar; do
  expect 2 "manifest $gpt2 is of another model" "$sub" "$fx/model.onnx" --manifest "$gpt2"
done
expect 2 "does not fit" annotate "$fx/model.onnx" --manifest "$gpt2" -o "$tmp/mismatch.onnx"
if [ -e "$tmp/mismatch.onnx" ]; then fail "annotate wrote a file for a mismatched manifest"; else passes=$((passes + 1)); fi
expect 2 "has 4 items in the manifest and the graph uses 2" \
  map "$fx/model.onnx" --manifest "$2/mismatch/bert-deeper/manifest.json"
expect 2 "contradict it" map "$fx/model.onnx" --manifest "$2/mismatch/bert-wider/manifest.json"
expect_stdout "DOES NOT FIT" map "$fx/model.onnx" --manifest "$gpt2" --allow-manifest-mismatch
expect_stdout "fit:      fits" map "$fx/model.onnx" --manifest "$2/mismatch/bert-base/manifest.json"
# A model's own manifest fits with notes where export changed its names
# (ResNet-18 calls relu twice; its BatchNorms are folded): each reason once on
# stderr in text mode, in manifest_fit in JSON, and no refusal.
r18="$2/torch-2.15/tv-resnet18.torchscript"
QUIET_SUCCESS=0 expect 0 "fits with notes: 8 scopes are later calls of a module called more than once" \
  map "$r18/model.onnx" --manifest "$r18/manifest.json"
QUIET_SUCCESS=0 expect 0 "folded into a neighbour by the exporter (e.g. \"layer1.0.bn2\")" \
  tree "$r18/model.onnx" --manifest "$r18/manifest.json"
expect_stdout "fit:      fits, with notes" map "$r18/model.onnx" --manifest "$r18/manifest.json"
expect_stdout '"reason": "reused_call"' map "$r18/model.onnx" --manifest "$r18/manifest.json" --json
QUIET_SUCCESS=1 expect 0 "" map "$r18/model.onnx" --manifest "$r18/manifest.json" --json
expect_stdout '"module": "bert.encoder.layer.0.attention.self.query"' map "${model[@]}" --json \
  --node /bert/encoder/layer.0/attention/self/query/MatMul
expect 1 "no node named" map "${model[@]}" --node /no/Such

# query: each selector, then the errors.
expect_stdout "/bert/encoder/layer.0/attention/self/query/MatMul" query "${model[@]}" \
  --module bert.encoder.layer.0.attention.self.query
expect_stdout "/bert/encoder/layer.1/attention/self/key/MatMul" query "${model[@]}" --layer 1
expect_stdout '"kind": "layer"' query "${model[@]}" --layer 0 --json
expect_stdout "encoder.block" query "$t5/model.onnx" --manifest "$t5/manifest.json" --containers
expect_stdout "query/MatMul" query "${model[@]}" --class Linear
expect_stdout "value/MatMul" query "${model[@]}" --pattern 'self\.(key|value)$'
expect_stdout "bert.embeddings.dropout" query "${model[@]}" --empty-modules
expect 0 "" query "${model[@]}" --below 0.5
# Layer counts per container add up to the union (T5: encoder + decoder).
union=$("$bin" query "$t5/model.onnx" --manifest "$t5/manifest.json" --layer 0 --count)
enc=$("$bin" query "$t5/model.onnx" --manifest "$t5/manifest.json" --layer 0 --container encoder.block --count)
dec=$("$bin" query "$t5/model.onnx" --manifest "$t5/manifest.json" --layer 0 --container decoder.block --count)
if [ "$union" -gt 0 ] && [ "$union" -eq $((enc + dec)) ] && [ "$enc" -gt 0 ] && [ "$dec" -gt 0 ]; then
  passes=$((passes + 1))
else
  fail "query --layer 0 on t5: union $union != encoder $enc + decoder $dec"
fi
expect 1 "$fx/manifest.json: no module \"bert.nope\"" query "${model[@]}" --module bert.nope
expect 1 "no module of class \"Nope\"" query "${model[@]}" --class Nope
expect 1 "no layer 9" query "${model[@]}" --layer 9
expect 2 "empty module path pattern" query "${model[@]}" --pattern ''
expect 2 "invalid pattern \"a(\": missing )" query "${model[@]}" --pattern 'a('
expect 2 "layer index -1 is negative" query "${model[@]}" --layer -1
expect 2 "give exactly one of" query "${model[@]}"
expect 2 "give exactly one of" query "${model[@]}" --layer 1 --class Linear
expect 2 "--below needs a number" query "${model[@]}" --below high
expect 2 "$tmp/missing.onnx: no such file" query "$tmp/missing.onnx" --layer 0

# tree
expect_stdout "bert.encoder.layer.0 (BertLayer)" tree "${model[@]}"
expect_stdout "attention.self.query (Linear)" tree "${model[@]}"
"$bin" tree "${model[@]}" --model-specific >"$tmp/specific"
if grep -q "(Linear)" "$tmp/specific"; then fail "tree --model-specific shows Linear"; else passes=$((passes + 1)); fi
expect_stdout '"view": "model_specific"' tree "${model[@]}" --model-specific --json
expect 2 "--depth needs an integer" tree "${model[@]}" --depth x

# annotate
cp "$fx/model.onnx" "$tmp/model.onnx"
before=$(sha256sum <"$tmp/model.onnx")
# The fixture's node count, from the tool itself (fixtures are regenerated).
nodes=$("$bin" map "$fx/model.onnx" --manifest "$fx/manifest.json" --json | sed -n 's/^  "nodes": \([0-9]*\),*$/\1/p')
[ -n "$nodes" ] || { echo "FAIL: cannot read the node count of $fx"; exit 1; }
expect_stdout "annotated $nodes nodes" annotate "$tmp/model.onnx" --manifest "$fx/manifest.json" -o "$tmp/out.onnx"
expect_stdout "\"namespaces_written\": $nodes" annotate "$tmp/model.onnx" --manifest "$fx/manifest.json" -o "$tmp/out2.onnx" --json
if cmp -s "$tmp/out.onnx" "$tmp/out2.onnx"; then passes=$((passes + 1)); else fail "annotate is not deterministic"; fi
expect 2 "refusing to overwrite" annotate "$tmp/model.onnx" --manifest "$fx/manifest.json" -o "$tmp/model.onnx"
expect 2 "refusing to overwrite" annotate "$tmp/model.onnx" --manifest "$fx/manifest.json" -o "$tmp/./model.onnx"
expect 2 "$tmp/nodir/out.onnx: output directory $tmp/nodir does not exist" \
  annotate "$tmp/model.onnx" --manifest "$fx/manifest.json" -o "$tmp/nodir/out.onnx"
expect 2 "missing -o" annotate "$tmp/model.onnx" --manifest "$fx/manifest.json"
if [ "$(id -u)" -ne 0 ]; then
  mkdir "$tmp/ro" && chmod 555 "$tmp/ro"
  expect 2 "$tmp/ro/out.onnx: output directory $tmp/ro is not writable" \
    annotate "$tmp/model.onnx" --manifest "$fx/manifest.json" -o "$tmp/ro/out.onnx"
else
  echo "note: running as root; read-only directory case not checked"
fi
if [ "$(sha256sum <"$tmp/model.onnx")" = "$before" ]; then passes=$((passes + 1)); else fail "annotate touched its input"; fi
expect_stdout "annotated $nodes nodes" annotate "$tmp/model.onnx" --manifest "$fx/manifest.json" -o "$tmp/model.onnx" --allow-overwrite
if cmp -s "$tmp/model.onnx" "$tmp/out.onnx"; then passes=$((passes + 1)); else fail "in-place annotate differs from a copy"; fi
# annotate --scoped-names: a dynamo export's names gain scopes the mapper reads.
dyn="$2/bert-seqcls.dynamo"
expect_stdout "nodes renamed to scoped names" \
  annotate "$dyn/model.onnx" --manifest "$dyn/manifest.json" -o "$tmp/scoped.onnx" --scoped-names
expect_stdout '"scoped_names_kept": 0' annotate "$dyn/model.onnx" --manifest "$dyn/manifest.json" \
  -o "$tmp/scoped1.onnx" --scoped-names --min-confidence 1 --json
expect_stdout "/bert/encoder/layer.0/attention/self/query/node_linear" sidecar "$tmp/scoped.onnx" --compact
"$bin" map "$tmp/scoped.onnx" --manifest "$dyn/manifest.json" --json >"$tmp/scoped.map"
if grep -q '"exact_scope": 0,' "$tmp/scoped.map"; then fail "scoped names do not map as scopes"; else passes=$((passes + 1)); fi
expect 2 "--min-confidence needs --scoped-names" \
  annotate "$dyn/model.onnx" --manifest "$dyn/manifest.json" -o "$tmp/x.onnx" --min-confidence 0.5
expect 2 "--min-confidence needs a number from 0.9 to 1" annotate "$dyn/model.onnx" \
  --manifest "$dyn/manifest.json" -o "$tmp/x.onnx" --scoped-names --min-confidence 1.5
expect 2 "--min-confidence needs a number from 0.9 to 1" annotate "$dyn/model.onnx" \
  --manifest "$dyn/manifest.json" -o "$tmp/x.onnx" --scoped-names --min-confidence nan

# sidecar
expect_stdout '"format": "semmap.sidecar"' sidecar "${model[@]}"
expect_stdout "sidecar with $nodes nodes" sidecar "${model[@]}" -o "$tmp/side.json"
expect 2 "refusing to overwrite" sidecar "$tmp/out.onnx" --manifest "$fx/manifest.json" -o "$tmp/out.onnx"
expect 2 "output directory $tmp/nodir does not exist" sidecar "${model[@]}" -o "$tmp/nodir/s.json"

# A damaged record: one verdict on the export itself as on its copies
# (exit 2, the whole record read), and --no-record on every command that
# reads one, so that embed can replace it and semmap-eval measure the file.
# The damage: a zlib stream cut after the three entries the record writes
# first (a reader of the export used to stop there and accept it).
eval_bin="$(dirname "$bin")/semmap-eval"
"$bin" embed "${model[@]}" -o "$tmp/embedded.onnx" --json >"$tmp/embed.json" 2>/dev/null
PYTHONPATH="$(dirname "${BASH_SOURCE[0]}")" python3 - "$fx/model.onnx" "$fx/manifest.json" "$tmp/embed.json" "$tmp/damaged.onnx" <<'PY'
import base64, json, sys, zlib
from semmap_testlib import field
model, manifest, embed, out = sys.argv[1:]
info = json.load(open(embed))
n = info["nodes"]
def entry(key, value):
    return field(14, field(1, key.encode()) + field(2, value.encode()))
source = {"fingerprint": info["fingerprint"], "nodes": n, "generator": "semmap 2.0.0",
          "naming": "scopes", "scopes": 0}
answers = {"strategies": ["unmapped"], "module": [-1] * n, "confidence": [0] * n,
           "strategy": [0] * n, "origins": []}
stream = zlib.compress(entry("semmap.source", json.dumps(source)) +
                       entry("semmap.manifest", open(manifest).read()) +
                       entry("semmap.answers", json.dumps(answers)) + field(7, b"\x0a" * 4096))
stream = stream[: len(stream) - 8]
value = "semmap-record/1:%d:%s" % (len(stream), base64.b64encode(stream).decode())
with open(out, "wb") as f:
    f.write(open(model, "rb").read() + entry("semmap.record", value))
PY
expect 2 "metadata_props \"semmap.record\": the zlib stream is truncated" map "$tmp/damaged.onnx"
expect 0 "" map "$tmp/damaged.onnx" --manifest "$fx/manifest.json" --no-record
bin_saved="$bin"
bin="$eval_bin"
expect 2 "truncated" "$tmp/damaged.onnx" --truth "$fx/truth.json"
expect 0 "" "$tmp/damaged.onnx" --truth "$fx/truth.json" --manifest "$fx/manifest.json" --no-record
bin="$bin_saved"
expect 2 "truncated" embed "$tmp/damaged.onnx" --manifest "$fx/manifest.json" -o "$tmp/repaired.onnx"
expect_stdout "; replaced the record it carried" embed "$tmp/damaged.onnx" \
  --manifest "$fx/manifest.json" --no-record -o "$tmp/repaired.onnx"
expect_stdout "record:   source" map "$tmp/repaired.onnx"
# The header as documented: no sign or leading zero, base64 padded.
PYTHONPATH="$(dirname "${BASH_SOURCE[0]}")" python3 - "$fx/model.onnx" "$tmp/signed.onnx" <<'PY'
import sys
from semmap_testlib import field
model, out = sys.argv[1:]
value = b"semmap-record/+1:3:AAAA"
with open(out, "wb") as f:
    f.write(open(model, "rb").read() + field(14, field(1, b"semmap.record") + field(2, value)))
PY
expect 2 "format version" map "$tmp/signed.onnx"

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
