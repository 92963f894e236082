"""A headless chromium driven over the Chrome DevTools Protocol, for tests of HTML pages.

Debian's `chromium` (apt-get install chromium; .ci/run installs it where apt can) is started
with --remote-debugging-port on 127.0.0.1 and a fresh profile; websocket-client speaks the
protocol. Every console error and uncaught exception of the page is collected (`errors`).
`chromium_or_skip()` skips a test, saying why, when no chromium is found.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

# Where a test writes what a person may want to look at (screenshots); git-ignored.
OUTPUT = Path(__file__).resolve().parent / "output"
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
START_TIMEOUT_S = 60.0
CALL_TIMEOUT_S = 60.0


def find_chromium() -> str | None:
    """RUBRICLAB_CHROMIUM, else the first of CANDIDATES on PATH."""
    named = os.environ.get("RUBRICLAB_CHROMIUM")
    if named:
        return named if Path(named).is_file() else None
    return next((path for path in map(shutil.which, CANDIDATES) if path), None)


def chromium_or_skip() -> str:
    binary = find_chromium()
    if binary is None:
        pytest.skip("no chromium binary found (tried RUBRICLAB_CHROMIUM and "
                    f"{', '.join(CANDIDATES)} on PATH): `apt-get install chromium` runs the "
                    "browser tests")
    try:
        import websocket  # noqa: F401
    except ImportError:
        pytest.skip("websocket-client is not installed (pip install -e .[test])")
    return binary


class Chromium:
    """with Chromium(binary) as browser: browser.open(path); browser.evaluate(js) ..."""

    def __init__(self, binary: str, width: int = 1400, height: int = 1000):
        self.binary, self.width, self.height = binary, width, height
        self.errors: list[str] = []
        self._id = 0

    def __enter__(self) -> Chromium:
        import websocket

        self._profile = tempfile.TemporaryDirectory(prefix="rubriclab-chromium-")
        profile = Path(self._profile.name)
        self._process = subprocess.Popen(
            [self.binary, "--headless=new", "--no-sandbox", "--disable-gpu",
             "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking",
             "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
             f"--user-data-dir={profile}", f"--window-size={self.width},{self.height}",
             "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            port = self._port(profile / "DevToolsActivePort")
            url = self._page_socket(port)
            self._socket = websocket.create_connection(url, timeout=CALL_TIMEOUT_S,
                                                       suppress_origin=True)
            for domain in ("Page", "Runtime", "Log"):
                self.call(f"{domain}.enable")
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def _stop(self) -> None:
        socket = getattr(self, "_socket", None)
        if socket is not None:
            socket.close()
        self._process.terminate()
        try:
            self._process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=20)
        # chromium's helper processes may still write the profile a moment after it exits
        # ("Directory not empty: 'Default'"): try again until a deadline
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                self._profile.cleanup()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def _port(self, active_port: Path) -> int:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"{self.binary} exited with {self._process.returncode} "
                                   "before opening its debugging port")
            if active_port.is_file():
                first = active_port.read_text().split("\n", 1)[0].strip()
                if first.isdigit():
                    return int(first)
            time.sleep(0.1)
        raise RuntimeError(f"{self.binary} wrote no {active_port.name} in {START_TIMEOUT_S} s")

    @staticmethod
    def _page_socket(port: int) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list",
                                    timeout=CALL_TIMEOUT_S) as answer:
            targets = json.load(answer)
        pages = [t for t in targets if t.get("type") == "page"]
        if not pages:
            raise RuntimeError(f"chromium has no page target: {targets}")
        return pages[0]["webSocketDebuggerUrl"]

    # --- the protocol ---------------------------------------------------------------------

    def call(self, method: str, **params) -> dict:
        self._id += 1
        self._socket.send(json.dumps({"id": self._id, "method": method, "params": params}))
        return self._receive(lambda m: m.get("id") == self._id, method)

    def _receive(self, done, what: str) -> dict:
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while time.monotonic() < deadline:
            message = json.loads(self._socket.recv())
            self._note(message)
            if done(message):
                if "error" in message:
                    raise RuntimeError(f"{what}: {message['error']}")
                return message.get("result", message.get("params", {}))
        raise TimeoutError(f"no answer to {what} in {CALL_TIMEOUT_S} s")

    def _note(self, message: dict) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Page.loadEventFired":
            self._loaded = True
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            self.errors.append("exception: " + details.get("exception", {}).get(
                "description", details.get("text", "")))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append("console.error: " + " ".join(
                str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            self.errors.append(f"log: {params['entry'].get('text', '')}")

    # --- what tests use -------------------------------------------------------------------

    def open(self, path: Path) -> None:
        """Load a file and wait for its load event."""
        self._loaded = False
        self.call("Page.navigate", url=Path(path).resolve().as_uri())
        if not self._loaded:  # it may come before the answer to Page.navigate
            self._receive(lambda m: self._loaded, "Page.loadEventFired")

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise RuntimeError(f"{expression!r} threw: "
                               f"{details.get('exception', {}).get('description', details)}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path
