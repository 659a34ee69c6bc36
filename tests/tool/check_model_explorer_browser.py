"""An annotated export in the real Model Explorer web app, in headless Chromium.

Annotates a fixture with semmap, starts Model Explorer's own server (the
`model_explorer` package, with the `model_explorer_onnx` adapter) on it and
opens the app over the DevTools protocol (tests/tool/cdp.py). Expected values come
from the annotated file's `namespace` entries, never from a list in here:
  - "GRAPH INFO" counts one layer per distinct namespace prefix;
  - a repeated block (the shallowest layer with layers inside and a sibling
    of the same class), expanded and selected through the URL's UI state the
    app itself writes, is what "LAYER INFO" names, under its parent's
    namespace, and the "identical layers" list shows the path from the root
    to it;
  - searching the label of the innermost layer of the deepest op lists
    exactly the layers of that label, each under the path the namespace says;
  - Alt+Click on that op in the search results selects it; its side panel shows
    every metadata entry of the node with its value, and each label, as the
    panel draws it (cut with an ellipsis to the key column's width), names
    one key only;
  - a stage of `semmap extract --stages`, opened with nothing selected: the
    graph panel shows every model-level metadata entry (the stage's keys)
    with its value, and each label, as drawn, names one key only.
Saves a PNG of the selected block (the picture in docs/cli.md).

    check_model_explorer_browser.py SEMMAP_BINARY FIXTURES_DIR SCREENSHOT.png
"""
import json
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cdp import Browser, CdpError  # noqa: E402
from semmap_testlib import budget  # noqa: E402

FIXTURE = "bert-seqcls.torchscript"
WIDTH, HEIGHT = 1280, 760

# The side panel's rows: [label, value] per row of each section, with the
# label as drawn (cut to the cell's width with an ellipsis when it overflows).
PANEL = r"""
(() => {
  const sections = {};
  for (const sec of document.querySelectorAll('info-panel .section')) {
    const header = sec.querySelector('.header');
    if (!header) continue;
    // The header's text without its icons' ligatures ("expand_more").
    const bare = header.cloneNode(true);
    for (const icon of bare.querySelectorAll('mat-icon')) icon.remove();
    const title = bare.textContent.trim();
    const rows = [];
    for (const tr of sec.querySelectorAll('tr')) {
      const key = tr.querySelector('td.key'), value = tr.querySelector('td.value');
      if (!key || !value) continue;
      const box = key.querySelector('hoverable-label .container') || key;
      const text = box.textContent.trim();
      let shown = text;
      if (box.scrollWidth > box.clientWidth) {
        // What text-overflow: ellipsis leaves: the longest prefix that fits
        // with the ellipsis in the box's width, in the box's own font.
        const ctx = document.createElement('canvas').getContext('2d');
        ctx.font = getComputedStyle(box).font;
        let n = text.length;
        while (n > 0 && ctx.measureText(text.slice(0, n) + '\u2026').width > box.clientWidth) n--;
        shown = text.slice(0, n) + '\u2026';
      }
      const full = value.querySelector('.expanded-text .text-content') ||
                   value.querySelector('.one-line-text') || value;
      rows.push({label: text, shown, overflow: getComputedStyle(box).textOverflow,
                 width: box.clientWidth, value: full.textContent.trim()});
    }
    sections[title.toUpperCase()] = {rows, text: sec.innerText};
  }
  return sections;
})()
"""

# The search results as the app draws them: a tree whose first level reads
# as one path ("<root> / main_graph / ...") and whose deeper levels are one
# layer each. Returns the full path of every result row that matched.
SEARCH_PATHS = r"""
(() => {
  const text = (row) => {
    const bare = row.querySelector('.label').cloneNode(true);
    for (const extra of bare.querySelectorAll('mat-icon, .match-types-container')) extra.remove();
    return bare.textContent.trim();
  };
  const stack = [], out = [];
  for (const row of document.querySelectorAll('mat-tree-node')) {
    const level = Number(row.getAttribute('aria-level'));
    stack.length = level - 1;
    stack.push(text(row));
    if (row.querySelector('.match-types-container')) out.push(stack.join(' / '));
  }
  return out.sort();
})()
"""


def fail(message):
    sys.exit(f"model_explorer_browser: {message}")


