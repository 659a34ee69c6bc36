"""Checks `semmap node-data` with Model Explorer's own Python package.

For each case the file is rebuilt with model_explorer's node_data_builder
dataclasses (ModelNodeData, GraphNodeData, NodeDataResult, ThresholdItem,
GradientItem: an unknown or missing field fails) and must serialize back to
the same JSON; the ONNX adapter Model Explorer runs (model-explorer-onnx)
converts the model, and the graph id and every result key must be ones the
viewer matches (a node id, or an output tensor name of a node). Values are
checked against `semmap sidecar` (confidence) and against the profile's
kernel events (time). The profile is made with onnxruntime from the
project's .venv (this check runs in .venv-viewers, which has none).

    check_node_data.py SEMMAP_BINARY VENV_PYTHON FIXTURES_DIR
"""
import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import onnx
from model_explorer.node_data_builder import (GradientItem, GraphNodeData, ModelNodeData,
                                              NodeDataResult, ThresholdItem)
from model_explorer_onnx.main import ONNXAdapter

from semmap_testlib import run

HERE = Path(__file__).resolve().parent
OPTIONAL = {"hideInAggregatedStatsTable", "hideInChildrenStatsTable",
            "showExpandedSummaryOnGroupNode", "showLabelCountColumnsInChildrenStatsTable",
            "thresholds", "gradient"}


def rebuild(data):
    """The file as node_data_builder's dataclasses, serialized by them."""
    graphs = {}
    for graph_id, g in data.items():
        fields = dict(g)
        fields["results"] = {k: NodeDataResult(**v) for k, v in g["results"].items()}
        fields["thresholds"] = [ThresholdItem(**t) for t in g.get("thresholds", [])]
        fields["gradient"] = [GradientItem(**t) for t in g.get("gradient", [])]
        graphs[graph_id] = GraphNodeData(**fields)
    return json.loads(ModelNodeData(graphsData=graphs).to_json_string())


def viewer_keys(model_path):
    graph = ONNXAdapter().convert(str(model_path), {})["graphs"][0]
    keys = set()
    for node in graph.nodes:
        keys.add(node.id)
        for meta in node.outputsMetadata:
            for attr in meta.attrs:
                if attr.key == "__tensor_tag":
                    keys.add(attr.value)
    return graph.id, keys


def check(binary, model, manifest, out, extra, tag):
    args = ["node-data", str(model), "-o", str(out), "--json", *extra]
    if manifest:
        args += ["--manifest", str(manifest)]
    summary = json.loads(run(binary, *args))
    data = json.loads(out.read_text())
    rebuilt = rebuild(data)
    for graph_id, g in data.items():
        # The builder also writes its optional fields' defaults; ours must be equal.
        assert {k: rebuilt[graph_id][k] for k in g} == g, f"{tag}: differs from node_data_builder's"
        assert set(rebuilt[graph_id]) - set(g) <= OPTIONAL, f"{tag}: {set(rebuilt[graph_id]) - set(g)}"
    graph_id, keys = viewer_keys(model)
    assert list(data) == [graph_id] == [summary["graph_id"]], f"{tag}: graph id {list(data)} vs {graph_id}"
    results = data[graph_id]["results"]
    missing = [k for k in results if k not in keys]
    assert not missing, f"{tag}: keys Model Explorer does not match: {missing[:5]}"
    assert len(results) == summary["results"]
    return results


def main():
    binary, venv_python, fixtures = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for fixture in ["bert-seqcls.torchscript", "gpt2-causal-lm.dynamo"]:
            d = fixtures / fixture
            model, manifest = d / "model.onnx", d / "manifest.json"
            results = check(binary, model, manifest, tmp / f"{fixture}.conf.json", [], fixture)
            sidecar = json.loads(run(binary, "sidecar", str(model), "--manifest", str(manifest)))
            expected = {n["name"]: n["confidence"] for n in sidecar["nodes"] if n["subgraph"] == 0}
            assert results == {k: {"value": v} for k, v in expected.items()}, f"{fixture}: values"
            print(f"ok {fixture} confidence: {len(results)} nodes, keys match the ONNX adapter")

        # Unnamed and duplicated node names: keyed by an output name.
        d = fixtures / "bert-seqcls.torchscript"
        m = onnx.load(d / "model.onnx")
        for node in m.graph.node[:10]:
            node.name = ""
        m.graph.node[20].name = m.graph.node[21].name
        odd = tmp / "odd.onnx"
        onnx.save(m, odd)
        results = check(binary, odd, d / "manifest.json", tmp / "odd.json", ["--allow-manifest-mismatch"], "odd")
        assert len(results) == len(m.graph.node), f"odd: {len(results)} of {len(m.graph.node)} nodes"
        assert m.graph.node[0].output[0] in results and m.graph.node[21].output[0] in results
        print(f"ok unnamed and duplicate names: {len(results)} nodes keyed")

        # Kernel time from a real profile.
        profile = tmp / "profile.json"
        subprocess.run([venv_python, str(HERE.parents[1] / "scripts" / "ort-profile"), str(d / "model.onnx"),
                        str(profile)], check=True)
        want = defaultdict(int)
        for e in json.loads(profile.read_text()):
            if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
                want[e["name"][: -len("_kernel_time")]] += e["dur"]
        results = check(binary, d / "model.onnx", d / "manifest.json", tmp / "time.json",
                        ["--value", "time", "--ort-profile", str(profile)], "time")
        assert results == {k: {"value": v} for k, v in want.items()}, "time values"
        data = json.loads((tmp / "time.json").read_text())
        assert data["main_graph"]["gradient"][0]["stop"] == 0 and data["main_graph"]["gradient"][-1]["stop"] == 1
        print(f"ok kernel time: {len(results)} nodes")

        for args, needle in [(["--value", "time"], "needs --ort-profile"),
                             (["--value", "speed"], "--value is confidence or time"),
                             (["--ort-profile", str(profile)], "goes with --value time")]:
            done = subprocess.run([binary, "node-data", str(d / "model.onnx"), "-o", str(tmp / "x.json"), *args],
                                  capture_output=True, text=True)
            assert done.returncode == 2 and needle in done.stderr, (args, done.stderr)
        print("ok refusals")


if __name__ == "__main__":
    main()
