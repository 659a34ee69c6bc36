"""Checks `semmap graphml`: the file reads back with networkx, holds one op
node per main-graph node and one edge per (producer, consumer, value) as
computed here from the ONNX file, nests every op inside the modules of its
mapping, and folds modules below --depth into single nodes that account
for every op they stand for.

    check_graphml.py SEMMAP_BINARY FIXTURES_DIR
"""
import json
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import networkx as nx
import onnx

from semmap_testlib import run

NS = "{http://graphml.graphdrawing.org/xmlns}"
# (fixture, has subgraph bodies)
CASES = [("bert-seqcls.torchscript", False), ("gpt2-causal-lm.dynamo", False),
         ("bart-seq2seq-lm.optimum.optimum-merged", True)]


def expected_edges(model):
    """(source name, target name, value) over the main graph, as the format defines them."""
    g = model.graph
    producer = {}
    for node in g.node:
        for o in node.output:
            if o:
                producer[o] = node.name
    inputs = {i.name for i in g.input}
    edges = set()

    def reads(node):
        names = set(i for i in node.input if i)
        for attr in node.attribute:
            bodies = ([attr.g] if attr.HasField("g") else []) + list(attr.graphs)
            for body in bodies:
                names |= outer_reads(body)
        return names

    def outer_reads(body):
        defined = {i.name for i in body.input} | {t.name for t in body.initializer}
        used = set()
        for node in body.node:
            used |= reads(node) - defined
            defined |= set(node.output)
        used |= {o.name for o in body.output} - defined
        return used

    for node in g.node:
        for value in reads(node):
            if value in producer and producer[value] != node.name:
                edges.add((producer[value], node.name, value))
            elif value in inputs:
                edges.add(("input:" + value, node.name, value))
    for o in g.output:
        if o.name in producer:
            edges.add((producer[o.name], "output:" + o.name, o.name))
        elif o.name in inputs:
            edges.add(("input:" + o.name, "output:" + o.name, o.name))
    return edges


def endpoint(G, node_id):
    data = G.nodes[node_id]
    if data["kind"] == "input":
        return "input:" + data["name"]
    if data["kind"] == "output":
        return "output:" + data["name"]
    return data["name"]


def check_nesting(path, tag):
    """Each op sits inside exactly the chain of module groups above its module."""
    root = ET.parse(path).getroot()
    keys = {k.get("id"): k.get("attr.name") for k in root.iter(NS + "key")}

    def data(element):
        return {keys[d.get("key")]: d.text for d in element.findall(NS + "data") if d.get("key") in keys}

    checked = 0

    def walk(graph_element, chain):
        nonlocal checked
        for node in graph_element.findall(NS + "node"):
            d = data(node)
            if d["kind"] == "module" and node.get("yfiles.foldertype") == "group":
                module = d["module"]
                assert not chain or module.startswith(chain[-1] + "."), f"{tag}: {module} under {chain}"
                walk(node.find(NS + "graph"), chain + [module])
            elif d["kind"] == "op":
                module = d.get("module")
                if chain:
                    assert module == chain[-1] or module.startswith(chain[-1] + "."), \
                        f"{tag}: op {d['name']} of {module} inside {chain[-1]}"
                    assert module == chain[-1], f"{tag}: op {d['name']} of {module} not in its own group"
                checked += 1

    walk(root.find(NS + "graph"), [])
    return checked


