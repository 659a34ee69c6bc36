"""Speed of `semmap report` pages in real headless Chromium.

For each case a report is written (the GPT-2 fixture, 531 nodes, and
synthetic Llama-shaped models from bench/semmap_synth), opened in headless
Chromium over the DevTools protocol (tests/tool/cdp.py) and measured:

  ready     time from navigation start to the page's script finishing
            (body[data-ready]), and to the first frame painted after it
            (median of --loads fresh loads, default 3);
  keystroke typing a query one character at a time: for each character the
            time from the input event to the first frame painted with the
            filtered tree (median and max);
  rows      the node table of the root module (every mapped node) swept by
            scrolling from top to bottom: how many distinct rows were
            rendered, out of how many nodes;
  numerics  with --numerics, each case again with a numerics document
            (label "CASE+num"), and the time from a click on the numerics
            tab to the first frame painted with it drawn.

    bench_report.py [--semmap BIN] [--baseline-semmap BIN] [--synth BIN]
                    [--sizes 5000,50000] [--fixtures DIR] [--loads N]
                    [--page LABEL=REPORT.html ...] [--query TEXT] [--numerics]
                    [--json] [--check]

--baseline-semmap also writes every case with another semmap binary (an
older version) and measures it in the same browser, labelled "CASE/base".
--page measures a report written elsewhere (label "gpt2..." types the
fixture's query, other labels the synthetic one).
--check exits 1 when a functional property fails: the page is not ready,
the search shows no module, or some node row cannot be reached by
scrolling, or a numerics tab draws no bar. Timing is printed, not asserted.
The numerics documents of --numerics are made up for the benchmark's models
(which ONNX Runtime cannot run): one leaf row per module without children and
one subtree row per module, in the manifest's order, with seeded random
errors; the real tool's document is tests/data's, which report_browser reads.
"""
import argparse
import json
import math
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cdp import Browser  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

# Records when the page's script has finished (body[data-ready="1"]) and when
# the next frame after that has been painted; installed before any page script.
READY_PROBE = """
(() => {
  const t = window.__semmapBench = {};
  new MutationObserver((records, observer) => {
    if (!t.ready && document.body && document.body.getAttribute("data-ready") === "1") {
      t.ready = performance.now();
      requestAnimationFrame(() => setTimeout(() => {
        void document.documentElement.offsetHeight;  // any layout still pending counts
        t.painted = performance.now();
      }, 0));
      observer.disconnect();
    }
  }).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-ready"] });
})();
"""

# Types one character into the search box the way an input event does and
# waits for the frame after it (a page may filter synchronously in the input
# handler or in its next animation frame; both are inside the figure).
KEYSTROKE = """
(async (ch) => {
  const q = document.getElementById("q");
  const t0 = performance.now();
  if (ch === "\\b") q.value = q.value.slice(0, -1); else q.value += ch;
  q.dispatchEvent(new Event("input", { bubbles: true }));
  await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  void document.documentElement.offsetHeight;  // any layout still pending counts
  const status = document.getElementById("status");
  return { ms: performance.now() - t0, visible: Number(status.getAttribute("data-visible")) };
})
"""

# Scrolls the node table's scroll container from top to bottom and collects
# the distinct node rows rendered on the way.
SWEEP = """
(async () => {
  const table = document.getElementById("nodes");
  if (!table) return { rows: 0 };
  let sc = table.parentElement;
  while (sc && sc !== document.body && !(sc.scrollHeight > sc.clientHeight &&
         /(auto|scroll)/.test(getComputedStyle(sc).overflowY))) sc = sc.parentElement;
  const seen = new Set();
  const collect = () => {
    for (const tr of table.querySelectorAll("tr")) {
      if (tr.querySelector("th") || tr.classList.contains("spacer")) continue;
      seen.add(tr.dataset.node !== undefined ? "n" + tr.dataset.node : "r" + tr.rowIndex);
    }
  };
  collect();
  if (sc && sc !== document.body) {
    const step = Math.max(40, Math.floor(sc.clientHeight * 0.75));
    for (let y = step; ; y += step) {
      sc.scrollTop = y;
      sc.dispatchEvent(new Event("scroll"));
      collect();
      if (sc.scrollTop + sc.clientHeight >= sc.scrollHeight - 1 || y > sc.scrollHeight) break;
    }
    sc.scrollTop = 0;
    sc.dispatchEvent(new Event("scroll"));
  }
  return { rows: seen.size };
})()
"""


