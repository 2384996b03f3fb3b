"""How often a job or a test case failed on the target branch's recent pipelines, from what was read of them (their
job lists and unit test reports): "failed 3 of the last 10 runs on `main`". A job or a case that failed and passed
on one commit there is known to flip without a change (known-flaky evidence). Pure functions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hummingbird_agent.triage.cases import CaseKey, Report
from hummingbird_agent.triage.evidence import Runs, failed_attempts, passed


@dataclass(frozen=True, slots=True)
class History:
    runs: int = 0
    """Pipelines read in which it ran (a case: whose read report lists it)."""
    failed: int = 0
    flip: Mapping[str, Any] | None = None
    """A pipeline on whose commit it both failed and passed (another pipeline of that commit, or a retry)."""
    unread: int = 0
    """Pipelines whose report could not be read or was cut before it: not counted either way."""

    def text(self, branch: str) -> str:
        if not self.runs:
            return ""
        said = f"failed {self.failed} of the last {self.runs} run{'s' if self.runs != 1 else ''} on `{branch}`"
        if self.flip is not None:
            said += f", failed and passed on commit {str(self.flip.get('sha') or '')[:8]}"
        return said + (f" ({self.unread} report{'s' if self.unread != 1 else ''} not read)" if self.unread else "")


def _flipped(outcomes: Sequence[tuple[Mapping[str, Any], bool]]) -> Mapping[str, Any] | None:
    """The first pipeline whose commit saw both a failure and a pass among `outcomes` (pipeline, failed)."""
    seen: dict[str, set[bool]] = {}
    for pipeline, failed in outcomes:
        seen.setdefault(str(pipeline.get("sha") or pipeline.get("id")), set()).add(failed)
    return next((p for p, _ in outcomes if seen[str(p.get("sha") or p.get("id"))] == {True, False}), None)


def job_history(target: Runs, name: str) -> History:
    """Pipelines of the target branch that ran the job, those where an attempt failed, and a flip: a failed attempt
    and a passing one in one pipeline (a retry) or on one commit."""
    outcomes: list[tuple[Mapping[str, Any], bool]] = []
    flip: Mapping[str, Any] | None = None
    for pipeline, attempts in target.attempts(name):
        failed = bool(failed_attempts(attempts))
        outcomes.append((pipeline, failed))
        if failed and passed(attempts) is not None and flip is None:
            flip = pipeline
    return History(len(outcomes), sum(f for _, f in outcomes), flip or _flipped(outcomes))


def case_history(reports: Sequence[Report | str], job: str, key: CaseKey) -> History:
    """The case in the target branch's reports (a `str` is a report not read, and why): counted where listed."""
    outcomes: list[tuple[Mapping[str, Any], bool]] = []
    unread = 0
    for report in reports:
        status = report.status(job, key) if isinstance(report, Report) else ""
        if status:
            outcomes.append((report.pipeline, status == "failed"))  # type: ignore[union-attr]
        elif isinstance(report, str) or report.cut:
            unread += 1
    return History(len(outcomes), sum(f for _, f in outcomes), _flipped(outcomes), unread)
