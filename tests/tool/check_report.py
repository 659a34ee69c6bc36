"""Opens `semmap report` pages in real headless Chromium and checks what the
page's JavaScript rendered: one row per module of the manifest, the search
(pre-filled from the URL fragment #q=..., or typed into the search box)
showing exactly the matching modules and their ancestors, every node row of
the node table reachable by scrolling, hostile node names shown as text and
never run, and a screenshot of a selected module; with a numerics document of
semmap compare-numerics, the numerics tab's plot, tables and links.

The tree and the node table render only the rows in view, so rows are
collected by scrolling each list from top to bottom (tests/tool/cdp.py drives the
browser over the DevTools protocol).

    check_report.py SEMMAP_BINARY FIXTURES_DIR SCREENSHOT.png
"""
import json
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

import onnx
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cdp import Browser  # noqa: E402
from semmap_testlib import budget  # noqa: E402

HOSTILE = "</script><img src=x onerror=document.body.setAttribute('data-pwned','1')>"

# Scrolls a list (#tree or the node table's pane) from top to bottom and
# returns what was rendered on the way, keyed by row.
SWEEP = """
((scroller, selector, key, value) => {
  const sc = document.getElementById(scroller);
  const seen = new Map();
  const collect = () => { for (const r of sc.querySelectorAll(selector)) seen.set(key(r), value(r)); };
  const step = Math.max(40, Math.floor(sc.clientHeight * 0.75));
  for (let y = 0; ; y += step) {
    sc.scrollTop = y;
    sc.dispatchEvent(new Event("scroll"));
    collect();
    if (sc.scrollTop + sc.clientHeight >= sc.scrollHeight - 1 || y > sc.scrollHeight) break;
  }
  sc.scrollTop = 0;
  sc.dispatchEvent(new Event("scroll"));
  return [...seen.values()];
})
"""
TREE_ROWS = SWEEP + """("tree", "div.mod[data-index]", (r) => r.dataset.index,
   (r) => ({ path: r.dataset.path, hit: r.classList.contains("hit") }))"""
NODE_ROWS = SWEEP + """("details", "#nodes tr[data-node]", (r) => r.dataset.node,
   (r) => Number(r.dataset.node))"""


def run(*args, cwd=None):
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=budget(120), cwd=cwd)
    if done.returncode != 0:
        sys.exit(f"{' '.join(map(str, args))}: exit {done.returncode}: {done.stderr.strip()[-2000:]}")
    return done.stdout


def open_report(browser, html, fragment=""):
    url = html.resolve().as_uri() + (("#" + fragment) if fragment else "")
    page = browser.new_page(1400, 860)
    try:
        page.goto(url, "document.body && document.body.getAttribute('data-ready') === '1'", timeout=60)
    except Exception as e:
        sys.exit(f"{url}: the page's script did not finish (no data-ready on body): {e}")
    return page


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


def check_rows(label, page, sidecar, query):
    hits, shown = expected_rows(sidecar, query)
    rows = page.js(TREE_ROWS)
    visible = {r["path"] for r in rows}
    highlighted = {r["path"] for r in rows if r["hit"]}
    if visible != shown or highlighted != hits:
        sys.exit(f"{label} {query!r}: shown {sorted(visible)} (expected {sorted(shown)}), "
                 f"highlighted {sorted(highlighted)} (expected {sorted(hits)})")
    print(f"ok {label} {query!r}: {len(hits)} matches, {len(visible)} rows shown")


def check_search(browser, html, sidecar, query):
    page = open_report(browser, html, "q=" + urllib.parse.quote(query))
    check_rows("search", page, sidecar, query)
    page.send("Page.close")


def check_typing(browser, html, sidecar, query):
    """The search box as a user types: one key event per character."""
    page = open_report(browser, html)
    page.js("document.getElementById('q').focus()")
    for ch in query:
        page.send("Input.insertText", {"text": ch})
    deadline = time.monotonic() + budget(10)
    while urllib.parse.parse_qs(page.js("location.hash")[1:]).get("q") != [query]:
        if time.monotonic() > deadline:
            sys.exit(f"typing {query!r}: the URL fragment is {page.js('location.hash')!r}")
        time.sleep(0.02)
    check_rows("typed", page, sidecar, query)
    page.send("Page.close")


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


def ranking_score(row, by):
    """What the leaf view is ranked by (docs/numerics.md): local error where measured."""
    if by == "local" and "local_error" in row:
        return row["local_error"]["rel_l2"]
    return row["added_error"]