def main():
    binary, fixtures = sys.argv[1], Path(sys.argv[2])
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for fixture, has_bodies in CASES:
            d = fixtures / fixture
            model = onnx.load(d / "model.onnx", load_external_data=False)
            out = tmp / f"{fixture}.graphml"
            counts = json.loads(run(binary, "graphml", str(d / "model.onnx"), "--manifest",
                                    str(d / "manifest.json"), "-o", str(out), "--json"))
            G = nx.read_graphml(out)
            ops = [n for n, a in G.nodes(data=True) if a["kind"] == "op"]
            io = [n for n, a in G.nodes(data=True) if a["kind"] in ("input", "output")]
            modules = [n for n, a in G.nodes(data=True) if a["kind"] == "module"]
            assert len(ops) == len(model.graph.node) == counts["op_nodes"], \
                f"{fixture}: {len(ops)} ops, {len(model.graph.node)} nodes"
            assert len(io) == len(model.graph.input) + len(model.graph.output) == counts["io_nodes"]
            # Optimum's merged decoder holds one If node: every module lives in its bodies.
            assert len(modules) == counts["module_groups"] and (modules or has_bodies), fixture
            want = expected_edges(model)
            got = {(endpoint(G, u), endpoint(G, v), a["tensor"]) for u, v, a in G.edges(data=True)}
            assert G.number_of_edges() == len(want) == counts["edges"], \
                f"{fixture}: {G.number_of_edges()} edges, expected {len(want)}"
            assert got == want, f"{fixture}: edges differ: {sorted(want - got)[:3]} {sorted(got - want)[:3]}"
            for _n, a in G.nodes(data=True):
                if a["kind"] == "op":
                    assert "op_type" in a and "strategy" in a and 0 <= a["confidence"] <= 1
            nested = check_nesting(out, fixture)
            assert nested == len(ops), f"{fixture}: {nested} ops seen while walking the nesting"
            if has_bodies:
                assert any(n.op_type in ("If", "Loop", "Scan") for n in model.graph.node)
                print(f"ok {fixture}: {len(ops)} ops (bodies not drawn), {G.number_of_edges()} edges")
                continue

            # Folded below depth 2: no group deeper than 1; the folded nodes
            # stand for every op not drawn.
            out2 = tmp / f"{fixture}.depth2.graphml"
            counts2 = json.loads(run(binary, "graphml", str(d / "model.onnx"), "--manifest",
                                     str(d / "manifest.json"), "-o", str(out2), "--depth", "2",
                                     "--json"))
            H = nx.read_graphml(out2)
            folded = [a for _n, a in H.nodes(data=True) if a["kind"] == "module" and a["collapsed"]]
            groups = [a for _n, a in H.nodes(data=True) if a["kind"] == "module" and not a["collapsed"]]
            assert folded and len(folded) == counts2["collapsed_modules"], fixture
            assert all(a["module"].count(".") == 1 for a in folded), fixture
            assert all(a["module"].count(".") == 0 for a in groups), fixture
            ops2 = sum(1 for _n, a in H.nodes(data=True) if a["kind"] == "op")
            assert ops2 + sum(a["nodes"] for a in folded) == len(model.graph.node), fixture
            assert H.number_of_edges() < G.number_of_edges(), fixture
            print(f"ok {fixture}: {len(ops)} ops, {len(modules)} module groups, "
                  f"{G.number_of_edges()} edges; --depth 2: {len(folded)} folded, "
                  f"{ops2} ops, {H.number_of_edges()} edges")

        # Hostile names: markup and control characters stay text.
        from onnx import TensorProto, helper
        weird = "</data><node id=\"x\">&amp;\x01\"'"
        g = helper.make_graph(
            [helper.make_node("Relu", ["in" + weird], [weird], name="/a" + weird + "/Relu"),
             helper.make_node("Neg", [weird], ["out"], name="n\x02")],
            "g", [helper.make_tensor_value_info("in" + weird, TensorProto.FLOAT, [2])],
            [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2])])
        hostile = tmp / "hostile.onnx"
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), hostile)
        run(binary, "graphml", str(hostile), "-o", str(tmp / "hostile.graphml"))
        H = nx.read_graphml(tmp / "hostile.graphml")
        names = {a.get("name") for _n, a in H.nodes(data=True)}
        clean = weird.replace("\x01", "\ufffd")
        assert "/a" + clean + "/Relu" in names and "n\ufffd" in names, names
        assert {a["tensor"] for _u, _v, a in H.edges(data=True)} == {"in" + clean, clean, "out"}
        print("ok hostile names kept as text")

        # Refusals: bad depth, output onto the model, missing -o.
        d = fixtures / "bert-seqcls.torchscript"
        for args, needle in [(["--depth", "0", "-o", str(tmp / "x.graphml")], "--depth"),
                             (["-o", str(d / "model.onnx")], "model.onnx"),
                             ([], "missing -o")]:
            done = subprocess.run([binary, "graphml", str(d / "model.onnx"), *args],
                                  capture_output=True, text=True)
            assert done.returncode == 2 and needle in done.stderr, (args, done.returncode, done.stderr)
        done = subprocess.run([binary, "graphml", "--help"], capture_output=True, text=True)
        assert done.returncode == 0 and "--depth" in done.stdout
        print("ok refusals")


if __name__ == "__main__":
    main()
