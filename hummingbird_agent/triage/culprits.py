"""The culprit searches of one triage, after its verdicts: each pre-existing failure searched on the target branch
for the change that broke it, each flaky one for where it failed this way and passed on one commit there; at most
CULPRIT_MAX_SEARCHES a triage, each within its own budget."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.triage.case_verdicts import failed_suites
from hummingbird_agent.triage.compare import same_failure
from hummingbird_agent.triage.culprit import Suspect, failure_key, find_culprit, run_ref
from hummingbird_agent.triage.culprit_cases import find_case_culprit
from hummingbird_agent.triage.culprit_model import Culprit
from hummingbird_agent.triage.evidence import HANGS, Runs, Sources, failed_attempts, passed
from hummingbird_agent.triage.excerpt import LogEvidence
from hummingbird_agent.triage.ledger import FailedJob
from hummingbird_agent.triage.model import CheckResult, Verdict
from hummingbird_agent.triage.reader import Job, TriageReader


async def with_culprits(reader: TriageReader, checks: Sequence[CheckResult], failed: Sequence[FailedJob],
                        sources: Sources, target: Callable[[], Awaitable[Runs]], project: str, branch: str,
                        now: str) -> list[CheckResult]:
    """The checks, the first CULPRIT_MAX_SEARCHES pre-existing or flaky ones with what their search found."""
    jobs = {f.label: f for f in failed if not f.nested}
    out, searches = list[CheckResult](), 0
    for check in checks:
        job = jobs.get(check.name)
        if (check.verdict not in (Verdict.PRE_EXISTING, Verdict.FLAKY) or job is None or not branch
                or searches >= budgets.CULPRIT_MAX_SEARCHES):
            out.append(check)
            continue
        searches += 1
        if check.verdict is Verdict.FLAKY:
            found = await find_flip(reader, branch, now, job, await target())
        else:
            found = await _broken(reader, check, job, sources, target, project, branch, now)
        out.append(replace(check, culprit=found))
    return out


async def _broken(reader: TriageReader, check: CheckResult, job: FailedJob, sources: Sources,
                  target: Callable[[], Awaitable[Runs]], project: str, branch: str, now: str) -> Culprit | None:
    """The search from the failing run the verdict named (the merge base's, else the target branch's): by the
    failed test cases when the verdict rests on them, else by logs."""
    runs = sources.base if sources.base.ran(job.name) else await target()
    failing = [(p, a[-1]) for p, a in runs.attempts(job.name) if failed_attempts(a[-1:])]
    # A case's evidence is its pipeline's page, a log's the job's.
    anchor = next(((p, j) for p, j in failing if check.evidence_url in (j.get("web_url"), p.get("web_url"))), None)
    anchor = anchor or (failing[0] if failing else None)
    if anchor is None:
        return None
    suspect = Suspect(job.name, anchor[0], anchor[1], check.failure_reason in HANGS)
    if cases := [c for c in check.cases if c.verdict is Verdict.PRE_EXISTING]:
        return await find_case_culprit(reader, project, branch, now, suspect, cases, failed_suites(sources))
    return await find_culprit(reader, project, branch, now, suspect)


async def find_flip(reader: TriageReader, branch: str, now: str, job: FailedJob, target: Runs) -> Culprit | None:
    """Where on the target branch the job failed this way and passed on one commit (a retry or another pipeline of
    that commit); None when the recent pipelines read show no such flip of this failure."""
    search = reader.fork(reader.limits.culprit_calls)
    mine = await search.log(failed_attempts(list(job.attempts))[-1])
    if not isinstance(mine, LogEvidence):
        return None
    for pipeline, failing in _flips(target, job.name)[: budgets.TRIAGE_COMPARE_LOGS_PER_CHECK]:
        theirs = await search.log(failing)
        if isinstance(theirs, LogEvidence) and same_failure(mine, theirs):
            return Culprit(branch, job.name, run_ref(pipeline, failing), flaky=True, now=now,
                           key=failure_key(branch, job.name, mine))
    return None


def _flips(target: Runs, name: str) -> list[tuple[Mapping[str, Any], Job]]:
    """(pipeline, its failed attempt) where the job also passed on that commit, newest first."""
    passed_on = {str(p.get("sha")) for p, attempts in target.attempts(name) if passed(attempts) is not None}
    return [(p, failed_attempts(a)[-1]) for p, a in target.attempts(name)
            if failed_attempts(a) and str(p.get("sha")) in passed_on]