def check_numerics(browser, binary, tmp, screenshot):
    """`semmap report --numerics` with a real semmap compare-numerics document: the
    numerics tab's plot (a bar per leaf module in graph order, the ten first of the
    ranking red and numbered), its tables, the link from a row to the module, the
    tree's error column, a note for a model that is neither file, hostile names."""
    repo = Path(__file__).resolve().parents[2]
    doc_path = repo / "tests" / "data" / "bert-seqcls.dynamo.quantized.numerics.json"
    doc = json.loads(doc_path.read_text())
    deployed, by = doc["deployed"], doc["ranked_by"]["leaf"]
    html = tmp / "numerics.html"
    # From the repository's root, where the document was made: the same paths.
    run(str(binary), "report", deployed["path"], "--manifest", deployed["manifest"],
        "--numerics", str(doc_path.relative_to(repo)), "-o", str(html), cwd=repo)
    leaf = doc["views"]["leaf"]
    plotted = sorted((r for r in leaf if r["output_error"] is not None), key=lambda r: r["order"])
    bars = [r["module"] for r in plotted if ranking_score(r, by) > 0]
    worst = {r["rank"] for r in plotted if r["rank"] is not None and r["rank"] <= 10}
    worst_bars = {r["rank"] for r in plotted if r["rank"] is not None and r["rank"] <= 10
                  and ranking_score(r, by) > 0}
    page = open_report(browser, html, "v=numerics")
    state = page.js("""({
      tab: !document.getElementById('numerics').hidden && document.querySelector('main').hidden,
      bars: [...document.querySelectorAll('#plot rect.bar')]
        .sort((a, b) => a.getBoundingClientRect().x - b.getBoundingClientRect().x).map((b) => b.dataset.module),
      worst: [...document.querySelectorAll('#plot rect.bar.worst')].map((b) => Number(b.dataset.rank)),
      heights: [...document.querySelectorAll('#plot rect.bar.worst')].map((b) => b.getBoundingClientRect().height),
      marks: [...document.querySelectorAll('#plot text.mark')].map((t) => Number(t.textContent)),
      rows: [...document.querySelectorAll('#numerics-leaf tbody tr')].map((t) => t.children[1].textContent),
      red: document.querySelectorAll('#numerics-leaf tbody tr.worst').length,
      subtree: document.querySelectorAll('#numerics-subtree tbody tr').length,
      note: !!document.getElementById('numerics-note'),
      text: document.getElementById('numerics').textContent })""")
    if not state["tab"]:
        sys.exit(f"{html}#v=numerics: the numerics tab is not the one shown")
    if state["bars"] != bars:
        sys.exit(f"{html}: plot bars {state['bars']}, expected the leaf modules in graph order {bars}")
    if sorted(state["worst"]) != sorted(worst_bars) or len(state["worst"]) != len(worst_bars):
        sys.exit(f"{html}: highlighted bars of ranks {sorted(state['worst'])}, expected {sorted(worst_bars)}")
    if sorted(state["marks"]) != sorted(worst) or min(state["heights"], default=0) <= 0:
        sys.exit(f"{html}: rank marks {state['marks']} (expected {sorted(worst)}), bar heights {state['heights']}")
    ranked = sorted((r for r in leaf if r["rank"] is not None), key=lambda r: r["rank"])
    if state["rows"] != [r["module"] or "<root>" for r in ranked[:20]] or state["red"] != len(worst):
        sys.exit(f"{html}: leaf table rows {state['rows']} ({state['red']} red)")
    if not state["subtree"] or state["note"] or "(this report's model)" not in state["text"]:
        sys.exit(f"{html}: subtree table rows {state['subtree']}, note {state['note']}, side not said")
    png = page.screenshot()
    if png[:8] != b"\x89PNG\r\n\x1a\n" or len(png) < 20000:
        sys.exit(f"numerics screenshot: not a plausible screenshot ({len(png)} bytes)")
    # Past 20 rows, a button shows every ranked row.
    page.js("document.querySelector('#numerics-leaf').parentElement.querySelector('button').click()")
    every = page.js("[...document.querySelectorAll('#numerics-leaf tbody tr')].map((t) => Number(t.dataset.rank))")
    if every != [r["rank"] for r in ranked]:
        sys.exit(f"{html}: 'show all' gave ranks {every}, expected 1 to {len(ranked)}")
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    screenshot.with_name("report-numerics-screenshot.png").write_bytes(png)
    print(f"ok numerics tab: {len(state['bars'])} bars in graph order, {len(state['worst'])} highlighted "
          f"(ranks {sorted(state['worst'])}), {len(state['rows'])} + {state['subtree']} table rows")

    # The first row's link: the modules tab, that module selected, its error shown.
    first = ranked[0]["module"]
    page.js("document.querySelector('#numerics-leaf tbody tr a').click()")
    picked = page.js("""({
      tab: document.getElementById('numerics').hidden && !document.querySelector('main').hidden,
      title: document.querySelector('#details h2').textContent, hash: location.hash,
      own: [...document.querySelectorAll('#details .kv')].map((k) => k.textContent)
        .filter((t) => t.startsWith('error (own nodes)')),
      badge: [...document.querySelectorAll('#treebody .mod.selected .err')].map((b) => b.textContent) })""")
    if (not picked["tab"] or picked["title"] != first or "m=" not in picked["hash"]
            or not picked["own"] or "rank 1 of" not in picked["own"][0] or not picked["badge"]
            or not picked["badge"][0].startswith("#1 ")):
        sys.exit(f"{html}: the link to {first} gave {picked}")
    page.send("Page.close")
    print(f"ok numerics link: {first} selected, tree badge {picked['badge'][0]!r}")

    # A report of a model that is neither file: allowed, with a note.
    other = tmp / "numerics-other.html"
    run(str(binary), "report", "fixtures/bert-seqcls.dynamo/model.onnx", "--manifest",
        "fixtures/bert-seqcls.dynamo/manifest.json", "--numerics", str(doc_path), "-o", str(other), cwd=repo)
    page = open_report(browser, other, "v=numerics")
    note = page.js("(document.getElementById('numerics-note') || {}).textContent")
    if not note or "neither file of the comparison" not in note:
        sys.exit(f"{other}: no note that the model is neither file: {note!r}")
    page.send("Page.close")
    print(f"ok numerics of another file: {note}")

    # Hostile names in the document: text, never markup.
    hostile_doc = json.loads(doc_path.read_text())
    hostile_doc["views"]["leaf"][0]["module"] = HOSTILE
    hostile_doc["views"]["subtree"][0]["class"] = HOSTILE
    hostile_doc["inputs"]["note"] = HOSTILE
    hostile_path = tmp / "hostile-numerics.json"
    hostile_path.write_text(json.dumps(hostile_doc))
    hostile_html = tmp / "hostile-numerics.html"
    run(str(binary), "report", deployed["path"], "--numerics", str(hostile_path), "-o", str(hostile_html), cwd=repo)
    page = open_report(browser, hostile_html, "v=numerics")
    if page.js("document.querySelectorAll('img').length") or page.js("document.body.dataset.pwned"):
        sys.exit(f"{hostile_html}: a name from the numerics document was inserted as HTML")
    if page.js("document.getElementById('numerics').textContent").count("<img src=x onerror") < 2:
        sys.exit(f"{hostile_html}: the hostile names are not shown as text")
    page.send("Page.close")
    print("ok hostile numerics names rendered as text")


