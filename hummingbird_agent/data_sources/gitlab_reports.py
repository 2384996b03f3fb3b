"""GitLab's unit test reports of a pipeline (read token): the `test_report` streamed and cut at a byte and a case
bound, its suites' counts and their cases (status, classname, name, file, the start of the stack trace); and the
small `test_report_summary`. GitLab builds a pipeline's report from the latest attempt of each job that uploaded a
junit artifact, one suite per job (a parallel job's shards `name 1/3` share the suite `name`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import gitlab
import ijson
import requests

from hummingbird_agent import budgets
from hummingbird_agent.data_sources.gitlab_api import call, project_of
from hummingbird_agent.tools.base import ToolResult

_SUITE_COUNTS = ("total_count", "success_count", "failed_count", "skipped_count", "error_count")
_CASE_TEXT = ("status", "classname", "name", "file")
_CASE_TRACES = ("stack_trace", "system_output")
_SUITE = "test_suites.item"
_CASE = "test_suites.item.test_cases.item"


class _Capped:
    """A file-like view of a streamed body that stops at `limit` bytes (what ijson reads from)."""

    def __init__(self, chunks: Iterator[bytes], limit: int) -> None:
        self._chunks, self.limit, self.read_bytes, self.cut = chunks, limit, 0, False

    def read(self, size: int = -1) -> bytes:
        if size == 0:  # ijson's probe of the stream's type
            return b""
        if self.read_bytes >= self.limit:
            self.cut = self.cut or next(self._chunks, b"") != b""
            return b""
        chunk = next(self._chunks, b"")
        if self.read_bytes + len(chunk) > self.limit:
            chunk, self.cut = chunk[: self.limit - self.read_bytes], True
        self.read_bytes += len(chunk)
        return chunk


@dataclass(slots=True)
class _Parse:
    """The report as its events arrive: suites kept (those `wanted`, all when empty), cases up to `max_cases`."""

    wanted: frozenset[str]
    statuses: frozenset[str]
    max_cases: int
    suites: list[dict[str, Any]] = field(default_factory=list)
    kept: int = 0
    case: dict[str, Any] | None = None

    def event(self, prefix: str, kind: str, value: Any) -> None:
        if prefix == _SUITE and kind == "start_map":
            self.suites.append({"name": "", "cases": [], "cases_not_listed": 0})
        elif prefix == _CASE and kind == "start_map":
            self.case = {}
        elif prefix == _CASE and kind == "end_map":
            self._end_case()
        elif self.case is not None and prefix.startswith(_CASE + "."):
            self._case_field(prefix[len(_CASE) + 1:], value)
        elif prefix == _SUITE + ".build_ids.item" and self.suites and kind == "number":
            self.suites[-1].setdefault("build_ids", []).append(int(value))
        elif prefix.startswith(_SUITE + ".") and self.suites and kind in ("string", "number", "null"):
            self._suite_field(prefix[len(_SUITE) + 1:], value)

    def _suite_field(self, key: str, value: Any) -> None:
        if key in _SUITE_COUNTS:
            self.suites[-1][key] = int(value or 0)
        elif key in ("name", "suite_error"):
            self.suites[-1][key] = value

    def _case_field(self, key: str, value: Any) -> None:
        assert self.case is not None
        if key in _CASE_TEXT and (value is None or isinstance(value, str)):
            self.case[key] = value
        elif key in _CASE_TRACES and isinstance(value, str) and not self.case.get("trace"):
            self.case["trace"] = value[: budgets.TRIAGE_REPORT_TRACE_CHARS]

    def _end_case(self) -> None:
        case, self.case, suite = self.case or {}, None, self.suites[-1]
        if (self.wanted and suite["name"] not in self.wanted) or (self.statuses and case.get("status")
                                                                  not in self.statuses):
            return
        if self.kept >= self.max_cases:
            suite["cases_not_listed"] += 1
            return
        self.kept += 1
        suite["cases"].append(case)

    def output(self, pipeline_id: int, body: _Capped, problem: str) -> dict[str, Any]:
        suites = [s for s in self.suites if not self.wanted or s["name"] in self.wanted]
        return {"pipeline_id": pipeline_id, "suites": suites, "bytes_read": body.read_bytes,
                "truncated": bool(problem) or any(s["cases_not_listed"] for s in suites), "cut": problem}


def get_pipeline_test_report(gl: gitlab.Gitlab, project: str, pipeline_id: int, suites: list[str] | None = None,
                             statuses: list[str] | None = None, max_cases: int = budgets.TRIAGE_REPORT_MAX_CASES,
                             max_bytes: int = budgets.TRIAGE_REPORT_MAX_BYTES) -> dict[str, Any] | ToolResult:
    """The pipeline's unit test report: per suite its counts and cases (`suites`: only these; `statuses`: only cases
    in these states), at most `max_cases` cases and `max_bytes` of the report read; `cut` says why it is not whole.
    A pipeline whose jobs uploaded no report has no suites."""
    def fetch() -> dict[str, Any]:
        manager = project_of(gl, project).pipelines.get(pipeline_id, lazy=True).test_report
        response = cast(requests.Response, gl.http_get(manager.path, streamed=True, raw=True))
        body = _Capped(response.iter_content(chunk_size=budgets.STREAM_CHUNK_BYTES), max_bytes)
        parse = _Parse(frozenset(suites or ()), frozenset(statuses or ()), max_cases)
        problem = ""
        try:
            for prefix, kind, value in ijson.parse(body):
                parse.event(prefix, kind, value)
        except ijson.IncompleteJSONError:
            problem = f"the report was read only up to {_size(max_bytes)}" if body.cut else "the report ended early"
        finally:
            response.close()
        if body.cut and not problem:
            problem = f"the report was read only up to {_size(max_bytes)}"
        if not problem and parse.kept >= max_cases and any(s["cases_not_listed"] for s in parse.suites):
            problem = f"only {max_cases} test cases were listed"
        return parse.output(pipeline_id, body, problem)

    return call(f"test report of pipeline {pipeline_id} in {project}", fetch)


def _size(size: int) -> str:
    return f"{size / 2**20:g} MiB" if size >= 2**20 else f"{size / 2**10:g} KiB"


def get_pipeline_test_report_summary(gl: gitlab.Gitlab, project: str, pipeline_id: int) -> dict[str, Any] | ToolResult:
    """Counts of the pipeline's test report, in total and per suite (with the ids of the jobs that made it)."""
    def fetch() -> dict[str, Any]:
        summary = project_of(gl, project).pipelines.get(pipeline_id, lazy=True).test_report_summary.get()
        found = summary.asdict()
        return {"total": found.get("total") or {}, "test_suites": [
            {k: s.get(k) for k in ("name", *_SUITE_COUNTS, "build_ids", "suite_error")}
            for s in found.get("test_suites") or [] if isinstance(s, dict)]}

    return call(f"test report summary of pipeline {pipeline_id} in {project}", fetch)
