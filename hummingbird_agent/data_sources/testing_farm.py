"""Testing Farm data source: request status from the API, results.xml and test logs from the artifacts
host. Test-log URLs come from results.xml (model-supplied), so only the artifacts prefix is reachable."""

from __future__ import annotations

import dataclasses
import functools
import logging
import re
from typing import Any
from urllib.parse import unquote, unquote_to_bytes, urljoin, urlsplit

import requests

from hummingbird_agent import budgets
from hummingbird_agent.data_sources.http import read_retry, retrying_session
from hummingbird_agent.tools.base import ToolDef, ToolResult
from hummingbird_agent.tools.registry import ToolRegistry

log = logging.getLogger(__name__)
SOURCE = "testing_farm"
DEFAULT_API_URL = "https://api.testing-farm.io"
DEFAULT_ARTIFACTS_BASE = "https://artifacts.osci.redhat.com/testing-farm"
# One immutable policy shared by every session: 429/5xx retried with backoff, honouring Retry-After.
RETRY = read_retry(budgets.TF_MAX_RETRIES, budgets.TF_RETRY_BACKOFF_S)
_REQUEST_ID = {"type": "string", "pattern": r"^[0-9a-fA-F-]{8,64}$",
               "description": "Testing Farm request id (last path component of the tf-request URL)."}
# Encoded '.', '/', '\' and '%' could turn into a traversal after a later decoding step.
_ENCODED_TRICK = re.compile(r"%(2e|2f|5c|25)", re.I)


@dataclasses.dataclass(frozen=True, slots=True)
class TestingFarmClient:
    """Base URLs and the retrying session of the Testing Farm tools."""

    __test__ = False  # not a pytest test class despite the name
    session: requests.Session
    api_url: str = DEFAULT_API_URL
    artifacts_base: str = DEFAULT_ARTIFACTS_BASE
    timeout_s: float = budgets.DATA_SOURCE_HTTP_TIMEOUT_S


def new_session() -> requests.Session:
    return retrying_session(RETRY)


def refusal(url: str, base: str) -> str | None:
    """Why `url` is outside the artifacts prefix `base`, or None when it is inside. Only a plain, normalised
    URL passes: ASCII, no `;`, no userinfo, backslashes, control characters, encoded dots/slashes/percent
    signs or dot segments, before or after one percent-decoding; exact scheme, host and port."""
    reason = _encoding_refusal(url)
    if reason is not None:
        return reason
    try:
        got, want = urlsplit(url), urlsplit(base.rstrip("/"))
        port_ok = got.port == want.port
    except ValueError:
        return "the URL cannot be parsed"
    if got.username is not None or got.password is not None or "@" in got.netloc:
        return "the URL carries user information"
    if (got.scheme.lower(), (got.hostname or "").lower()) != (want.scheme.lower(), (want.hostname or "").lower()):
        return "the host is not the artifacts host"
    if not port_ok:
        return "the port is not the artifacts port"
    if any(part in (".", "..") for part in unquote(got.path).split("/")):
        return "the path has '.' or '..' segments"
    if not got.path.startswith(want.path + "/"):
        return "the path is outside the artifacts prefix"
    return None


def _encoding_refusal(url: str) -> str | None:
    """The URL as written and once percent-decoded must be the same plain ASCII text, bar harmless escapes."""
    # Non-ASCII is refused outright, which also covers NFKC: only non-ASCII text changes under it
    # (full-width dots, ligatures, superscripts).
    if not url.isascii():
        return "the URL contains non-ASCII characters"
    if _ENCODED_TRICK.search(url):
        return "the URL contains percent-encoded dots, slashes, backslashes or percent signs"
    try:
        decoded = unquote_to_bytes(url).decode("ascii")
    except UnicodeDecodeError:
        return "the URL decodes to non-ASCII bytes (such as overlong UTF-8)"
    if ";" in decoded:
        return "the URL contains ';' (path parameters)"
    if " " in url or "\\" in decoded or any(ord(ch) < 32 or ord(ch) == 127 for ch in decoded):
        return "the URL contains backslashes, whitespace or control characters"
    return None


