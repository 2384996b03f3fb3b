"""The verdict of each failed check, from the job lists (`evidence.Sources`) and the logs the reader fetches.

Order of the questions: does GitLab blame the platform (infrastructure); did the same job pass on the same
commit (flaky); did it fail the same way on the merge base or on recent target-branch pipelines
(pre-existing); does the knowledge base know the failure (known); did the job run on the base at all (new,
else unclassified). A failure is called not the MR's only on evidence that names another run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.logs.fingerprint import strong_lines
from hummingbird_agent.triage.case_verdicts import CaseJudge
from hummingbird_agent.triage.compare import same_failure
from hummingbird_agent.triage.evidence import HANGS, INFRASTRUCTURE_REASONS, Runs, Sources, failed_attempts, passed
from hummingbird_agent.triage.excerpt import LogEvidence
from hummingbird_agent.triage.history import job_history
from hummingbird_agent.triage.model import CheckResult, KnownCause, KnownCauses, Verdict
from hummingbird_agent.triage.reader import Job, TriageReader, Unread


class Classifier:
    """Verdicts for one triage; `target` loads the target branch's runs when first needed."""

    def __init__(self, reader: TriageReader, sources: Sources, target: Callable[[], Awaitable[Runs]],
                 known: KnownCauses | None, project: str, branch: str) -> None:
        self._reader, self._src, self._target = reader, sources, target
        # Shown in inline code in the note: a backtick in a branch name would end it.
        self._known, self._project = known, project
        self._branch = branch.replace("`", "'") or "the target branch"
        self._cases = CaseJudge(reader, sources, target, self._branch)

    async def with_history(self, check: CheckResult) -> CheckResult:
        """The job's row with how often it failed on the target branch's recent pipelines (asked after every
        verdict, so the look-up never takes the call budget a verdict needs)."""
        return replace(check, history=job_history(await self._target(), check.name).text(self._branch))

    async def job(self, name: str, attempts: Sequence[Job]) -> CheckResult:
        """The job's verdict: from its failed test cases when its pipeline's report lists them, else its log."""
        failed = failed_attempts(attempts)[-1]
        base = CheckResult(name, Verdict.UNCLASSIFIED, "", url=str(failed.get("web_url") or ""),
                           stage=str(failed.get("stage") or ""), failure_reason=str(failed.get("failure_reason") or ""))
        later = attempts[attempts.index(failed) + 1:]
        if (retry := passed(later)) is not None:
            return _result(base, verdict=Verdict.FLAKY, reason="failed, then passed on a retry in this "
                               "pipeline", evidence_url=str(retry.get("web_url") or ""))
        if (other := self._src.same_sha.first_pass(name)) is not None:
            return _result(base, verdict=Verdict.FLAKY, reason="passed on the same commit in another "
                               "pipeline", evidence_url=str(other.get("web_url") or ""))
        if base.failure_reason in INFRASTRUCTURE_REASONS:
            # GitLab's own reason is the evidence; the log, when the budget allows, only shows the runner's line.
            log = await self._reader.log(failed) if not self._reader.exhausted else None
            return _infrastructure(base, log if isinstance(log, LogEvidence) else None)
        if (by_cases := await self._cases.check(base, name)) is not None:
            return by_cases
        log = await self._reader.log(failed, await self._passing(name))
        if isinstance(log, Unread):
            return _result(base, Verdict.UNCLASSIFIED, f"not examined: {log.reason}")
        return await self._from_log(base, name, log)

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
        if log.fingerprint.generic and (self._src.base.failures(name) or (await self._target()).failures(name)):
            return _result(base, Verdict.UNCLASSIFIED, f"failed on the merge base or `{self._branch}` too, but its "
                           "log is too generic to tell whether it is the same failure", log=log)
        ran_on_base = self._src.base.ran(name)
        runs = self._src.base if ran_on_base else await self._target()
        if not runs.ran(name):
            return _result(base, Verdict.UNCLASSIFIED, f"did not run on the merge base or on recent "
                           f"`{self._branch}` pipelines", log=log)
        where = "the merge base's pipeline" if ran_on_base else f"recent `{self._branch}` pipelines"
        ok = runs.first_pass(name)
        text = f"passes on {where}" if ok is not None else f"fails differently on {where}"
        evidence = ok if ok is not None else runs.attempts(name)[0][1][-1]
        return _result(base, Verdict.NEW, text, evidence_url=str(evidence.get("web_url") or ""), log=log)

    async def _same_failure(self, name: str, log: LogEvidence,
                            hung: bool) -> tuple[tuple[str, Job] | None, list[str]]:
        """The first failed run of this job, on the merge base then the target branch, whose failure shows
        this one's fingerprint (logs compared are bounded per check), and the runs whose logs were not read."""
        unread: list[str] = []
        compared = 0
        for where, runs in (("on the merge base's pipeline", self._src.base), (None, None)):
            runs = runs if runs is not None else await self._target()
            for job in runs.failures(name):
                place = where or f"on `{self._branch}` (pipeline {job.get('pipeline_id')})"
                if compared >= budgets.TRIAGE_COMPARE_LOGS_PER_CHECK:
                    return None, unread
                compared += 1
                other = await self._reader.log(job)
                if isinstance(other, Unread):
                    unread.append(f"its failure {place}: {other.reason}")
                elif same_failure(log, other, hung):
                    return (place, job), unread
        return None, unread

    async def _passing(self, name: str) -> Job | None:
        """The job's last passing run on the merge base, else on the target branch: the excerpt's reference."""
        return self._src.base.first_pass(name) or (await self._target()).first_pass(name)

    async def _known_cause(self, check: CheckResult, log: LogEvidence) -> KnownCause | None:
        # Only a failure that names itself is matched: the knowledge base would rank a bare "exit code 1" too.
        lines = [line for _, line in strong_lines(log.excerpt)]
        if log.fingerprint.generic or not lines or self._known is None:
            return None
        features = {"job": check.name, "stage": check.stage, "failure_reason": check.failure_reason}
        cause = await self._known.match(self._project, lines[: budgets.BAMBOO_VECTOR_QUERIES], features, log.tail)
        return cause if cause is not None and cause.fit >= budgets.BAMBOO_KNOWN_MIN_FIT else None


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


def external_check(status: Mapping[str, Any], history: Sequence[Mapping[str, Any]]) -> CheckResult:
    """A failed external status (Konflux, another CI): flaky when the same check passed on this commit;
    otherwise its log is not in GitLab, so nothing else decides."""
    base = CheckResult(str(status.get("name")), Verdict.UNCLASSIFIED, "", url=str(status.get("target_url") or ""),
                       stage=str(status.get("stage") or ""))
    ok = next((s for s in history if s.get("name") == status.get("name") and s.get("status") == "success"), None)
    if ok is not None:
        return _result(base, verdict=Verdict.FLAKY, reason="passed on this commit in another run",
                           evidence_url=str(ok.get("target_url") or ""))
    return _result(base, verdict=Verdict.UNCLASSIFIED,
                       reason="an external check: its log is not in GitLab to compare")


def unlisted_check(name: str, url: str, problem: str) -> CheckResult:
    """A failed job of the analysed pipeline beyond the cut of its job list: never examined."""
    return CheckResult(name, Verdict.UNCLASSIFIED, f"not examined: {problem}", url=url)
