"""A pipeline's unit test report as the triage compares it: per suite, its failed cases (with their first trace
line), its passed cases, and whether every failed case was listed. A case is known by its suite, classname and name.

GitLab makes a pipeline's report from the latest attempt of each job that uploaded a junit artifact, one suite per
job named after it; a parallel job's shards (`unit 1/3`, `unit 2/3`) share the suite of their group name (`unit`),
so a shard's failed cases cannot be told from its siblings': the triage gives each failed shard the whole suite's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.logs.signature import signature

CaseKey = tuple[str, str]
"""(classname, name) of a test case within its suite."""
FAILED = frozenset({"failed", "error"})
# A parallel job's shard suffix ("unit 2/3"): GitLab files its report under the group's name.
_SHARD = re.compile(r"\s+\d+/\d+\s*$")


def suite_names(job: str) -> tuple[str, ...]:
    """The suite names a job's report may be filed under: its own name, then its parallel group's."""
    group = _SHARD.sub("", job).strip()
    return (job,) if group == job else (job, group)


@dataclass(frozen=True, slots=True)
class Suite:
    name: str
    failed: Mapping[CaseKey, str] = field(default_factory=dict)
    """Failed or erroring cases, each with the first line of its stack trace or output."""
    passed: frozenset[CaseKey] = frozenset()
    failed_count: int = 0
    """GitLab's count of failed and erroring cases: more than `failed` lists means some were not read."""
    error: str = ""
    """GitLab's `suite_error`: the junit file could not be parsed, so the suite lists nothing."""
    build_ids: frozenset[int] = frozenset()
    """The jobs whose reports make the suite (a parallel job's shards share one suite)."""
    traces: frozenset[str] = frozenset()
    """Signatures of the failed cases' trace lines: what of a log the cases account for."""

    @property
    def whole(self) -> bool:
        """Whether every failed case of the suite was listed."""
        return not self.error and len(self.failed) >= self.failed_count

    def status(self, key: CaseKey) -> str:
        """"failed", "success", or "" when the case is not listed (absent, skipped, or beyond a cut)."""
        return "failed" if key in self.failed else "success" if key in self.passed else ""


@dataclass(frozen=True, slots=True)
class Report:
    """The suites of one pipeline's report that the triage asked for; `cut` says why it is not whole (a case not
    found in a cut report may be among what was not read)."""

    pipeline: Mapping[str, Any]
    suites: Mapping[str, Suite] = field(default_factory=dict)
    cut: str = ""
    bytes_read: int = 0

    def suite(self, job: str) -> Suite | None:
        return next((self.suites[n] for n in suite_names(job) if n in self.suites), None)

    def status(self, job: str, key: CaseKey) -> str:
        found = self.suite(job)
        return found.status(key) if found is not None else ""


def _first_line(text: Any) -> str:
    return next((line.strip() for line in str(text or "").splitlines() if line.strip()), "")


def _suite(entry: Mapping[str, Any]) -> Suite:
    failed: dict[CaseKey, str] = {}
    passed: set[CaseKey] = set()
    traces: list[str] = []
    for case in entry.get("cases") or []:
        key = (str(case.get("classname") or ""), str(case.get("name") or ""))
        if case.get("status") in FAILED:
            failed.setdefault(key, _first_line(case.get("trace")))
            traces.append(str(case.get("trace") or ""))
        elif case.get("status") == "success":
            passed.add(key)
    count = int(entry.get("failed_count") or 0) + int(entry.get("error_count") or 0)
    builds = frozenset(int(b) for b in entry.get("build_ids") or [] if str(b).isdigit())
    return Suite(str(entry.get("name") or ""), failed, frozenset(passed - failed.keys()), count,
                 str(entry.get("suite_error") or ""), builds,
                 trace_signatures(traces, budgets.TRIAGE_TRACE_LINES_PER_CASE))


def report_of(pipeline: Mapping[str, Any], output: Mapping[str, Any]) -> Report:
    """The report from the read tool's output (`gitlab_get_pipeline_test_report`)."""
    suites = {s.name: s for s in map(_suite, output.get("suites") or []) if s.name}
    return Report(pipeline, suites, str(output.get("cut") or ""), int(output.get("bytes_read") or 0))


def trace_signatures(traces: list[str], per_case: int) -> frozenset[str]:
    """The signatures of the first `per_case` non-blank lines of each failed case's trace."""
    out: set[str] = set()
    for trace in traces:
        lines = [signature(line) for line in trace.splitlines() if line.strip()]
        out.update(line for line in lines[:per_case] if line)
    return frozenset(out)