def _get(client: TestingFarmClient, url: str) -> requests.Response | ToolResult:
    """GET inside the artifacts prefix, following redirects only while they stay inside it."""
    for _ in range(budgets.TF_MAX_REDIRECTS + 1):
        reason = refusal(url, client.artifacts_base)
        if reason is not None:
            log.warning("testing farm url refused reason=%s", reason)
            return ToolResult.error("forbidden_url", f"refused: {reason}; only URLs under {client.artifacts_base}/ "
                                    "are allowed")
        resp = client.session.get(url, timeout=client.timeout_s, allow_redirects=False)
        if not resp.is_redirect:
            return resp
        url = urljoin(url, resp.headers.get("Location", ""))
        resp.close()
    return ToolResult.error("forbidden_url", f"more than {budgets.TF_MAX_REDIRECTS} redirects")


def _text(resp: requests.Response | ToolResult, what: str) -> str | ToolResult:
    if isinstance(resp, ToolResult):
        return resp
    if resp.status_code == 404:
        return ToolResult.error("not_found", f"{what} does not exist (not produced yet, or expired)")
    if resp.status_code != 200:
        return ToolResult.error("unavailable", f"{what}: HTTP {resp.status_code}")
    resp.encoding = resp.encoding or "utf-8"
    return resp.text


def get_results(client: TestingFarmClient, request_id: str) -> str | ToolResult:
    """results.xml of a request (JUnit-like XML)."""
    url = f"{client.artifacts_base.rstrip('/')}/{request_id}/results.xml"
    return _text(_get(client, url), f"results.xml of request {request_id}")


def get_test_log(client: TestingFarmClient, url: str) -> str | ToolResult:
    """A log linked from results.xml; nothing outside the artifacts prefix is fetched."""
    return _text(_get(client, url), "the log")


def get_request_status(client: TestingFarmClient, request_id: str) -> dict[str, Any] | ToolResult:
    """State, overall result and queue/run times of a request."""
    resp = client.session.get(f"{client.api_url.rstrip('/')}/v0.1/requests/{request_id}", timeout=client.timeout_s)
    if resp.status_code == 404:
        return ToolResult.error("not_found", f"Testing Farm request {request_id} does not exist")
    if resp.status_code != 200:
        return ToolResult.error("unavailable", f"Testing Farm request {request_id}: HTTP {resp.status_code}")
    data = resp.json()
    result, run = data.get("result") or {}, data.get("run") or {}
    return {
        "id": data.get("id"), "state": data.get("state"), "overall_result": result.get("overall"),
        "summary": result.get("summary"), "queued_time_s": data.get("queued_time"),
        "run_time_s": data.get("run_time"), "created": data.get("created"), "updated": data.get("updated"),
        "artifacts": run.get("artifacts"), "notes": data.get("notes") or [],
    }


def _schema(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


RESULTS_NOTES = """\
results.xml structure: //testsuites/@overall-result; //testsuite (@name, @result, @tests, @stage);
//testcase/@result (and @name, @time; a <failure/> child when failed); //testcase/logs/log with @name
(testout.log, failures.yaml, data...) and @href (pass an href to tf_get_test_log). Parse it in the
sandbox with python3 xml.etree.ElementTree, not sed/awk."""

TOOL_DEFS = (
    ToolDef("tf_get_results", "Testing Farm results.xml (JUnit-like) of a request.",
            _schema({"request_id": _REQUEST_ID}), get_results, notes=RESULTS_NOTES),
    ToolDef("tf_get_test_log", "A Testing Farm test log by URL (an href from results.xml); only URLs under the "
            "artifacts base are allowed.",
            _schema({"url": {"type": "string", "maxLength": 2048, "description": "Log URL from results.xml."}}),
            get_test_log),
    ToolDef("tf_get_request_status", "Testing Farm request state (queued, running, complete, error), overall "
            "result and queue/run times.", _schema({"request_id": _REQUEST_ID}), get_request_status),
)

TOOL_NOTES = """\
A Testing Farm request id is the last path component of the tf-request result of the scheduler TaskRun
(<pipelinerun>-scheduler-*). Artifacts: <artifacts_base>/<request_id>/ (results.xml, pipeline.log).
Link a request as [<request_id>](<artifacts_base>/<request_id>/) with artifacts_base from the metadata."""


def register(registry: ToolRegistry, api_url: str = DEFAULT_API_URL,
             artifacts_base: str = DEFAULT_ARTIFACTS_BASE) -> None:
    """Register the Testing Farm tools with one retrying session bound in."""
    client = TestingFarmClient(new_session(), api_url, artifacts_base.rstrip("/"))
    tools = [dataclasses.replace(t, handler=functools.partial(t.handler, client)) for t in TOOL_DEFS]
    registry.register_data_source(SOURCE, tools, TOOL_NOTES, {"artifacts_base": client.artifacts_base})
