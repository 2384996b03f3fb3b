"""The verdict of each failed check, from the job lists (`evidence.Sources`) and the logs the reader fetches.

Order of the questions: did the job pass on a retry or a re-run of its pipeline on the same commit (flaky); does
GitLab blame itself, or the runner in a way the nearest run of the job shared (infrastructure); did it fail the same
way on the nearest run of the job: the merge base's when the base ran it, recent target-branch pipelines only when it
did not (pre-existing); does the knowledge base know the failure (known); did the job run there at all (new, else
unclassified). A test report adds to the log: a job is someone else's only when its own failed cases and its own
log's failures are all on the nearest run. A failure is called not the MR's only on evidence that names another run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.logs.fingerprint import strong_lines
from hummingbird_agent.triage.case_verdicts import CaseJudge
from hummingbird_agent.triage.cases import Suite
from hummingbird_agent.triage.compare import same_failure
from hummingbird_agent.triage.evidence import (
    HANGS,
    INFRASTRUCTURE_REASONS,
    MR_CAUSABLE_REASONS,
    PLATFORM_REASONS,
    TRIGGER,
    Runs,
    Sources,
    failed_attempts,
    passed,
)
from hummingbird_agent.triage.excerpt import LogEvidence
from hummingbird_agent.triage.history import job_history
from hummingbird_agent.triage.ledger import FailedJob
from hummingbird_agent.triage.model import NOT_YOURS, CheckResult, KnownCause, KnownCauses, Verdict
from hummingbird_agent.triage.reader import Job, TriageReader, Unread
from hummingbird_agent.triage.unaccounted import unaccounted


class Classifier:
    """Verdicts for one triage; `target` loads the target branch's runs when first needed."""

    def __init__(self, reader: TriageReader, sources: Sources, target: Callable[[], Awaitable[Runs]],
                 known: KnownCauses | None, project: str, branch: str,
                 base_children: Callable[[], Awaitable[None]] | None = None) -> None:
        self._reader, self._src, self._target, self._children = reader, sources, target, base_children
        # Shown in inline code in the note: a backtick in a branch name would end it.
        self._known, self._project = known, project
        self._branch = branch.replace("`", "'") or "the target branch"
        self._cases = CaseJudge(reader, sources, target, self._branch)

    async def with_history(self, check: CheckResult, name: str) -> CheckResult:
        """The job's row with how often it failed on the target branch's recent pipelines (asked after every
        verdict, so the look-up never takes the call budget a verdict needs)."""
        return replace(check, history=job_history(await self._target(), name).text(self._branch))

    async def nearest(self, name: str) -> tuple[Runs, str]:
        """The runs that decide: the merge base's when it ran the job, else the target branch's recent ones."""
        if self._src.base.ran(name):
            return self._src.base, "on the merge base's pipeline"
        if self._src.base_problem:  # the base may have run it (and passed): no run is the nearest one known
            return Runs(), f"on the merge base, whose jobs were not all read ({self._src.base_problem})"
        return await self._target(), f"on recent `{self._branch}` pipelines"

    async def job(self, job: FailedJob) -> CheckResult:
        """The job's verdict: its last failure's, unless an earlier failed attempt is not proven someone else's too (a
        retry GitLab failed never ran what the first attempt failed; a pass after a failure makes it flaky)."""
        if job.nested:
            return await self._nested(job)
        found = await self._attempt(job)
        if found.verdict not in NOT_YOURS or found.verdict == Verdict.FLAKY:
            return found
        attempts = list(job.attempts)
        failed = [attempts.index(a) for a in failed_attempts(attempts)]
        earlier = list(zip(failed, failed[1:], strict=False))[-budgets.TRIAGE_EARLIER_ATTEMPTS:]
        for _, upto in reversed(earlier):  # each earlier failure with the attempts up to the next one (a pass between)
            other = await self._attempt(replace(job, attempts=tuple(attempts[:upto])))
            if other.verdict not in NOT_YOURS:
                return replace(other, reason=f"an earlier attempt: {other.reason}")
        if len(failed) - 1 > len(earlier):
            return replace(found, verdict=Verdict.UNCLASSIFIED, reason=f"{found.reason}; but its earlier failed "
                           f"attempts beyond the last {len(earlier)} were not examined")
        return found

    async def _attempt(self, job: FailedJob) -> CheckResult:
        """The verdict of the job's last failed attempt: flaky on a pass of a retry or a re-run, infrastructure on
        GitLab's word, else from all its evidence: its own failed test cases and its own log, each compared with the
        nearest run of the job."""
        attempts, name = list(job.attempts), job.name
        failed = failed_attempts(attempts)[-1]
        base = CheckResult(job.label, Verdict.UNCLASSIFIED, "", url=str(failed.get("web_url") or ""),
                           stage=str(failed.get("stage") or ""), failure_reason=str(failed.get("failure_reason") or ""))
        if (flaky := self._rerun(base, job, failed)) is not None:
            return flaky
        if (platform := await self._platform(base, name, failed)) is not None:
            return platform
        by_cases = await self._cases.check(base, name, job.pipeline, int(failed.get("id") or 0))
        if by_cases is not None and by_cases[0].verdict not in NOT_YOURS:
            return by_cases[0]  # the MR's own failed test, or one not proven: the log cannot clear it
        log = await self._reader.log(failed, await self._passing(name))
        if by_cases is not None:
            return await self._with_log(*by_cases, name, log)
        if isinstance(log, Unread):
            return _result(base, Verdict.UNCLASSIFIED, f"not examined: {log.reason}")
        return await self._from_log(base, name, log)

    async def _nested(self, job: FailedJob) -> CheckResult:
        """A job of a child pipeline, judged against the merge base's child pipelines of the same trigger job only:
        a parent job or another trigger job's child job of the same name is another job. The target branch's child
        pipelines are not read, so they prove nothing."""
        if self._children is not None:
            await self._children()
        sources = replace(self._src, base=self._src.base_children.started_by(job.pipeline.get(TRIGGER)))
        judge = Classifier(self._reader, sources, _no_runs, self._known, self._project, self._branch)
        return await judge.job(replace(job, nested=False))

    def _rerun(self, base: CheckResult, job: FailedJob, failed: Job) -> CheckResult | None:
        """Flaky: the job passed on a retry in its pipeline, or in a re-run of its pipeline on the same commit."""
        attempts = list(job.attempts)
        if (retry := passed(attempts[attempts.index(failed) + 1:])) is not None:
            return _result(base, verdict=Verdict.FLAKY, reason="failed, then passed on a retry in this "
                           "pipeline", evidence_url=str(retry.get("web_url") or ""))
        if (other := self._src.same_sha.rerun_pass(job.name, job.pipeline)) is not None:
            return _result(base, verdict=Verdict.FLAKY, reason="passed when its pipeline was run again on the same "
                           "commit", evidence_url=str(other.get("web_url") or ""))
        return None

    async def _platform(self, base: CheckResult, name: str, failed: Job) -> CheckResult | None:
        """Infrastructure: a reason only GitLab causes, or one the MR can cause that the nearest run of the job
        failed with too; None when the reason proves nothing (the job is then judged as any failure)."""
        reason, where = base.failure_reason, ""
        if reason not in INFRASTRUCTURE_REASONS:
            return None
        if reason in MR_CAUSABLE_REASONS:
            runs, where = await self.nearest(name)
            same = next((j for j in runs.failures(name) if j.get("failure_reason") == reason), None)
            if same is None:
                return None
            base = replace(base, evidence_url=str(same.get("web_url") or ""))
        # GitLab's own reason is the evidence; the log, when the budget allows, only shows the runner's line.
        log = await self._reader.log(failed) if not self._reader.exhausted else None
        found = _infrastructure(base, log if isinstance(log, LogEvidence) else None)
        return found if reason in PLATFORM_REASONS else replace(
            found, reason=f"{found.reason}, as the job did {where}", evidence_url=base.evidence_url)

    async def _with_log(self, by_cases: CheckResult, suite: Suite, name: str, log: LogEvidence | Unread) -> CheckResult:
        """A test report adds to the log, never replaces it: cases all not the MR's stand only when every failure
        the log prints that the failed cases do not account for is printed by the nearest failed run too."""
        if isinstance(log, Unread):
            return replace(by_cases, verdict=Verdict.UNCLASSIFIED, evidence_url="",
                           reason=f"{by_cases.reason}; its log was not examined: {log.reason}")
        if log.cut:
            return _result(by_cases, Verdict.UNCLASSIFIED, f"{by_cases.reason}; but its log was read only in part: "
                           "what was not read may hold another failure", log=log)
        rest = unaccounted(log.fingerprint, suite)
        if rest.empty:
            return by_cases
        runs, where = await self.nearest(name)
        unread, shown = False, rest
        for other in runs.failures(name)[: budgets.TRIAGE_COMPARE_LOGS_PER_CHECK]:
            theirs = await self._reader.log(other)
            unread |= isinstance(theirs, Unread)
            if isinstance(theirs, LogEvidence):
                if (missing := rest.beyond(theirs.fingerprint)).empty:
                    return by_cases
                shown = missing if shown is rest else shown
        verdict = Verdict.NEW if runs.ran(name) and not unread else Verdict.UNCLASSIFIED
        return _result(by_cases, verdict, f"its log prints a failure its failed tests do not account for, not printed "
                       f"{where}: `{_tick_free(shown.first)}`", log=log)

    async def _from_log(self, base: CheckResult, name: str, log: LogEvidence) -> CheckResult:
        found, unread = await self._same_failure(name, log, hung=base.failure_reason in HANGS)
        if found is not None and log.cut:
            return _result(base, Verdict.UNCLASSIFIED, "failed the same way elsewhere, but its log was read only in "
                           "part: what was not read may hold another failure", log=log)
        if found is not None:
            where, job = found
            return _result(base, Verdict.PRE_EXISTING, f"failed the same way {where}",
                           evidence_url=str(job.get("web_url") or ""), log=log)
        if unread:
            return _result(base, Verdict.UNCLASSIFIED, f"not compared with {unread[0]}", log=log)
        if self._known is not None and (cause := await self._known_cause(base, log)) is not None:
            return _result(base, Verdict.KNOWN, f"the knowledge base knows it: {cause.name}", known=cause, log=log)
        return await self._on_the_base(base, name, log)

    async def _on_the_base(self, base: CheckResult, name: str, log: LogEvidence) -> CheckResult:
        """New when the job ran on the base (or the target branch) and passes there or fails differently;
        unclassified when it did not run there or its failure is too generic to compare."""
        runs, where = await self.nearest(name)
        if log.fingerprint.generic and runs.failures(name):
            return _result(base, Verdict.UNCLASSIFIED, f"failed {where} too, but its log is too generic to tell "
                           "whether it is the same failure", log=log)
        if not runs.ran(name):
            text = f"not compared {where}" if self._src.base_problem else (
                f"did not run on the merge base or on recent `{self._branch}` pipelines")
            return _result(base, Verdict.UNCLASSIFIED, text, log=log)
        ok = runs.first_pass(name)
        text = f"passes {where}" if ok is not None else f"fails differently {where}"
        evidence = ok if ok is not None else runs.attempts(name)[0][1][-1]
        return _result(base, Verdict.NEW, text, evidence_url=str(evidence.get("web_url") or ""), log=log)

    async def _same_failure(self, name: str, log: LogEvidence,
                            hung: bool) -> tuple[tuple[str, Job] | None, list[str]]:
        """The first failed run of this job among the nearest runs (the merge base's when it ran the job, else the
        target branch's) whose failure shows this one's fingerprint (logs compared are bounded per check), and the
        runs whose logs were not read."""
        unread: list[str] = []
        runs, where = await self.nearest(name)
        on_base = runs is self._src.base
        for job in runs.failures(name)[: budgets.TRIAGE_COMPARE_LOGS_PER_CHECK]:
            place = where if on_base else f"on `{self._branch}` (pipeline {job.get('pipeline_id')})"
            other = await self._reader.log(job)
            if isinstance(other, Unread):
                unread.append(f"its failure {place}: {other.reason}")
            elif same_failure(log, other, hung):
                return (place, job), unread
        return None, unread

    async def _passing(self, name: str) -> Job | None:
        """The job's last passing run on the merge base, else on the target branch: the excerpt's reference (what
        the excerpt is shown against, never a verdict's evidence)."""
        return self._src.base.first_pass(name) or (await self._target()).first_pass(name)

    async def _known_cause(self, check: CheckResult, log: LogEvidence) -> KnownCause | None:
        # Only a failure that names itself is matched: the knowledge base would rank a bare "exit code 1" too.
        lines = [line for _, line in strong_lines(log.excerpt)]
        if log.fingerprint.generic or not lines or self._known is None:
            return None
        features = {"job": check.name, "stage": check.stage, "failure_reason": check.failure_reason}
        cause = await self._known.match(self._project, lines[: budgets.BAMBOO_VECTOR_QUERIES], features, log.tail)
        return cause if cause is not None and cause.fit >= budgets.BAMBOO_KNOWN_MIN_FIT else None


