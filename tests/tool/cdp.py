"""A minimal Chrome DevTools Protocol client over --remote-debugging-pipe.

Standard library only: Chromium reads commands from file descriptor 3 and
writes replies and events to descriptor 4, one JSON message per
NUL-terminated record. Used by the report's browser check and benchmark to
drive a real headless Chromium (open a page, run JavaScript, wait for it).

    with Browser() as b:
        page = b.new_page(width=1400, height=860)
        page.goto("file:///.../report.html", ready="document.body.dataset.ready === '1'")
        print(page.js("document.title"))
"""
import json
import os
import shutil
import subprocess
import tempfile
import time

from semmap_testlib import budget

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-extensions", "--mute-audio", "--hide-scrollbars",
]


class CdpError(RuntimeError):
    pass


class Browser:
    def __init__(self, chromium="chromium", timeout=120.0):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="semmap-cdp-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # Chromium expects its read end at fd 3 and its write end at fd 4
        # (dup2 to a new number leaves them inheritable; Python's own
        # descriptors are not, so nothing else leaks into the browser).
        def child_fds():
            read_end, write_end = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)
        self.proc = subprocess.Popen(
            [chromium, *CHROMIUM_FLAGS, "--remote-debugging-pipe",
             f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=child_fds, close_fds=False)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self._events = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        try:
            self.send("Browser.close")
        except Exception:  # already gone
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read_message(self, deadline):
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise CdpError("timed out waiting for Chromium")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise CdpError("Chromium closed the debugging pipe")
            self._buffer += chunk
        record, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(record)

    def send(self, method, params=None, session=None):
        self._next_id += 1
        mid = self._next_id
        message = {"id": mid, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + budget(self.timeout)
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == mid:
                if "error" in reply:
                    raise CdpError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self._events.append(reply)

    def new_page(self, width=1400, height=860):
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        page.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        page.send("Page.enable")
        page.send("Runtime.enable")
        return page


class Page:
    def __init__(self, browser, session):
        self.browser, self.session = browser, session

    def send(self, method, params=None):
        return self.browser.send(method, params, self.session)

    def js(self, expression, await_promise=True):
        """Evaluates `expression` in the page and returns its value (JSON)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": await_promise})
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise CdpError(f"page script failed: {text}")
        return result["result"].get("value")

    def goto(self, url, ready, timeout=120.0):
        """Navigates to `url`, then waits until the JavaScript `ready` is true."""
        self.send("Page.navigate", {"url": url})
        deadline = time.monotonic() + budget(timeout)
        while time.monotonic() < deadline:
            try:
                if self.js(f"Boolean({ready})"):
                    return
            except CdpError:
                pass  # the new document is not there yet
            time.sleep(0.02)
        raise CdpError(f"{url}: not ready after {budget(timeout):.0f} s ({ready})")

    def screenshot(self):
        import base64
        return base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"})["data"])