# Clicks the numerics tab and waits for the frame after it is drawn.
NUMERICS_TAB = """
(async () => {
  const tab = document.getElementById("tab-numerics");
  if (!tab || tab.closest("[hidden]")) return null;
  const t0 = performance.now();
  tab.click();
  await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  void document.documentElement.offsetHeight;
  return { ms: performance.now() - t0, bars: document.querySelectorAll("#plot rect.bar").length };
})()
"""


def synthetic_numerics(manifest_path, model_path, out):
    """A "semmap.numerics" document over a manifest's modules, figures made up (seed 0)."""
    modules = json.loads(Path(manifest_path).read_text())["modules"]
    rng = random.Random(0)

    def row(m, order):
        out_err, in_err = 10 ** rng.uniform(-4, -1), 10 ** rng.uniform(-4, -1.5)
        local = out_err * rng.uniform(0.05, 1)
        fig = {"rel_l2": out_err, "sqnr_db": -20 * math.log10(out_err), "cosine": 1 - out_err ** 2 / 2,
               "max_abs": out_err * 3}
        return {"module": m["path"], "class": m["class"], "depth": m["path"].count(".") + 1,
                "order": order, "fused": [], "rank": None, "added_error": out_err - in_err,
                "input_error": in_err, "output_error": fig, "outputs": [], "unpaired": 0,
                "local_error": dict(fig, rel_l2=local, inputs_fed=1, inputs_not_fed=0)}

    leaf = [row(m, k) for k, m in enumerate(modules) if not m.get("children")]
    subtree = [row(m, k) for k, m in enumerate(modules)]
    for rows, key in ((leaf, lambda r: -r["local_error"]["rel_l2"]), (subtree, lambda r: -r["added_error"])):
        rows.sort(key=key)
        for k, r in enumerate(rows):
            r["rank"] = k + 1
    doc = {"format": "semmap.numerics", "version": 1,
           "reference": {"path": str(model_path)}, "deployed": {"path": "deployed.onnx"},
           "inputs": {"source": "generated", "note": "made up for the benchmark"},
           "provider": "CPUExecutionProvider", "final_error": 0.05,
           "ranked_by": {"leaf": "local", "subtree": "added"},
           "views": {"leaf": leaf, "subtree": subtree}, "unpaired": []}
    Path(out).write_text(json.dumps(doc))


def find_binary(explicit, names):
    if explicit:
        return Path(explicit)
    for preset in ("release", "dev"):
        for name in names:
            p = ROOT / "build" / preset / name
            if p.exists():
                return p
    sys.exit(f"bench_report: none of {names} built (scripts/build release)")


def run(*args):
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit(f"{' '.join(map(str, args))}: exit {done.returncode}: {done.stderr.strip()[-2000:]}")
    return done.stdout


def model_counts(html):
    """The report's embedded "model" object (node and mapped counts)."""
    text = html.read_text(encoding="utf-8")
    start = text.index('id="semmap-data">') + len('id="semmap-data">')
    return json.loads(text[start:text.index("</script>", start)])["model"]


