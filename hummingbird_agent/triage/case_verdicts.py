"""Verdicts per failed test case, when the report of the job's pipeline lists the job's own failed cases.

The nearest evidence decides. A case is flaky when it passed in a re-run of its pipeline on the same commit. When
the merge base ran the job, the base alone decides: the case failing there with the same message is pre-existing,
passing there (or absent while the job passed) is new. Only when the base did not run the job does the target
branch's history speak: this failure failing and passing on one commit is flaky, failing the same way is
pre-existing, passing is new. What was not read decides nothing. A parallel job's shards share one suite, so a
shard's cases are its own only when the suite is made of its report alone; otherwise its log decides.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.logs.signature import signature
from hummingbird_agent.triage.cases import CaseKey, Report, Suite, suite_names
from hummingbird_agent.triage.evidence import Runs, Sources, failed_attempts, same_kind
from hummingbird_agent.triage.history import case_history
from hummingbird_agent.triage.model import CaseResult, CheckResult, Verdict
from hummingbird_agent.triage.reader import TriageReader


@dataclass(slots=True)
class _Seen:
    """A case across one set of pipelines' reports: where it failed the same way, where it failed otherwise, where
    it passed, which reports were unread."""

    same: list[Mapping[str, Any]] = field(default_factory=list)
    other: list[Mapping[str, Any]] = field(default_factory=list)
    passed: list[Mapping[str, Any]] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)

    @property
    def listed(self) -> bool:
        return bool(self.same or self.other or self.passed)

    def flip(self) -> Mapping[str, Any] | None:
        """A pipeline whose commit saw this failure and a pass of the case."""
        passed = {str(p.get("sha") or p.get("id")) for p in self.passed}
        return next((p for p in self.same if str(p.get("sha") or p.get("id")) in passed), None)


def _seen(reports: Sequence[Report | str], job: str, key: CaseKey, message: str) -> _Seen:
    out = _Seen()
    for report in reports:
        if isinstance(report, str):
            out.unread.append(report)
            continue
        suite = report.suite(job)
        status = suite.status(key) if suite is not None else ""
        if status == "failed" and suite is not None:
            same = signature(suite.failed[key]) == message
            (out.same if same else out.other).append(report.pipeline)
        elif status:
            out.passed.append(report.pipeline)
        elif report.cut:
            out.unread.append(f"the test report of pipeline {report.pipeline.get('id')} is not whole: {report.cut}")
    return out


def _url(pipeline: Mapping[str, Any]) -> str:
    return str(pipeline.get("web_url") or "")


def own_suite(report: Report, job: str, job_id: int) -> Suite | None:
    """The suite of `job` in its pipeline's report when its failed cases are the job's own: a shard's only when
    the suite was made from that shard's report alone."""
    suite = report.suite(job)
    if suite is None or suite.error or not suite.failed:
        return None
    mine = frozenset({job_id})
    if suite.build_ids and suite.build_ids != mine:
        return None
    if not suite.build_ids and len(suite_names(job)) > 1:
        return None
    return suite


def failed_suites(sources: Sources) -> frozenset[str]:
    """The suites a triage reads of each report: its failed jobs' (the same set, so a report is read once)."""
    return frozenset(n for name, attempts in sources.analysed.items() if failed_attempts(attempts)
                     for n in suite_names(name))


class CaseJudge:
    """One triage's case verdicts; each pipeline's report is read once (its failed jobs' suites only)."""

    def __init__(self, reader: TriageReader, sources: Sources, target: Callable[[], Awaitable[Runs]],
                 branch: str) -> None:
        self._reader, self._src, self._target, self._branch = reader, sources, target, branch
        self._suites = failed_suites(sources)
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

    async def check(self, head: CheckResult, name: str, pipeline: Mapping[str, Any],
                    job_id: int) -> tuple[CheckResult, Suite] | None:
        """The job's verdict from its own failed cases, and their suite; None when the report of its pipeline does
        not list cases that are the job's own (the log decides)."""
        if not pipeline.get("id"):
            return None
        analysed = await self._report(pipeline, fresh=True)
        suite = own_suite(analysed, name, job_id) if isinstance(analysed, Report) else None
        if suite is None:
            return None
        reruns = Runs([(p, by) for p, by in self._src.same_sha.pipelines if int(p.get("id") or 0) > int(
            pipeline.get("id") or 0) and same_kind(p, pipeline)])
        same = await self._reports(reruns, name)
        on_base = self._src.base.ran(name)
        target = await self._reports(await self._target(), name)
        near = self._src.base if on_base else await self._target()
        reports = await self._reports(near, name) if on_base else target
        if not on_base and self._src.base_problem:  # the base may have run the job: the target branch is not nearest
            near, reports = Runs(), [f"the merge base's jobs were not all read ({self._src.base_problem})"]
        cases = [self._case(suite, key, line, name, (same, reports, target), on_base, near)
                 for key, line in suite.failed.items()]
        return job_verdict(head, suite, cases), suite

    def _case(self, suite: Suite, key: CaseKey, line: str, job: str,
              reports: tuple[list[Report | str], list[Report | str], list[Report | str]], on_base: bool,
              near: Runs) -> CaseResult:
        message = signature(line)
        same, seen = _seen(reports[0], job, key, message), _seen(reports[1], job, key, message)
        head = CaseResult(Verdict.UNCLASSIFIED, (suite.name, *key), line,
                          history=case_history(reports[2], job, key).text(self._branch))
        if same.passed:
            return replace(head, verdict=Verdict.FLAKY, reason="passed when its pipeline was run again on the same "
                           "commit", evidence_url=_url(same.passed[0]))
        where = "the merge base's pipeline" if on_base else f"recent `{self._branch}` pipelines"
        if (flip := seen.flip()) is not None:
            return replace(head, verdict=Verdict.FLAKY, reason=f"failed the same way and passed on one commit of "
                           f"`{self._branch}`", evidence_url=_url(flip))
        if seen.same:
            return replace(head, verdict=Verdict.PRE_EXISTING, reason=f"fails the same way on {where}",
                           evidence_url=_url(seen.same[0]))
        if seen.passed or seen.other:
            text = f"passes on {where}" if seen.passed else f"fails with another message on {where}"
            return replace(head, verdict=Verdict.NEW, reason=text, evidence_url=_url((seen.passed or seen.other)[0]))
        return self._unlisted(head, seen, near, job, where)

    def _unlisted(self, head: CaseResult, seen: _Seen, near: Runs, job: str, where: str) -> CaseResult:
        if seen.unread:
            return replace(head, reason=f"not compared: {seen.unread[0]}")
        if (ok := near.first_pass(job)) is not None:
            return replace(head, verdict=Verdict.NEW, reason=f"the job passes on {where}, whose report does not list "
                           "this test", evidence_url=str(ok.get("web_url") or ""))
        return replace(head, reason=f"not in the test reports of {where}")


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
