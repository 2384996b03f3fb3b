"""Verdicts per failed test case, when the analysed pipeline's unit test report lists the job's failed cases.

A case (suite, classname, name) is flaky when it passed on the same commit in another pipeline's report;
pre-existing when it fails in the merge base's report; flaky when it failed and passed on one commit of the target
branch; pre-existing when it fails in a recent target-branch report; new when it passes in the base's (or the
branch's) report, or is absent there while the job passed on the base. What was not read decides nothing: a case
found nowhere while a report was not read is unclassified. The job is not the MR's only when none of its failed
cases is, and only when the report listed every failed case.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.triage.cases import CaseKey, Report, Suite, suite_names
from hummingbird_agent.triage.evidence import Runs, Sources, failed_attempts
from hummingbird_agent.triage.history import case_history
from hummingbird_agent.triage.model import CaseResult, CheckResult, Verdict
from hummingbird_agent.triage.reader import TriageReader


@dataclass(slots=True)
class _Seen:
    """A case across one set of pipelines' reports: where it failed, where it passed, which reports were unread."""

    failed: list[Mapping[str, Any]] = field(default_factory=list)
    passed: list[Mapping[str, Any]] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)


def _seen(reports: Sequence[Report | str], job: str, key: CaseKey) -> _Seen:
    out = _Seen()
    for report in reports:
        if isinstance(report, str):
            out.unread.append(report)
            continue
        status = report.status(job, key)
        if status:
            (out.failed if status == "failed" else out.passed).append(report.pipeline)
        elif report.cut:
            out.unread.append(f"the test report of pipeline {report.pipeline.get('id')} is not whole: {report.cut}")
    return out


def _url(pipeline: Mapping[str, Any]) -> str:
    return str(pipeline.get("web_url") or "")


class CaseJudge:
    """One triage's case verdicts; each pipeline's report is read once (its failed jobs' suites only)."""

    def __init__(self, reader: TriageReader, sources: Sources, target: Callable[[], Awaitable[Runs]],
                 branch: str) -> None:
        self._reader, self._src, self._target, self._branch = reader, sources, target, branch
        self._suites = frozenset(n for name, attempts in sources.analysed.items() if failed_attempts(attempts)
                                 for n in suite_names(name))
        self._read: dict[int, Report | str] = {}

    async def _report(self, pipeline: Mapping[str, Any], fresh: bool = False) -> Report | str:
        key = int(pipeline.get("id") or 0)
        if key not in self._read:
            found = await self._reader.report(pipeline, self._suites, fresh=fresh)
            self._read[key] = found if isinstance(found, Report) else (
                f"the test report of pipeline {key} was not read: {found.reason}")
        return self._read[key]

    async def _reports(self, runs: Runs, name: str) -> list[Report | str]:
        return [await self._report(pipeline) for pipeline, _ in runs.attempts(name)]

    async def check(self, head: CheckResult, name: str) -> CheckResult | None:
        """The job's verdict from its failed cases; None when the report does not list any (the log decides)."""
        if not self._src.pipeline:
            return None
        analysed = await self._report(self._src.pipeline, fresh=True)
        suite = analysed.suite(name) if isinstance(analysed, Report) else None
        if suite is None or suite.error or not suite.failed:
            return None
        same, base = await self._reports(self._src.same_sha, name), await self._reports(self._src.base, name)
        target = await self._reports(await self._target(), name)
        passed_on_base = self._src.base.first_pass(name)
        cases = [self._case(suite, key, line, name, (same, base, target), passed_on_base)
                 for key, line in suite.failed.items()]
        return job_verdict(head, suite, cases)

    def _case(self, suite: Suite, key: CaseKey, line: str, job: str,
              reports: tuple[list[Report | str], list[Report | str], list[Report | str]],
              passed_on_base: Mapping[str, Any] | None) -> CaseResult:
        same, base, target = (_seen(r, job, key) for r in reports)
        history = case_history(reports[2], job, key)
        head = CaseResult(Verdict.UNCLASSIFIED, (suite.name, *key), line,
                          history=history.text(self._branch))
        branch = f"`{self._branch}`"
        if same.passed:
            return replace(head, verdict=Verdict.FLAKY, reason="passed on the same commit in another pipeline",
                           evidence_url=_url(same.passed[0]))
        if base.failed:
            return replace(head, verdict=Verdict.PRE_EXISTING, reason="fails on the merge base's pipeline",
                           evidence_url=_url(base.failed[0]))
        if history.flip is not None:
            return replace(head, verdict=Verdict.FLAKY, reason=f"failed and passed on one commit of {branch}",
                           evidence_url=_url(history.flip))
        if target.failed:
            return replace(head, verdict=Verdict.PRE_EXISTING, reason=f"fails on {branch} (pipeline "
                           f"{target.failed[0].get('id')})", evidence_url=_url(target.failed[0]))
        return self._new_or_not(head, base, target, passed_on_base)

    def _new_or_not(self, head: CaseResult, base: _Seen, target: _Seen,
                    passed_on_base: Mapping[str, Any] | None) -> CaseResult:
        if base.passed or target.passed:
            where = base.passed or target.passed
            text = "the merge base's pipeline" if base.passed else f"recent `{self._branch}` pipelines"
            return replace(head, verdict=Verdict.NEW, reason=f"passes on {text}", evidence_url=_url(where[0]))
        unread = base.unread + target.unread
        if unread:
            return replace(head, reason=f"not compared: {unread[0]}")
        if passed_on_base is not None:
            return replace(head, verdict=Verdict.NEW, reason="the job passes on the merge base's pipeline, whose "
                           "report does not list this test", evidence_url=str(passed_on_base.get("web_url") or ""))
        return replace(head, reason=f"not in the test reports of the merge base or recent `{self._branch}` pipelines")


def job_verdict(head: CheckResult, suite: Suite, cases: list[CaseResult]) -> CheckResult:
    """The job's verdict from its cases: the most decisive one (new, then unclassified, pre-existing, flaky), and
    unclassified when the report did not list every failed case."""
    order = list(Verdict)
    cases.sort(key=lambda c: (order.index(c.verdict), c.title))
    first = cases[0]
    counts = {v: sum(c.verdict == v for c in cases) for v in order}
    said = ", ".join(f"{n} {v.value}" for v, n in counts.items() if n)
    lines = tuple(f"{c.verdict.value}: {c.title}" + (f" - {c.line}" if c.line else "")
                  for c in cases[: budgets.TRIAGE_EXCERPT_LINES])
    found = replace(head, verdict=first.verdict, cases=tuple(cases), evidence_url=first.evidence_url, excerpt=lines,
                    failure_line=f"{first.title}: {first.line}" if first.line else first.title,
                    reason=f"{len(cases)} failed test{'s' if len(cases) != 1 else ''}: {said}")
    if not suite.whole:
        return replace(found, verdict=Verdict.UNCLASSIFIED, evidence_url="",
                       reason=f"the test report lists {len(cases)} of its {suite.failed_count} failed tests: the "
                       "rest were not read")
    return found