def measure(browser, label, html, query, loads):
    ready, painted, page = [], [], None
    for _ in range(max(1, loads)):
        if page is not None:
            page.send("Page.close")
        page = browser.new_page(1400, 860)
        page.send("Page.addScriptToEvaluateOnNewDocument", {"source": READY_PROBE})
        page.goto(html.resolve().as_uri(), "window.__semmapBench && window.__semmapBench.painted",
                  timeout=300)
        t = page.js("window.__semmapBench")
        ready.append(t["ready"])
        painted.append(t["painted"])
    times, visible = [], None
    for ch in query:
        r = page.js(f"({KEYSTROKE.strip()})({json.dumps(ch)})")
        times.append(r["ms"])
        visible = r["visible"]
    clear = [page.js(f"({KEYSTROKE.strip()})('\\b')")["ms"] for _ in query]
    sweep = page.js(SWEEP)
    tab = page.js(NUMERICS_TAB)
    page.send("Page.close")
    counts = model_counts(html)
    return {
        "numerics_tab_ms": None if tab is None else round(tab["ms"]),
        "numerics_bars": None if tab is None else tab["bars"],
        "case": label,
        "nodes": counts["nodes"],
        "html_mb": round(html.stat().st_size / 1048576, 2),
        "ready_ms": round(statistics.median(ready)),
        "painted_ms": round(statistics.median(painted)),
        "keystroke_median_ms": round(statistics.median(times), 1),
        "keystroke_max_ms": round(max(times), 1),
        "delete_median_ms": round(statistics.median(clear), 1),
        "delete_max_ms": round(max(clear), 1),
        "query": query,
        "query_modules_shown": visible,
        "rows_reachable": sweep["rows"],
        "rows_expected": counts["mapped"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--semmap")
    ap.add_argument("--baseline-semmap")
    ap.add_argument("--synth")
    ap.add_argument("--sizes", default="5000,50000")
    ap.add_argument("--fixtures", default=str(ROOT / "fixtures"))
    ap.add_argument("--page", action="append", default=[], metavar="LABEL=REPORT.html")
    ap.add_argument("--query", default="layers.1")
    ap.add_argument("--fixture-query", default="h.1.attn")
    ap.add_argument("--loads", type=int, default=3, help="page loads per case (median)")
    ap.add_argument("--numerics", action="store_true",
                    help="each case also with a made-up numerics document (CASE+num)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()

    pages = []
    with tempfile.TemporaryDirectory(prefix="semmap-bench-report-") as tmp_name:
        tmp = Path(tmp_name)
        for spec in args.page:
            label, _, path = spec.partition("=")
            pages.append((label, Path(path),
                          args.fixture_query if label.startswith("gpt2") else args.query))
        if not args.page:
            semmap = find_binary(args.semmap, ["tools/semmap/semmap"])
            binaries = [("", semmap)]
            if args.baseline_semmap:
                binaries.append(("/base", Path(args.baseline_semmap)))
            fixture = Path(args.fixtures) / "gpt2-causal-lm.torchscript"
            models = [("gpt2", fixture, args.fixture_query)]
            sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
            if sizes:
                synth = find_binary(args.synth, ["bench/semmap_synth"])
            for n in sizes:
                d = tmp / f"synth{n}"
                d.mkdir()
                run(synth, "--nodes", n, d)
                models.append((str(n), d, args.query))
            for label, d, query in models:
                for suffix, binary in binaries:
                    html = tmp / f"{label}{suffix.replace('/', '-')}.html"
                    run(binary, "report", d / "model.onnx", "--manifest", d / "manifest.json",
                        "-o", html)
                    pages.append((label + suffix, html, query))
                    if args.numerics and not suffix:
                        doc = tmp / f"{label}.numerics.json"
                        synthetic_numerics(d / "manifest.json", d / "model.onnx", doc)
                        html = tmp / f"{label}-num.html"
                        run(binary, "report", d / "model.onnx", "--manifest", d / "manifest.json",
                            "--numerics", doc, "-o", html)
                        pages.append((label + "+num", html, query))
        rows = []
        with Browser() as browser:
            # A first load pays for starting the renderer; it is not counted.
            warm = browser.new_page(1400, 860)
            warm.goto(pages[0][1].resolve().as_uri(), "document.body && document.body.dataset.ready === '1'",
                      timeout=300)
            warm.send("Page.close")
            for label, html, query in pages:
                rows.append(measure(browser, label, html, query, args.loads))
                print_row(rows[-1], header=len(rows) == 1)
    print("ready: navigation start to the script done / to the next painted frame; keystroke: input "
          "event to the next painted frame; rows: distinct node rows rendered while scrolling the "
          "root module's table from top to bottom, of all mapped nodes.")
    failures = []
    for r in rows:
        if not r["query_modules_shown"]:
            failures.append(f"{r['case']}: the search {r['query']!r} shows no module")
        if r["rows_reachable"] != r["rows_expected"]:
            failures.append(f"{r['case']}: {r['rows_reachable']} of {r['rows_expected']} node rows "
                            "reachable by scrolling")
        if r["numerics_bars"] == 0:
            failures.append(f"{r['case']}: the numerics tab draws no bar")
    if args.json:
        print(json.dumps({"results": rows}))
    for f in failures:
        print(f"bench_report: {f}", file=sys.stderr)
    return 1 if failures and args.check else 0


def print_row(r, header):
    if header:
        print(f"{'case':>10} {'nodes':>7} {'HTML MB':>8} {'ready ms':>9} {'painted ms':>10}"
              f" {'key med ms':>10} {'key max ms':>10} {'del med ms':>10} {'del max ms':>10}"
              f" {'rows':>13} {'numerics tab ms':>15}")
    print(f"{r['case']:>10} {r['nodes']:>7} {r['html_mb']:>8.2f} {r['ready_ms']:>9} {r['painted_ms']:>10}"
          f" {r['keystroke_median_ms']:>10.1f} {r['keystroke_max_ms']:>10.1f}"
          f" {r['delete_median_ms']:>10.1f} {r['delete_max_ms']:>10.1f}"
          f" {str(r['rows_reachable']) + '/' + str(r['rows_expected']):>13}"
          f" {'' if r['numerics_tab_ms'] is None else r['numerics_tab_ms']:>15}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