def main():
    binary, fixtures, screenshot = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    if shutil.which("chromium") is None:
        sys.exit("check_report: chromium not found; run scripts/setup-browser first")
    with tempfile.TemporaryDirectory() as tmp_name, Browser() as browser:
        tmp = Path(tmp_name)
        d = fixtures / "bert-seqcls.torchscript"
        # Relative to the fixtures: the page (and the screenshot) shows the path.
        rel = ["bert-seqcls.torchscript/model.onnx", "--manifest", "bert-seqcls.torchscript/manifest.json"]
        html = tmp / "report.html"
        run(str(Path(binary).resolve()), "report", *rel, "-o", str(html), cwd=fixtures)
        sidecar = json.loads(run(str(Path(binary).resolve()), "sidecar", *rel, cwd=fixtures))
        manifest = json.loads((d / "manifest.json").read_text())

        page = open_report(browser, html)
        page.js("document.getElementById('expand').click()")
        rows = page.js(TREE_ROWS)
        if sorted(r["path"] for r in rows) != sorted(m["path"] for m in manifest["modules"]):
            sys.exit(f"{html}: {len(rows)} module rows after 'expand all', expected all "
                     f"{len(manifest['modules'])} modules of the manifest")
        print(f"ok tree: {len(rows)} module rows rendered")
        nodes = page.js(NODE_ROWS)
        mapped = [i for i, n in enumerate(sidecar["nodes"]) if n["module"] is not None]
        if nodes != sorted(nodes) or len(nodes) != len(mapped):
            sys.exit(f"{html}: the root's node table reached {len(nodes)} rows by scrolling, "
                     f"expected all {len(mapped)} mapped nodes in graph order")
        print(f"ok node table: {len(nodes)} rows reachable by scrolling")
        page.send("Page.close")
        check_search(browser, html, sidecar, "layer.1.attention.self.query")
        check_search(browser, html, sidecar, "Softmax")  # a node name
        check_search(browser, html, sidecar, "LayerNorm")  # paths and classes
        check_typing(browser, html, sidecar, "Softmax")

        # Hostile names: shown as text, never parsed as markup or run.
        hostile = tmp / "hostile.onnx"
        hostile_model(hostile)
        hostile_html = tmp / "hostile.html"
        run(binary, "report", str(hostile), "-o", str(hostile_html))
        raw = hostile_html.read_text()
        if raw.count("</script>") != 2:
            sys.exit(f"{hostile_html}: a name closed a <script> element early")
        page = open_report(browser, hostile_html, "q=" + urllib.parse.quote("onerror"))
        rows = page.js(TREE_ROWS)
        if page.js("document.querySelectorAll('img').length") or page.js("document.body.dataset.pwned"):
            sys.exit(f"{hostile_html}: a node name was inserted as HTML")
        # The scope parser splits the name at '/'; the pieces are module paths.
        if not any("<img src=x onerror" in r["path"] for r in rows):
            sys.exit(f"{hostile_html}: the hostile module path is not shown as text")
        page.send("Page.close")
        print("ok hostile names rendered as text")

        # With a real ONNX Runtime profile: a time column in the tree and the
        # node table, the root's time being the attributed kernel time.
        profile = tmp / "profile.json"
        subprocess.run([sys.executable, str(Path(__file__).resolve().parents[2] / "scripts" / "ort-profile"),
                        str(d / "model.onnx"), str(profile), "--runs", "5"], check=True)
        timed_html = tmp / "timed.html"
        run(str(Path(binary).resolve()), "report", *rel, "--ort-profile", str(profile), "-o",
            str(timed_html), cwd=fixtures)
        times = json.loads(run(binary, "profile", str(d / "model.onnx"), "--manifest",
                               str(d / "manifest.json"), "--ort-profile", str(profile), "--json"))
        page = open_report(browser, timed_html, "m=bert.encoder.layer.1.attention.self")
        head = page.js("[...document.querySelectorAll('#tree .head span')].map((s) => s.textContent)")
        if head[-1] != "kernel time":
            sys.exit(f"{timed_html}: no kernel time column in the tree header: {head}")
        badges = page.js("[...document.querySelectorAll('#treebody .mod[data-index] .time')]"
                         ".map((b) => [b.closest('.mod').dataset.path, b.textContent, b.style.background])")
        root = [b for b in badges if b[0] == ""]
        want = f"{times['attributed_us'] / 1000:.3f} ms 100.0%"
        if not root or root[0][1] != want:
            sys.exit(f"{timed_html}: root time badge {root[:1]}, expected {want!r}")
        if len({b[2] for b in badges}) < 3:
            sys.exit(f"{timed_html}: time badges are not coloured by time: {badges[:5]}")
        cols = page.js("[...document.querySelectorAll('#nodes th')].map((t) => t.textContent)")
        cells = page.js("[...document.querySelectorAll('#nodes tr[data-node] td:last-child')]"
                        ".map((t) => t.textContent)")
        if cols[-1] != "time" or not any(c.endswith(" ms") for c in cells):
            sys.exit(f"{timed_html}: node table time column {cols} {cells[:5]}")
        timed_png = page.screenshot()
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        screenshot.with_name("report-time-screenshot.png").write_bytes(timed_png)
        page.send("Page.close")
        print(f"ok report with a profile: {len(badges)} time badges, root {root[0][1]}")

        check_numerics(browser, Path(binary).resolve(), tmp, screenshot)

        screenshot.parent.mkdir(parents=True, exist_ok=True)
        page = open_report(browser, html, "q=query&m=bert.encoder.layer.1.attention.self")
        png = page.screenshot()
        if png[:8] != b"\x89PNG\r\n\x1a\n" or len(png) < 20000:
            sys.exit(f"screenshot: not a plausible screenshot ({len(png)} bytes)")
        screenshot.write_bytes(png)
        print(f"ok screenshot {screenshot}")


if __name__ == "__main__":
    main()