async def _no_runs() -> Runs:
    return Runs()


def _tick_free(text: str) -> str:
    """Log text shown in inline code: a backtick in it would end the code span."""
    return text.replace("`", "'")


def _result(head: CheckResult, verdict: Verdict, reason: str, evidence_url: str = "",
            log: LogEvidence | None = None, known: KnownCause | None = None) -> CheckResult:
    fields: dict[str, Any] = {} if log is None else {
        "excerpt": log.excerpt, "fingerprint": log.fingerprint, "failure_line": log.first_line}
    return replace(head, verdict=verdict, reason=reason, evidence_url=evidence_url, known=known, **fields)


def _infrastructure(head: CheckResult, log: LogEvidence | None) -> CheckResult:
    """GitLab's reason, with the runner's own failure line and the log's last lines when the log was read."""
    found = _result(head, Verdict.INFRASTRUCTURE, f"GitLab reports `{head.failure_reason}`", log=log)
    if log is None or not log.runner_line:
        return found
    return replace(found, failure_line=log.runner_line, excerpt=log.last_lines)


def external_check(status: Mapping[str, Any]) -> CheckResult:
    """A failed status that is no job or trigger job the triage read (Konflux, another CI, another project's job):
    its log is not one the triage compares, so nothing proves it someone else's."""
    return CheckResult(str(status.get("name")), Verdict.UNCLASSIFIED, "an external check: its log is not one the "
                       "triage reads to compare", url=str(status.get("target_url") or ""),
                       stage=str(status.get("stage") or ""))


def unlisted_check(name: str, url: str, problem: str) -> CheckResult:
    """A failed job of the analysed pipeline beyond the cut of its job list: never examined."""
    return CheckResult(name, Verdict.UNCLASSIFIED, f"not examined: {problem}", url=url)