def run(*args):
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=budget(120))
    if done.returncode != 0:
        fail(f"{' '.join(map(str, args))}: exit {done.returncode}: {done.stderr.strip()[-2000:]}")
    return done.stdout


def free_port():
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


class Server:
    """Model Explorer's server (`python -m model_explorer`) on one model."""

    def __init__(self, model, port, timeout=60):
        self.log = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [sys.executable, "-u", "-m", "model_explorer", str(model), "--extensions",
             "model_explorer_onnx", "--no_open_in_browser", "--port", str(port)],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + budget(timeout)
        while "Starting Model Explorer server at" not in self.output():
            if self.proc.poll() is not None:
                fail(f"Model Explorer's server exited ({self.proc.returncode}):\n{self.output()}")
            if time.monotonic() > deadline:
                self.close()
                fail(f"Model Explorer's server did not start in {budget(timeout):.0f} s:\n{self.output()}")
            time.sleep(0.1)
        self.base = f"http://localhost:{port}/"

    def output(self):
        self.log.seek(0)
        return self.log.read()

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def app_url(base, model, graph, selected="", expanded=()):
    """The URL the app writes for this state: its `data` parameter (models and
    the panes' UI state) and the WebGL renderer."""
    data = {"models": [{"url": str(model), "adapterId": "onnx_adapter"}],
            "uiState": {"paneStates": [{
                "deepestExpandedGroupNodeIds": list(expanded), "selectedNodeId": selected,
                "selectedGraphId": graph, "selectedCollectionLabel": model.name,
                "widthFraction": 1, "selected": True}]}}
    return f"{base}?data={urllib.parse.quote(json.dumps(data))}&renderer=webgl"


def wait_for(page, what, test, timeout=45):
    """Polls the page's side panel until `test(panel)` holds; returns the panel."""
    deadline = time.monotonic() + budget(timeout)
    panel = {}
    while time.monotonic() < deadline:
        try:
            panel = page.js(PANEL) or {}
            if test(panel):
                return panel
        except CdpError:
            pass  # the document is not there yet
        time.sleep(0.1)
    fail(f"{what}: not shown after {budget(timeout):.0f} s; the side panel holds {json.dumps(panel)[:1500]}")


def settled_screenshot(page, timeout=40):
    """A screenshot once two in a row are the same (the camera has stopped)."""
    deadline = time.monotonic() + budget(timeout)
    last = page.screenshot()
    while time.monotonic() < deadline:
        time.sleep(0.25)
        png = page.screenshot()
        if png == last:
            return png
        last = png
    fail(f"the graph was still moving after {budget(timeout):.0f} s")


def rows(panel, section):
    return {r["label"]: r for r in panel.get(section, {}).get("rows", [])}


def regex_of(text):
    """A JavaScript regular expression matching exactly `text`."""
    return "^" + re.sub(r"[.*+?^${}()|\[\]\\/]", lambda m: "\\" + m.group(0), text) + "$"


def layer_of(path):
    return "/".join(path) + "___group___"


def read_model(path):
    """The graph's name and, per node, (name, op type, metadata entries)."""
    model = onnx.load(str(path), load_external_data=False)
    nodes = [(n.name, n.op_type, [(p.key, p.value) for p in n.metadata_props])
             for n in model.graph.node]
    return model.graph.name, nodes


def labels_name_one_key(what, attrs):
    """Each label as drawn (cut with an ellipsis) is the start of its own key only."""
    labels = [r["label"] for r in attrs]
    for r in attrs:
        seen = r["shown"][:-1] if r["shown"].endswith("\u2026") else r["shown"]
        named = [label for label in labels if label.startswith(seen)]
        if r["shown"] != r["label"] and r["overflow"] != "ellipsis":
            fail(f"{r['label']!r} is cut without an ellipsis")
        if named != [r["label"]]:
            fail(f"{what}: the side panel draws {r['label']!r} as {r['shown']!r} "
                 f"in {r['width']} px, which also reads as {[x for x in named if x != r['label']]}")


