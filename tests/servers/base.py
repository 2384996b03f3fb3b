"""Shared core of the fake HTTP servers: a threaded server on 127.0.0.1 with an ephemeral port,
regex routes, a record of every request, injected failures and hangs, and chunked streaming responses."""

from __future__ import annotations

import json
import logging
import re
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.servers.messages import Handler, HTTPError, Request, Response, json_response

__all__ = ["FakeHTTPServer", "HTTPError", "Handler", "Request", "Response", "chunked", "json_response"]
logger = logging.getLogger(__name__)


@dataclass(slots=True)
class _Failure:
    remaining: int
    status: int
    path: re.Pattern[str] | None
    method: str | None
    body: bytes
    headers: dict[str, str]
    after: bool = False
    hang_s: float = 0.0

    def applies(self, req: Request) -> bool:
        if self.method and req.method != self.method:
            return False
        return self.path is None or bool(self.path.search(unquote(req.path)))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default listen backlog of 5 drops concurrent connects, which then wait a 1 s SYN retransmit.
    request_queue_size = 128
    # Keep-alive connections of clients that never close must not block stop().
    block_on_close = False

    def __init__(self, app: FakeHTTPServer) -> None:
        super().__init__(("127.0.0.1", 0), _RequestHandler)
        self.app = app
        self.open_sockets: set[socket.socket] = set()

    def finish_request(self, request: Any, client_address: Any) -> None:
        self.open_sockets.add(request)
        try:
            super().finish_request(request, client_address)
        finally:
            self.open_sockets.discard(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client dropping its connection is normal for a test server; anything else is a bug here.
        logger.debug("connection from %s ended with an error", client_address, exc_info=True)


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; with Nagle on, each response waits ~40 ms for an ACK.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s " + format, self.server.app.name, *args)

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        split = urlsplit(self.path)
        req = Request(
            method=self.command,
            path=split.path,
            query=parse_qs(split.query, keep_blank_values=True),
            headers=dict(self.headers.items()),
            body=body,
        )
        self._write(self.server.app.dispatch(req))

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _serve

    def _write(self, resp: Response) -> None:
        if resp.delay_s:
            time.sleep(resp.delay_s)
        self.send_response(resp.status)
        for name, value in resp.headers.items():
            self.send_header(name, value)
        if isinstance(resp.body, bytes | bytearray):
            self.send_header("Content-Length", str(len(resp.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(resp.body)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for chunk in resp.body:
            if chunk:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


class FakeHTTPServer:
    """Base of every fake: subclasses register routes in `__init__` and may override `authorize`.

    Routes match the raw path with `re.fullmatch`; named groups are passed to the handler as
    keyword arguments, percent-decoded.
    """

    name = "fake"

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.errors: list[str] = []
        self._routes: list[tuple[str, re.Pattern[str], Handler]] = []
        self._failures: list[_Failure] = []
        self._in_progress = 0
        self._lock = threading.RLock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.tls: ssl.SSLContext | None = None  # set before start() to serve https

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> FakeHTTPServer:
        self._server = _Server(self)
        if self.tls is not None:  # https: each accepted connection does the handshake first
            self._server.socket = self.tls.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True,
            name=f"{self.name}-server",
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        for sock in list(self._server.open_sockets):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                logger.debug("socket already closed")
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None

    def __enter__(self) -> FakeHTTPServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """Base URL, e.g. http://127.0.0.1:40123 (no trailing slash)."""
        if self._server is None:
            raise RuntimeError(f"{self.name} server is not started")
        host, port = self._server.server_address[:2]
        return f"{'https' if self.tls else 'http'}://{host}:{port}"

    # --- configuration -----------------------------------------------------------------------
    def route(self, method: str, pattern: str, handler: Handler) -> None:
        """Register a route; later registrations win, so subclasses and tests can override."""
        self._routes.insert(0, (method, re.compile(pattern), handler))

    def fail_next(
        self, count: int = 1, status: int = 500, *, path: str | None = None, method: str | None = None,
        body: bytes | dict[str, Any] | None = None, headers: dict[str, str] | None = None,
        after: bool = False,
    ) -> None:
        """Answer the next `count` matching requests with `status`; `path` is a regex searched in
        the decoded path. With `after`, the request is carried out first (a proxy timing out after the
        server wrote), so only the answer is lost."""
        payload = self.error_body(status, "injected failure") if body is None else body
        if isinstance(payload, dict):
            payload = json.dumps(payload).encode()
        headers = {"Content-Type": "application/json"} | (headers or {})
        pattern = re.compile(path) if path else None
        with self._lock:
            self._failures.append(_Failure(count, status, pattern, method, payload, headers, after))

    def hang_next(self, count: int = 1, *, hang_s: float, path: str | None = None, method: str | None = None,
                  after: bool = True) -> None:
        """Hold the next `count` matching requests for `hang_s` (longer than the client's read timeout), then
        answer as usual, when the client has given up. With `after`, the request is carried out at once and
        only its answer hangs (the write committed, the connection stalled); without it, it is carried out at
        the end of the hang (the server still at work after the client gave up: a late commit)."""
        pattern = re.compile(path) if path else None
        with self._lock:
            self._failures.append(_Failure(count, 0, pattern, method, b"", {}, after, hang_s))

    @property
    def in_progress(self) -> int:
        """Requests received and not yet carried out (such as a late commit of `hang_next` still to come)."""
        with self._lock:
            return self._in_progress

    def clear_failures(self) -> None:
        """Drop every injected failure not used up yet (the outage is over)."""
        with self._lock:
            self._failures.clear()

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        """The JSON error shape of the faked API; subclasses override."""
        return {"message": f"{status} {message}"}

    def error(self, status: int, message: str) -> Response:
        return json_response(self.error_body(status, message), status)

    # --- request handling --------------------------------------------------------------------
    def authorize(self, req: Request) -> Response | None:
        """Return a response to refuse the request, None to let it through."""
        return None

    def dispatch(self, req: Request) -> Response:
        with self._lock:
            self.requests.append(req)
            injected = self._take_failure(req)
            self._in_progress += 1
        try:
            return self._respond(req, injected)
        finally:
            with self._lock:
                self._in_progress -= 1

    def _respond(self, req: Request, injected: _Failure | None) -> Response:
        if injected is not None and injected.hang_s:
            return self._hung(req, injected)
        if injected is not None and not injected.after:
            return Response(injected.status, injected.body, dict(injected.headers))
        answer = self._answer(req)
        if injected is not None:
            return Response(injected.status, injected.body, dict(injected.headers))
        return answer

    def _hung(self, req: Request, hang: _Failure) -> Response:
        if hang.after:
            answer = self._answer(req)
            answer.delay_s = hang.hang_s  # slept in _write: the effect is already there
            return answer
        time.sleep(hang.hang_s)  # outside the lock: other requests are served meanwhile
        return self._answer(req)

    def _answer(self, req: Request) -> Response:
        refused = self.authorize(req)
        if refused is not None:
            return refused
        for method, pattern, handler in self._routes:
            match = pattern.fullmatch(req.path)
            if match and method == req.method:
                return self._call(handler, req, match)
        return self.error(404, f"no fake route for {req.method} {req.path}")

    def _take_failure(self, req: Request) -> _Failure | None:
        for failure in self._failures:
            if failure.remaining > 0 and failure.applies(req):
                failure.remaining -= 1
                return failure
        return None

    def _call(self, handler: Handler, req: Request, match: re.Match[str]) -> Response:
        params = {k: unquote(v) for k, v in match.groupdict().items() if v is not None}
        try:
            with self._lock:
                return handler(req, **params)
        except HTTPError as exc:
            return self.error(exc.status, exc.message)
        except Exception as exc:  # boundary: a bug in the fake must surface as a 500 and in .errors
            logger.exception("%s route failed for %s %s", self.name, req.method, req.path)
            self.errors.append(f"{req.method} {req.path}: {exc!r}")
            return self.error(500, f"fake server error: {exc!r}")

    def requests_to(self, pattern: str, method: str | None = None) -> list[Request]:
        """Recorded requests whose decoded path matches the regex `pattern` (searched)."""
        rx = re.compile(pattern)
        with self._lock:
            return [
                r for r in self.requests
                if rx.search(unquote(r.path)) and (method is None or r.method == method)
            ]


def chunked(data: bytes, size: int) -> Iterator[bytes]:
    """Split bytes into chunks of `size` for a streamed response."""
    for start in range(0, len(data), size):
        yield data[start:start + size]
