"""The culprit of a job whose pre-existing verdict rests on its failed test cases: each case (up to
CULPRIT_MAX_CASES) bisected on the target branch's unit test reports, not logs, and the job's break is the earliest
of theirs. Two cases that broke at different commits leave a log of both failing only from the later one on, so a
search by logs would name the later change; the job has been broken since the earlier.

A probe reads the pipeline's test report (the triage's own read and cache, one per pipeline for every case). The
case passed there (good), failed with the same message (bad), or anything else (unknown): absent, skipped, failed
otherwise, or the report not read. What was not read is never a pass."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace

from hummingbird_agent import budgets
from hummingbird_agent.logs.signature import signature
from hummingbird_agent.triage.cases import Report
from hummingbird_agent.triage.culprit import (
    Outcome,
    Pipeline,
    Suspect,
    branch_window,
    cached_search,
    narrow,
    run_ref,
    spent,
    unsearched,
)
from hummingbird_agent.triage.culprit_model import Culprit
from hummingbird_agent.triage.culprit_range import range_of
from hummingbird_agent.triage.model import CaseResult
from hummingbird_agent.triage.reader import TriageReader, Unread


async def find_case_culprit(reader: TriageReader, project: str, branch: str, now: str, suspect: Suspect,
                            cases: Sequence[CaseResult], suites: frozenset[str]) -> Culprit | None:
    """The culprit of the job's failed `cases` on `branch`, from the failing run the verdict named (cached per
    failing run, job and cases searched: an MR failing fewer of them may have a later break); None when the branch
    has no earlier pipeline to search. `suites` are the suites of each report read (the triage's)."""
    cases = tuple(cases[: budgets.CULPRIT_MAX_CASES])
    key = ("culprit", project, branch, int(suspect.job.get("id") or 0), suspect.name, tuple(c.key for c in cases))
    return await cached_search(reader, key, now,
                               lambda search: _CaseSearch(search, project, branch, suspect, suites).run(now, cases))


def case_outcome(report: Report | Unread, job: str, case: CaseResult) -> Outcome:
    """The case in one pipeline's report: passed (good), failed with the same message (bad), else unknown."""
    suite = report.suite(job) if isinstance(report, Report) else None
    status = suite.status(case.key[1:]) if suite is not None else ""
    if status == "success":
        return Outcome.GOOD
    if status == "failed" and suite is not None and signature(suite.failed[case.key[1:]]) == signature(case.line):
        return Outcome.BAD
    return Outcome.UNKNOWN


def case_key(branch: str, job: str) -> str:
    """The break's identity on its branch when test cases decide it (as `culprit.failure_key` for a log): the job
    alone, whichever of its cases an MR fails, so that one issue tracks the job's break (docs/culprit.md)."""
    return hashlib.sha1(f"{branch}\n{job}\nby test cases".encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class _Found:
    """One case's bisection: the newest good run below its oldest bad one (-1: none) and that bad one."""

    case: CaseResult
    lo: int
    hi: int
    stopped: bool


class _CaseSearch:
    def __init__(self, reader: TriageReader, project: str, branch: str, suspect: Suspect,
                 suites: frozenset[str]) -> None:
        self._reader, self._project, self._branch, self._suspect = reader, project, branch, suspect
        self._suites = suites
        self._reports: dict[int, Report | Unread] = {}

    async def run(self, now: str, cases: Sequence[CaseResult]) -> Culprit | None:
        suspect = self._suspect
        head = Culprit(self._branch, suspect.name, run_ref(suspect.pipeline, suspect.job), now=now)
        failing = await self._report(suspect.pipeline)
        if isinstance(failing, Unread):
            return replace(head, gap=f"the failing run's test report was not read: {failing.reason}")
        cases = [c for c in cases if case_outcome(failing, suspect.name, c) is Outcome.BAD]
        if not cases:
            return replace(head, gap="the failing run's test report does not show its failed tests failing so")
        window, problem = await branch_window(self._reader, self._branch, suspect.pipeline)
        if len(window) == 1 and not problem:
            return None
        found = [await self._bisect(window, case) for case in cases]
        return await self._answer(head, window, found, problem)

    async def _bisect(self, window: list[Pipeline], case: CaseResult) -> _Found:
        async def probe(i: int) -> Outcome:
            return case_outcome(await self._report(window[i]), self._suspect.name, case)

        return _Found(case, *await narrow(len(window), probe, spent(self._reader, 1)))

    async def _answer(self, head: Culprit, window: list[Pipeline], found: list[_Found], problem: str) -> Culprit:
        """The job's break: at or before the earliest first bad run of its cases, after the oldest good run below
        any of theirs (a case not narrowed below that bad run may have broken first: the range then holds both),
        or after a run whose report showed the job's suite without a failed test (no case was failing there)."""
        first = min(found, key=lambda f: (f.hi, -f.lo))
        lo = max(min(f.lo for f in found), self._clean_below(window, first))
        stopped = any(f.stopped and f.lo < first.hi for f in found)
        bad = window[first.hi]
        job = self._suspect.job if first.hi == len(window) - 1 else None
        head = replace(head, first_bad=run_ref(bad, job), searched=len(window), probes=len(self._reports) - 1,
                       key=case_key(self._branch, self._suspect.name), case=first.case.title,
                       gap=unsearched(self._reader, lo, first.hi) if stopped else problem)
        if lo < 0:
            return head
        return await range_of(self._reader, self._project, replace(head, last_good=run_ref(window[lo], None)))

    def _clean_below(self, window: list[Pipeline], first: _Found) -> int:
        """The newest run at or below `first`'s last good one whose report, read whole, lists the job's suite with
        no failed test: none of its cases failed there, so none broke before it (-1: none read so)."""
        for i in range(first.lo, -1, -1):
            report = self._reports.get(int(window[i].get("id") or 0))
            suite = report.suite(self._suspect.name) if isinstance(report, Report) and not report.cut else None
            if suite is not None and not suite.error and not suite.failed and not suite.failed_count:
                return i
        return -1

    async def _report(self, pipeline: Pipeline) -> Report | Unread:
        """The pipeline's test report, read once a search (a report not read is not read again)."""
        key = int(pipeline.get("id") or 0)
        if key not in self._reports:
            self._reports[key] = await self._reader.report(pipeline, self._suites)
        return self._reports[key]