def check_model_keys(browser, binary, fixture, tmp):
    """A stage file's model-level metadata in the graph panel, nothing selected."""
    run(binary, "extract", str(fixture / "model.onnx"), "--manifest", str(fixture / "manifest.json"),
        "--stages", "2", "-o", str(tmp / "stages.onnx"))
    model = tmp / "stages.stage0.onnx"
    want = {f"[metadata] {p.key}": p.value
            for p in onnx.load(str(model), load_external_data=False).metadata_props}
    if len(want) < 2:
        fail(f"{model.name}: {len(want)} model metadata entries; expected the stage's keys")
    graph, _ = read_model(model)
    server = Server(model, free_port())
    try:
        page = browser.new_page(WIDTH, HEIGHT)
        page.send("Page.navigate", {"url": app_url(server.base, model, graph)})
        panel = wait_for(page, f"GRAPH INFO of {model.name}",
                         lambda p: set(want) <= set(rows(p, "GRAPH INFO")))
        attrs = [r for r in panel["GRAPH INFO"]["rows"] if r["label"] in want]
        got = {r["label"]: r["value"] for r in attrs}
        if got != want:
            fail(f"{model.name}: the graph panel shows model metadata {got}, the file has {want}")
        labels_name_one_key(model.name, attrs)
        print("ok model metadata labels as drawn: "
              + ", ".join(f"{r['shown']!r}" for r in attrs) + f" (key column {attrs[0]['width']} px)")
        page.send("Page.close")
    finally:
        server.close()


