"""The fake GitLab's pipeline test reports, built as GitLab builds them from the junit reports the latest attempt
of each job uploaded: suites, their cases in GitLab's order, counts, and a suite GitLab could not parse."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# A test case's states, in the order a suite lists them (Gitlab::Ci::Reports::TestCase::STATUS_TYPES,
# lib/gitlab/ci/reports/test_case.rb; TestSuite#sort_by_status, lib/gitlab/ci/reports/test_suite.rb).
CASE_STATUSES = ("error", "failed", "success", "skipped")
_COUNTED = {status: f"{status}_count" for status in CASE_STATUSES}
# What GitLab's junit parser records for a file it cannot read (lib/gitlab/ci/parsers/test/junit.rb).
UNPARSABLE_JUNIT = "JUnit XML parsing failed: 1:1: FATAL: Document is empty"


def case_entry(case: Mapping[str, Any]) -> dict[str, Any]:
    """A case of an uploaded junit report as TestCaseEntity renders it; `status` and `name` are required."""
    if case.get("status") not in CASE_STATUSES:
        raise ValueError(f"a test case's status is one of {CASE_STATUSES}, not {case.get('status')!r}")
    return {"status": case["status"], "name": case["name"], "classname": case.get("classname"),
            "file": case.get("file"), "execution_time": case.get("execution_time", 0.1),
            "system_output": case.get("system_output"), "stack_trace": case.get("stack_trace"),
            "attachment_url": None, "recent_failures": None}


class _Suite:
    """One Gitlab::Ci::Reports::TestSuite: cases per status keyed by classname and name (a later case with the same
    key replaces the earlier one in its place, yet both count in total_time), and the first parse error."""

    def __init__(self, name: str) -> None:
        self.name, self.total_time, self.error = name, 0.0, None
        self.cases: dict[str, dict[tuple[Any, Any], dict[str, Any]]] = {}
        self.build_ids: list[int] = []

    def add(self, job_id: int, cases: Sequence[dict[str, Any]], error: str | None) -> None:
        self.build_ids.append(job_id)
        if error is not None:
            self.error = self.error or error
            return
        for case in cases:
            self.cases.setdefault(case["status"], {})[(case["classname"], case["name"])] = case
            self.total_time += case["execution_time"]

    def sorted_cases(self) -> list[dict[str, Any]]:
        """TestSuite#sorted: by status (error, failed, success, skipped), then slowest first (a stable sort)."""
        if self.error is not None:
            return []  # TestSuiteEntity lists no case of a suite with an error
        return [case for status in CASE_STATUSES
                for case in sorted(self.cases.get(status, {}).values(), key=lambda c: -c["execution_time"])]

    def render(self, *, details: bool) -> dict[str, Any]:
        counts = {key: 0 if self.error else len(self.cases.get(status, {})) for status, key in _COUNTED.items()}
        out: dict[str, Any] = {"name": self.name, "total_time": round(self.total_time, 3),
                               "total_count": sum(counts.values()), **counts}
        if details:
            return out | {"suite_error": self.error, "test_cases": self.sorted_cases()}
        return out | {"build_ids": sorted(self.build_ids), "suite_error": self.error}


def _collect(uploads: Iterable[tuple[str, int, Sequence[dict[str, Any]], str | None]]) -> list[_Suite]:
    """Pipeline#test_reports: each upload (suite name, job id, cases, parse error) in job id order (`find_each`)
    joins its suite, which takes its place in the report when its first job is collected."""
    suites: dict[str, _Suite] = {}
    for name, job_id, cases, error in sorted(uploads, key=lambda u: u[1]):
        suites.setdefault(name, _Suite(name)).add(job_id, cases, error)
    return list(suites.values())


def test_report(uploads: Iterable[tuple[str, int, Sequence[dict[str, Any]], str | None]]) -> dict[str, Any]:
    """GET /pipelines/:id/test_report (TestReportEntity with details, app/serializers/test_report_entity.rb)."""
    suites = [s.render(details=True) for s in _collect(uploads)]
    return {"total_time": round(sum(s["total_time"] for s in suites), 3), **_totals(suites), "test_suites": suites}


def test_report_summary(uploads: Iterable[tuple[str, int, Sequence[dict[str, Any]], str | None]]) -> dict[str, Any]:
    """GET /pipelines/:id/test_report_summary (TestReportSummaryEntity): the counts without the cases."""
    suites = [s.render(details=False) for s in _collect(uploads)]
    totals = _totals(suites)
    total = {"time": round(sum(s["total_time"] for s in suites), 3), "count": totals["total_count"],
             **{status: totals[key] for status, key in _COUNTED.items()},
             "suite_error": next((s["suite_error"] for s in suites if s["suite_error"]), None)}
    return {"total": total, "test_suites": suites}


def _totals(suites: list[dict[str, Any]]) -> dict[str, int]:
    return {key: sum(s[key] for s in suites) for key in ("total_count", *_COUNTED.values())}
