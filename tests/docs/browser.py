"""Headless Chromium (Debian's package) driven over the DevTools protocol on a pipe (fds 3 and 4: no debugging
port), and a 127.0.0.1 server for a built site that records every request it answers. Host names resolve to
nothing in this browser, so a page asking for anything beyond the site's own server fails to reach it, and the
requests the browser saw are kept to prove it did not ask."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

BINARY = shutil.which("chromium")
VIEWPORT = {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False}
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--remote-debugging-pipe",
              # Every host name resolves to nothing; only 127.0.0.1, the site's own server, is reached.
         "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")
QUIET_ROUNDS = 3  # waits in a row without a new request before a page counts as loaded (its scripts fetch more)


@dataclass
class Page:
    """What one page load left: every URL the browser requested, those that failed, and evaluated values."""

    url: str
    requested: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


class Chromium:
    """One browser process; `open` loads a page in a fresh tab and returns what it requested."""

    def __init__(self, profile: Path) -> None:
        self._profile = profile
        self._next_id = 0
        self._buffer = b""
        self._events: list[dict[str, Any]] = []

    def __enter__(self) -> Chromium:
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def pipes() -> None:  # the protocol's fixed descriptors: the browser reads 3 and writes 4
            read, write = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_browser_r, from_browser_w))
            os.dup2(read, 3)  # moved above 10 first, so neither end is overwritten by the other's dup2
            os.dup2(write, 4)

        assert BINARY is not None
        self._process = subprocess.Popen(  # noqa: S603 - the Debian binary, fixed flags
            [BINARY, *FLAGS, f"--user-data-dir={self._profile}", "about:blank"], preexec_fn=pipes,
            pass_fds=(3, 4), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            self.call("Browser.close")
        self._process.wait(timeout=60)
        os.close(self._to_browser)
        os.close(self._from_browser)

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_browser, 65536)
            if not chunk:
                raise OSError("chromium closed its protocol pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        parsed: dict[str, Any] = json.loads(message)
        return parsed

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        request: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            request["sessionId"] = session
        os.write(self._to_browser, json.dumps(request).encode() + b"\0")
        while True:
            message = self._read()
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self._events.append(message)

    def open(self, url: str) -> tuple[Page, str]:
        """Load `url` in a new tab at 1,280 px; return once its load event came and its scripts stopped starting
        requests (the count unchanged over `QUIET_ROUNDS` short waits in the page)."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Network.enable", "Page.enable"):
            self.call(domain, session)
        self.call("Emulation.setDeviceMetricsOverride", session, **VIEWPORT)
        self._events.clear()
        self.call("Page.navigate", session, url=url)
        while not any(e.get("method") == "Page.loadEventFired" for e in self._events):
            self._events.append(self._read())
        quiet, seen = 0, -1
        while quiet < QUIET_ROUNDS:
            self.evaluate(session, "new Promise(done => setTimeout(done, 100))")
            count = sum(e.get("method") == "Network.requestWillBeSent" for e in self._events)
            quiet, seen = (quiet + 1 if count == seen else 0), count
        page = Page(url)
        for event in self._events:
            _record(page, event)
        return page, session

    def evaluate(self, session: str, expression: str) -> Any:
        done = self.call("Runtime.evaluate", session, expression=expression, returnByValue=True, awaitPromise=True)
        return done["result"].get("value")


def _record(page: Page, event: dict[str, Any]) -> None:
    params = event.get("params", {})
    if event.get("method") == "Network.requestWillBeSent":
        page.requested.append(params["request"]["url"])
    elif event.get("method") == "Network.loadingFailed" and not params.get("canceled"):
        page.failed.append(params.get("errorText", "failed"))


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """The server's requests are counted by the browser; no log lines."""


@contextlib.contextmanager
def serve(site: Path) -> Iterator[str]:
    """The built site at http://127.0.0.1:PORT/ until the block ends."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