def main():
    binary, fixtures, screenshot = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    started = time.monotonic()
    d = fixtures / FIXTURE
    with tempfile.TemporaryDirectory() as tmp_name:
        model = Path(tmp_name) / f"{FIXTURE.split('.')[0]}.semmap.onnx"
        run(binary, "annotate", str(d / "model.onnx"), "--manifest", str(d / "manifest.json"),
            "-o", str(model))
        graph, nodes = read_model(model)

        # Layers as the file's namespaces lay them out, below the graph's own.
        spaces = {name: dict(meta)["namespace"].split("/")
                  for name, _, meta in nodes if dict(meta).get("namespace")}
        layers = {tuple(parts[:i]) for parts in spaces.values() for i in range(1, len(parts) + 1)}
        if len(layers) < 10:
            fail(f"{model}: only {len(layers)} namespace levels; did annotate write namespaces?")
        classes = {p: p[-1].split(": ", 1)[-1] for p in layers}
        block = min((p for p in layers
                     if any(q[:-1] == p for q in layers)
                     and any(q != p and q[:-1] == p[:-1] and classes[q] == classes[p] for q in layers)),
                    key=lambda p: (len(p), p))
        twins = sorted((q for q in layers if q[:-1] == block[:-1] and classes[q] == classes[block]),
                       key=lambda q: q[-1])
        # The deepest op among those with the most metadata entries (all of
        # semmap's keys, a category included).
        op = max((n for n in nodes if n[1] != "Constant" and n[0] in spaces),
                 key=lambda n: (len(n[2]), len(spaces[n[0]])))
        op_path = spaces[op[0]]
        innermost = op_path[-1]
        same_label = sorted(p for p in layers if p[-1] == innermost)

        server = Server(model, free_port())
        try:
            with Browser() as browser:
                # 1. Nothing selected: the graph's summary.
                page = browser.new_page(WIDTH, HEIGHT)
                page.send("Page.navigate", {"url": app_url(server.base, model, graph)})
                panel = wait_for(page, "GRAPH INFO", lambda p: "layer count" in rows(p, "GRAPH INFO"))
                shown = rows(panel, "GRAPH INFO")["layer count"]["value"]
                if shown != str(len(layers)):
                    fail(f"GRAPH INFO shows {shown} layers, the namespaces of {model.name} "
                         f"make {len(layers)}")
                print(f"ok graph info: {shown} layers, as the file's namespaces make")
                page.send("Page.close")

                # 2. The repeated block, expanded and selected.
                block_id = layer_of([graph, *block])
                page = browser.new_page(WIDTH, HEIGHT)
                page.send("Page.navigate", {"url": app_url(server.base, model, graph, selected=block_id,
                                                           expanded=[block_id])})
                panel = wait_for(page, f"LAYER INFO of {block[-1]!r}",
                                 lambda p: "name" in rows(p, "LAYER INFO")
                                 and any(t.startswith("IDENTICAL LAYERS") for t in p))
                info = rows(panel, "LAYER INFO")
                want = {"name": block[-1], "namespace": "/".join([graph, *block[:-1]])}
                got = {k: info.get(k, {}).get("value") for k in want}
                if got != want:
                    fail(f"LAYER INFO shows {got}, expected {want}")
                trail = next((s["text"] for t, s in panel.items() if t.startswith("IDENTICAL LAYERS")), "")
                path_text = " / ".join(["<root>", graph, *block[:-1]])
                missing = [q[-1] for q in twins if q[-1] not in trail]
                if path_text not in trail or missing:
                    fail(f"identical layers: expected the path {path_text!r} and {[q[-1] for q in twins]}; "
                         f"the panel reads {trail[:800]!r}")
                png = settled_screenshot(page)
                if png[:8] != b"\x89PNG\r\n\x1a\n" or len(png) < 30000:
                    fail(f"screenshot: not a plausible picture of a graph ({len(png)} bytes)")
                screenshot.parent.mkdir(parents=True, exist_ok=True)
                screenshot.write_bytes(png)
                print(f"ok layer {block[-1]!r} under {want['namespace']!r}, "
                      f"{len(twins)} identical layers listed; screenshot {screenshot}")

                # 3. Search the innermost layer of the deepest op.
                page.js("document.querySelector('input[placeholder*=\"Search\"]').focus()")
                regex = regex_of(innermost)
                page.send("Input.insertText", {"text": regex})
                want = sorted(" / ".join(["<root>", graph, *p]) for p in same_label)
                deadline = time.monotonic() + budget(20)
                while True:
                    got = page.js(SEARCH_PATHS)
                    if got == want:
                        break
                    if time.monotonic() > deadline:
                        fail(f"search {regex!r}: the results read {got}, expected {want}")
                    time.sleep(0.1)
                print(f"ok search {regex!r}: {len(want)} layers, each under its namespace path")

                # 4. The deepest op, selected by Alt+Click on its search result
                # (the hint under the results: "Alt+Click to locate and select").
                page.js("(() => { const i = document.querySelector('input[placeholder*=\"Search\"]');"
                        " i.value = ''; i.dispatchEvent(new Event('input')); i.focus(); })()")
                page.send("Input.insertText", {"text": regex_of(op[1])})
                deadline = time.monotonic() + budget(20)
                box = None
                while box is None and time.monotonic() < deadline:
                    box = page.js(f"""(() => {{
                      const r = [...document.querySelectorAll('mat-tree-node[data-id]')]
                        .find((r) => r.dataset.id === {json.dumps(op[0])});
                      if (!r) return null;
                      r.scrollIntoView({{block: 'center'}});
                      const b = r.querySelector('.label').getBoundingClientRect();
                      return [b.x + Math.min(20, b.width / 2), b.y + b.height / 2];
                    }})()""")
                    if box is None:
                        # Results come 50 to a page; turn to the next one.
                        page.js("document.querySelector('paginator .next-page:not(.disabled)')?.click()")
                        time.sleep(0.2)
                if box is None:
                    fail(f"search {regex_of(op[1])!r}: no result for node {op[0]!r}")
                for kind in ("mousePressed", "mouseReleased"):
                    page.send("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1],
                                                            "button": "left", "clickCount": 1,
                                                            "modifiers": 1})  # Alt
                panel = wait_for(page, f"NODE INFO of {op[0]!r}",
                                 lambda p: rows(p, "NODE INFO").get("id", {}).get("value") == op[0]
                                 and rows(p, "ATTRIBUTES"))
                attrs = [r for r in panel["ATTRIBUTES"]["rows"] if r["label"].startswith("[metadata] ")]
                want_meta = {f"[metadata] {k}": v for k, v in op[2]}
                got_meta = {r["label"]: r["value"] for r in attrs}
                if got_meta != want_meta:
                    fail(f"node {op[0]!r}: the panel shows metadata {got_meta}, the file has {want_meta}")
                labels_name_one_key(f"node {op[0]!r}", attrs)
                print("ok metadata labels as drawn: "
                      + ", ".join(f"{r['shown']!r}" for r in attrs) + f" (key column {attrs[0]['width']} px)")
                # For the eye only (the search box's caret may blink): not settled.
                screenshot.with_name(screenshot.stem + "-node.png").write_bytes(page.screenshot())
                page.send("Page.close")
        finally:
            server.close()
        with Browser() as browser:
            check_model_keys(browser, binary, d, Path(tmp_name))
    print(f"ok in {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
