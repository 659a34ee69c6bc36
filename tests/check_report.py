"""Opens `semmap report` pages in real headless Chromium and checks what the
page's JavaScript rendered: one row per module of the manifest, the search
(pre-filled from the URL fragment #q=...) showing exactly the matching
modules and their ancestors, hostile node names shown as text and never run,
and a screenshot of a selected module.

    check_report.py SEMMAP_BINARY FIXTURES_DIR SCREENSHOT.png
"""
import json
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
from html.parser import HTMLParser
from pathlib import Path

import onnx
from onnx import TensorProto, helper

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
HOSTILE = "</script><img src=x onerror=document.body.setAttribute('data-pwned','1')>"


def run(*args):
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        sys.exit(f"{' '.join(map(str, args))}: exit {done.returncode}: {done.stderr.strip()[-2000:]}")
    return done.stdout


def chromium(profile_root, *args):
    profile = tempfile.mkdtemp(dir=profile_root)
    return run("chromium", *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args)


class Dom(HTMLParser):
    """Module rows (div.mod with data-path), img elements, body attributes."""

    def __init__(self, text):
        super().__init__()
        self.rows, self.images, self.body = [], 0, {}
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        if tag == "img":
            self.images += 1
        if tag == "div" and "data-path" in a and "data-unmapped" not in a:
            classes = (a.get("class") or "").split()
            self.rows.append({"path": a["data-path"], "hidden": "hidden" in a, "hit": "hit" in classes})


def dump(profile_root, html, fragment=""):
    url = html.resolve().as_uri() + (("#" + fragment) if fragment else "")
    dom = Dom(chromium(profile_root, "--dump-dom", url))
    if dom.body.get("data-ready") != "1":
        sys.exit(f"{url}: the page's script did not finish (no data-ready on body)")
    return dom


def expected_rows(sidecar, query):
    """Modules a search shows: matching path, class or own node name/id, plus ancestors."""
    q = query.lower()
    modules = {m["path"]: m for m in sidecar["tree"]["modules"]}
    hits = {p for p, m in modules.items() if q in p.lower() or q in (m["class"] or "").lower()}
    for n in sidecar["nodes"]:
        if n["module"] is not None and (q in n["name"].lower() or q in n["id"].lower()):
            hits.add(n["module"])
    shown = set()
    for p in hits:
        while p is not None and p not in shown:
            shown.add(p)
            p = modules[p]["parent"]
    return hits, shown


def check_search(binary, profile_root, html, sidecar, query):
    dom = dump(profile_root, html, "q=" + urllib.parse.quote(query))
    hits, shown = expected_rows(sidecar, query)
    visible = {r["path"] for r in dom.rows if not r["hidden"]}
    highlighted = {r["path"] for r in dom.rows if r["hit"] and not r["hidden"]}
    if visible != shown or highlighted != hits:
        sys.exit(f"search {query!r}: shown {sorted(visible)} (expected {sorted(shown)}), "
                 f"highlighted {sorted(highlighted)} (expected {sorted(hits)})")
    print(f"ok search {query!r}: {len(hits)} matches, {len(visible)} of {len(dom.rows)} rows shown")


def hostile_model(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name=f"/{HOSTILE}/Relu"),
        helper.make_node("Neg", ["a"], ["y"], name="/ok/<b>&amp;</b>/Neg"),
    ]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)


def main():
    binary, fixtures, screenshot = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    if shutil.which("chromium") is None:
        sys.exit("check_report: chromium not found; run scripts/setup-browser first")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        d = fixtures / "bert-seqcls.torchscript"
        args = [str(d / "model.onnx"), "--manifest", str(d / "manifest.json")]
        html = tmp / "report.html"
        run(binary, "report", *args, "-o", str(html))
        sidecar = json.loads(run(binary, "sidecar", *args))
        manifest = json.loads((d / "manifest.json").read_text())

        dom = dump(tmp, html)
        if len(dom.rows) != len(manifest["modules"]) or any(r["hidden"] for r in dom.rows):
            sys.exit(f"{html}: {len(dom.rows)} module rows ({sum(r['hidden'] for r in dom.rows)} "
                     f"hidden), expected all {len(manifest['modules'])} modules shown")
        print(f"ok tree: {len(dom.rows)} module rows rendered")
        check_search(binary, tmp, html, sidecar, "layer.1.attention.self.query")
        check_search(binary, tmp, html, sidecar, "Softmax")  # a node name
        check_search(binary, tmp, html, sidecar, "LayerNorm")  # paths and classes

        # Hostile names: shown as text, never parsed as markup or run.
        hostile = tmp / "hostile.onnx"
        hostile_model(hostile)
        hostile_html = tmp / "hostile.html"
        run(binary, "report", str(hostile), "-o", str(hostile_html))
        raw = hostile_html.read_text()
        if raw.count("</script>") != 2:
            sys.exit(f"{hostile_html}: a name closed a <script> element early")
        dom = dump(tmp, hostile_html, "q=" + urllib.parse.quote("onerror"))
        if dom.images or dom.body.get("data-pwned"):
            sys.exit(f"{hostile_html}: a node name was inserted as HTML")
        # The scope parser splits the name at '/'; the pieces are module paths.
        if not any("<img src=x onerror" in r["path"] and not r["hidden"] for r in dom.rows):
            sys.exit(f"{hostile_html}: the hostile module path is not shown as text")
        print("ok hostile names rendered as text")

        screenshot.parent.mkdir(parents=True, exist_ok=True)
        shot = tmp / "shot.png"
        chromium(tmp, "--window-size=1400,860", "--hide-scrollbars", f"--screenshot={shot}",
                 html.resolve().as_uri() + "#q=query&m=bert.encoder.layer.1.attention.self")
        png = shot.read_bytes()
        if png[:8] != b"\x89PNG\r\n\x1a\n" or len(png) < 20000:
            sys.exit(f"{shot}: not a plausible screenshot ({len(png)} bytes)")
        shutil.copyfile(shot, screenshot)
        print(f"ok screenshot {screenshot}")


if __name__ == "__main__":
    main()
