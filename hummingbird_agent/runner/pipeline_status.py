"""Phase 1's part of the commit status: a pipeline event that runs no workflow still moves it. Pending while a
pipeline of the commit runs; decided afresh once it has finished, in the MR's own message group (one decision at a
time). A branch pipeline of an open MR's head commit counts as much as the MR's own pipelines: the decision covers
every pipeline of the commit, so its finishing must decide again."""

from __future__ import annotations

import logging
import time

from hummingbird_agent.events.protocols import Continuations
from hummingbird_agent.runner import rules
from hummingbird_agent.runner.deps import Deps
from hummingbird_agent.runner.status_step import branch_finished, mark_pending
from hummingbird_agent.runner.webhooks import PipelineEvent
from hummingbird_agent.runner.work_order import WorkOrder, derive_session_id
from hummingbird_agent.triage.reader import FINISHED

log = logging.getLogger(__name__)


async def enqueue(continuations: Continuations, order: WorkOrder) -> None:
    # accepted_at (wall clock): the placeholder's latency is measured from here, across workers.
    await continuations.enqueue(order.session_id, {**order.to_json(), "accepted_at": time.time()})
    log.info("enqueued %s %s for %s!%s", order.kind, order.workflow, order.project, order.mr_iid,
             extra={"session_id": order.session_id, "workflow": order.workflow})


async def status_only(deps: Deps, event: PipelineEvent, iid: int, sha: str, workflow: str,
                      continuations: Continuations) -> None:
    """The workflow's commit status of MR `iid` (head `sha`) after `event`, which runs no workflow."""
    triage = deps.config.workflows[workflow].triage
    if not (triage.enabled and triage.commit_status and sha):
        return
    if event.status not in FINISHED:
        await mark_pending(deps, event.project_id, event.project, sha, event.pipeline_id, workflow)
        return
    await enqueue(continuations, WorkOrder(
        kind="decide_status", session_id=derive_session_id("status", event.project_id, iid, workflow),
        workflow=workflow, trigger="pipeline", project_id=event.project_id, project=event.project, mr_iid=iid,
        sha=sha, pipeline_id=event.pipeline_id,
    ))


async def commit_pipeline(deps: Deps, event: PipelineEvent, continuations: Continuations) -> None:
    """A pipeline that is not an MR's (a push to the MR's branch runs one on the same commit): the status of each
    open MR whose head it is; once it finished, the break issues of its branch that it fixed are closed. Nothing is
    read for a project with neither a triaged commit status nor break issues."""
    if event.status in FINISHED and event.source != "parent_pipeline":
        await branch_finished(deps, event.project_id, event.project, event.ref)
    workflows = _status_workflows(deps, event.project)
    if not workflows or not event.sha:
        log.debug("pipeline %s skipped: source %s", event.pipeline_id, event.source)
        return
    heads = await _heads(deps, event)
    # Pending is the commit's (one status whatever the MR); a decision is each MR's own (its base, its notes).
    for iid in heads[:1] if event.status not in FINISHED else heads:
        for workflow in workflows:
            await status_only(deps, event, iid, event.sha, workflow, continuations)


def _status_workflows(deps: Deps, project: str) -> list[str]:
    """The project's pipeline workflows that post a triaged commit status."""
    settings = deps.config.workflows
    return [name for name, _ in rules.auto_workflows(deps.config, "pipeline", project)
            if settings[name].triage.enabled and settings[name].triage.commit_status]


async def _heads(deps: Deps, event: PipelineEvent) -> list[int]:
    """The open MRs whose head is the pipeline's commit."""
    heads = [int(m["iid"]) for m in await deps.gitlab.open_merge_requests_of(event.project_id, event.sha)
             if m.get("sha") == event.sha and isinstance(m.get("iid"), int)]
    log.info("pipeline %s (%s) of %s: the head of %s", event.pipeline_id, event.source, event.sha[:12],
             ", ".join(f"!{iid}" for iid in heads) or "no open MR")
    return heads
