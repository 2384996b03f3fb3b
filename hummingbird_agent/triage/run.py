"""One triage of an MR's failed pipeline: list the commit's ledger, classify each failed check, state the gaps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.triage.classify import Classifier, external_check, unlisted_check
from hummingbird_agent.triage.culprits import with_culprits
from hummingbird_agent.triage.evidence import Runs, Sources, by_name
from hummingbird_agent.triage.ledger import Ledger, current
from hummingbird_agent.triage.merge_base import base_of
from hummingbird_agent.triage.model import CheckResult, KnownCauses, Triage
from hummingbird_agent.triage.reader import TriageReader
from hummingbird_agent.triage.trigger_jobs import account_statuses, read_children, read_pipeline


@dataclass(frozen=True, slots=True)
class TriageRequest:
    project: str
    mr_iid: int
    now: datetime
    sha: str = ""
    pipeline_id: int | None = None
    lookback_pipelines: int = budgets.TRIAGE_LOOKBACK_PIPELINES
    lookback_days: int = budgets.TRIAGE_LOOKBACK_DAYS
    ignore_statuses: frozenset[str] = frozenset()
    """Commit-status names never triaged (the service's own status)."""
    culprit: bool = True
    """Search the target branch for the change that broke it, for each pre-existing (and flaky) failure."""


async def triage(reader: TriageReader, request: TriageRequest, known: KnownCauses | None = None) -> Triage:
    mr = await reader.mr(request.mr_iid)
    sha = request.sha or str(mr.get("sha") or "")
    branch = str(mr.get("target_branch") or "")
    if not sha:
        return Triage(sha="", gaps=("the analysed commit is not known", *reader.gaps), calls=reader.calls)
    sources, ledger = Sources(), Ledger()
    pipelines = await _load_commit(reader, request, sha, sources, ledger)
    base = await base_of(reader, mr, request.mr_iid, sha)
    base_sha = base.sha
    if base.problem:
        sources.base_problem = base.problem
        reader.gaps.append(base.problem)
    else:
        await _load_base(reader, base_sha, branch, sources)
    target: list[Runs] = []

    async def target_runs() -> Runs:
        if not target:
            target.append(await _load_target(reader, request, branch))
        return target[0]

    project_id = int(mr.get("project_id") or 0)
    children: list[bool] = []

    async def base_children() -> None:
        if not children:
            children.append(True)
            await read_children(reader, sources.base, sources.base_children, project_id)

    classifier = Classifier(reader, sources, target_runs, known, request.project, branch, base_children)
    statuses, statuses_problem = await reader.statuses(sha)
    await account_statuses(reader, sources, ledger, statuses, request.ignore_statuses, project_id)
    room = reader.limits.max_checks
    checks: list[CheckResult] = []
    for failed in ledger.failed[:room]:
        checks.append(await classifier.with_history(await classifier.job(failed), failed.name))
    checks += [external_check(s) for s in ledger.external[: room - len(checks)]]
    checks += [unlisted_check(name, url, sources.unlisted_problem)
               for name, url in sources.unlisted_failures[: room - len(checks)]]
    checks += ledger.unproven[: room - len(checks)]
    if request.culprit:
        when = request.now.strftime("%Y-%m-%dT%H:%M:%SZ")
        checks = await with_culprits(reader, checks, ledger.failed, sources, target_runs, request.project, branch, when)
    total = len(ledger.failed) + len(ledger.external) + len(sources.unlisted_failures) + len(ledger.unproven)
    unlisted = tuple(p for p in (sources.unlisted_problem, *sources.problems, statuses_problem) if p)
    return Triage(sha=sha, target_branch=branch, base_sha=base_sha, checks=tuple(checks), gaps=tuple(reader.gaps),
                  omitted=total - len(checks), unlisted=unlisted, calls=reader.calls, log_bytes=reader.log_bytes,
                  report_bytes=reader.report_bytes, running=tuple(ledger.running), passed=ledger.passed,
                  optional=ledger.optional, snapshot=snapshot(pipelines))


def snapshot(pipelines: Sequence[Mapping[str, Any]]) -> tuple[tuple[int, str, str], ...]:
    """What the commit's pipelines were when read: ids, states and last updates (a retried job updates its pipeline)."""
    return tuple(sorted((int(p.get("id") or 0), str(p.get("status")), str(p.get("updated_at"))) for p in pipelines))


async def _load_commit(reader: TriageReader, request: TriageRequest, sha: str, sources: Sources,
                       ledger: Ledger) -> list[Mapping[str, Any]]:
    """The analysed pipeline's attempts (read afresh) and the commit's other pipelines; the current ones go into the
    ledger. Returns the pipelines listed."""
    pipelines = await reader.pipelines(sha=sha, limit=budgets.TRIAGE_SHA_PIPELINES + 1)
    if len(pipelines) > budgets.TRIAGE_SHA_PIPELINES:
        pipelines = pipelines[: budgets.TRIAGE_SHA_PIPELINES]
        sources.problems.append(f"commit {sha[:12]} has more than {budgets.TRIAGE_SHA_PIPELINES} pipelines: only the "
                                "newest were read")
    analysed = _analysed(pipelines, request.pipeline_id)
    if analysed is None:
        reader.gaps.append(f"no pipeline found for commit {sha[:12]}")
        sources.unlisted_problem = f"no pipeline of commit {sha[:12]} could be listed"
        return pipelines
    listed = await reader.jobs(analysed, fresh=True)
    sources.analysed, sources.pipeline = by_name(listed.jobs), analysed
    if listed.problem:
        await _failures_beyond(reader, analysed, listed.problem, sources)
    ledger.add_pipeline(analysed, sources.analysed)
    now = [p.get("id") for p in current(pipelines, analysed)]
    for pipeline in pipelines:
        if pipeline.get("id") != analysed.get("id"):
            await read_pipeline(reader, pipeline, sources, ledger if pipeline.get("id") in now else None)
    return pipelines


def _analysed(pipelines: list[Mapping[str, Any]], pipeline_id: int | None) -> Mapping[str, Any] | None:
    """The pipeline the event named (as listed, else as named), or the commit's newest top-level one."""
    if pipeline_id:
        return next((p for p in pipelines if p.get("id") == pipeline_id), {"id": pipeline_id, "status": "failed"})
    return next((p for p in pipelines if p.get("source") != "parent_pipeline"), pipelines[0] if pipelines else None)


async def _failures_beyond(reader: TriageReader, pipeline: Mapping[str, Any], problem: str, sources: Sources) -> None:
    """The analysed pipeline's failed jobs the cut list does not show, listed apart (`scope=failed`): checks that
    cannot be examined (their retries may lie beyond the cut too), so the commit cannot pass."""
    sources.unlisted_problem = problem
    failed = await reader.jobs(pipeline, fresh=True, scope="failed")
    seen = {int(j.get("id") or 0) for attempts in sources.analysed.values() for j in attempts}
    names: dict[str, str] = {}
    for job in failed.jobs:
        name = str(job.get("name"))
        if int(job.get("id") or 0) not in seen and name not in sources.analysed and not job.get("allow_failure"):
            names.setdefault(name, str(job.get("web_url") or ""))
    sources.unlisted_failures = list(names.items())


async def _load_base(reader: TriageReader, base_sha: str, branch: str, sources: Sources) -> None:
    """The merge base's pipelines, those of the target branch first (the base as it was merged)."""
    if not base_sha:
        reader.gaps.append("the merge base of the MR is not known")
        return
    found = await reader.call("gitlab_list_pipelines", sha=base_sha, limit=budgets.TRIAGE_SHA_PIPELINES + 1)
    if not isinstance(found, list):  # not read: the base may have run any job (the gap is said already)
        sources.base_problem = f"the pipelines of the merge base {base_sha[:12]} could not be listed"
        return
    pipelines = [p for p in found if isinstance(p, Mapping)]
    if len(pipelines) > budgets.TRIAGE_SHA_PIPELINES:
        pipelines = pipelines[: budgets.TRIAGE_SHA_PIPELINES]
        sources.base_problem = (f"the merge base {base_sha[:12]} has more than {budgets.TRIAGE_SHA_PIPELINES} "
                                "pipelines: only the newest were read")
        reader.gaps.append(sources.base_problem)
    if not pipelines:
        reader.gaps.append(f"no pipeline ran on the merge base {base_sha[:12]}")
    for pipeline in sorted(pipelines, key=lambda p: p.get("ref") != branch):
        listed = await reader.jobs(pipeline)
        sources.base.add(pipeline, listed.jobs)
        sources.base_problem = sources.base_problem or listed.problem


async def _load_target(reader: TriageReader, request: TriageRequest, branch: str) -> Runs:
    """Recent pipelines of the target branch within the look-back window, newest first."""
    runs = Runs()
    if not branch:
        return runs
    since = (request.now - timedelta(days=request.lookback_days)).strftime("%Y-%m-%dT%H:%M:%SZ")
    pipelines = await reader.pipelines(ref=branch, updated_after=since, limit=request.lookback_pipelines)
    for pipeline in pipelines:
        if pipeline.get("status") in ("success", "failed"):
            runs.add(pipeline, (await reader.jobs(pipeline)).jobs)
    return runs
