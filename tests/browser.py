"""A headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe): no
WebDriver, no websocket, no package beyond the standard library. Messages are JSON, each ended
by a NUL byte; the browser reads commands on fd 3 and writes replies and events on fd 4."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

import pytest

CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")


def find_chromium() -> str | None:
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def chromium_or_skip() -> str:
    """The Chromium binary; a skip saying how to get it, or a failure under DUCKRANK_CI=1."""
    path = find_chromium()
    if path:
        return path
    reason = "headless Chromium not found; install Debian's chromium package (apt-get install chromium)"
    if os.environ.get("DUCKRANK_CI") == "1":
        pytest.fail(f"{reason}: CI must run the browser test (DUCKRANK_CI=1)")
    pytest.skip(reason)


class Browser:
    """One headless Chromium with one page; every network request, console message and
    uncaught exception of the page is recorded."""

    def __init__(self, binary: str, width: int = 1280, height: int = 900) -> None:
        self.profile = tempfile.mkdtemp(prefix="duckrank-chromium-")
        to_browser_read, self._write = os.pipe()
        self._read, from_browser_write = os.pipe()
        arguments = [shutil.which(binary) or binary, "--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
                     "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--hide-scrollbars",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--disable-dev-shm-usage", f"--user-data-dir={self.profile}", f"--window-size={width},{height}",
                     "about:blank"]
        # a small launcher puts the browser's ends of the pipes at fd 3 and 4, then becomes the
        # browser (no preexec_fn: this process runs DuckDB's threads)
        launcher = ("import os, sys; r, w = int(sys.argv[1]), int(sys.argv[2]); "
                    "r, w = os.dup(r), os.dup(w); os.dup2(r, 3); os.dup2(w, 4); "
                    "os.set_inheritable(3, True); os.set_inheritable(4, True); os.execv(sys.argv[3], sys.argv[3:])")
        self.process = subprocess.Popen([sys.executable, "-c", launcher, str(to_browser_read), str(from_browser_write),
                                         *arguments],
                                        pass_fds=(to_browser_read, from_browser_write), stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def _receive(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, session: bool = False, timeout: float = 30, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive(timeout)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, event: str, timeout: float = 30) -> dict[str, Any]:
        for seen in self.events:
            if seen.get("method") == event:
                return seen
        while True:
            reply = self._receive(timeout)
            self.events.append(reply)
            if reply.get("method") == event:
                return reply

    def open(self, url: str) -> None:
        self.call("Page.navigate", session=True, url=url)
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True)
        return result["result"].get("value")

    def screenshot(self, full_page: bool = True) -> bytes:
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": full_page}
        if full_page:
            width, height = self.evaluate("[document.documentElement.scrollWidth, "
                                          "document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
        return base64.b64decode(self.call("Page.captureScreenshot", session=True, **params)["data"])

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries of the page."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(" ".join(str(a.get("value", a.get("description"))) for a in params.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                found.append(params["exceptionDetails"].get("text", "exception"))
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                found.append(params["entry"].get("text", ""))
        return found

    def close(self) -> None:
        with contextlib.suppress(Exception):  # the browser may be gone already
            self.call("Browser.close", timeout=5)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._read)
        os.close(self._write)
        shutil.rmtree(self.profile, ignore_errors=True)
