"""Logging format, context fields, secret redaction, and Sentry delivery with scrubbing."""

from __future__ import annotations

import gzip
import io
import json
import logging
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import sentry_sdk

from hummingbird_agent.observability import log_context, setup_logging, setup_sentry

SECRET = "glpat-SECRET-token-value-123"


@pytest.fixture
def restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_json_lines_carry_context_and_redact(restore_root_logger: None) -> None:
    out = io.StringIO()
    setup_logging("INFO", secrets=[SECRET], stream=out, json_lines=True)
    log = logging.getLogger("hummingbird_agent.test")
    with log_context(session_id="s-1", project="g/p", mr_iid=7):
        log.info("fetched with token %s", SECRET)
    log.info("outside")
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["session_id"] == "s-1" and first["project"] == "g/p" and first["mr_iid"] == 7
    assert SECRET not in out.getvalue()
    assert first["msg"] == "fetched with token [redacted]"
    assert "session_id" not in second


def test_text_lines_for_a_terminal(restore_root_logger: None) -> None:
    out = io.StringIO()
    setup_logging("DEBUG", secrets=[SECRET], stream=out, json_lines=False)
    with log_context(workflow="review-mr"):
        logging.getLogger("x").warning("token=%s", SECRET)
    line = out.getvalue().strip()
    assert "WARNING" in line and "workflow=review-mr" in line and SECRET not in line


QUOTED = 'pass"word\\with\'quotes-123'


@pytest.mark.parametrize("json_lines", [True, False], ids=["json", "text"])
def test_a_secret_with_quotes_and_backslashes_appears_in_no_form(restore_root_logger: None, json_lines: bool) -> None:
    # JSON escapes `"` and `\\`; %r and the repr inside a dict or an exception escape `\\` and a quote.
    out = io.StringIO()
    setup_logging("INFO", secrets=[QUOTED], stream=out, json_lines=json_lines)
    log = logging.getLogger("hummingbird_agent.test")
    with log_context(project=QUOTED):
        log.info("plain %s", QUOTED)
        log.info("repr %r", QUOTED)
        log.info("in a structure %s", {"token": QUOTED, "list": [QUOTED]})
        log.info("json inside %s", json.dumps({"token": QUOTED}))
        log.info(f"in the message itself {QUOTED}")  # noqa: G004 - a caller's mistake must not leak either
        try:
            raise KeyError(QUOTED)
        except KeyError:
            log.exception("failed")
    text = out.getvalue()
    forms = [QUOTED, json.dumps(QUOTED)[1:-1], repr(QUOTED)[1:-1], json.dumps(json.dumps(QUOTED))[1:-1]]
    assert [form for form in forms if form in text] == []
    assert text.count("[redacted]") >= 8


class _Collector(BaseHTTPRequestHandler):
    bodies: list[bytes] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        type(self).bodies.append(body)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        return None


def test_sentry_event_arrives_scrubbed(restore_root_logger: None) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        redact = setup_logging("INFO", secrets=[SECRET], stream=io.StringIO())
        assert setup_sentry(None, redact) is False
        dsn = f"http://publickey@127.0.0.1:{server.server_port}/1"
        assert setup_sentry(dsn, redact, environment="test") is True
        sentry_sdk.capture_message(f"failure while using {SECRET}")
        sentry_sdk.flush(timeout=10)
    finally:
        sentry_sdk.get_client().close(timeout=2)
        server.shutdown()
        server.server_close()
    payload = b"\n".join(_Collector.bodies).decode()
    assert "failure while using [redacted]" in payload
    assert SECRET not in payload


def test_the_lines_operations_says_to_alert_on_are_logged_at_error() -> None:
    """docs/operations.md names log lines to alert on; each is the start of an ERROR (or exception) line in the
    code, so it appears at the default level."""
    repo = Path(__file__).resolve().parents[1]
    section = (repo / "docs/operations.md").read_text().split("Lifecycle lines to alert on:", 1)[1].split("##")[0]
    named = re.findall(r"`([a-z][a-z :]+)` \(ERROR", section.replace("\n", " "))
    assert len(named) == 3, named
    source = "\n".join(p.read_text() for p in (repo / "hummingbird_agent").rglob("*.py"))
    for line in named:
        assert re.search(rf"log(?:ger)?\.(?:error|exception)\(\s*\"{re.escape(line)}", source), line
