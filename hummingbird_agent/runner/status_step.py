"""The status note in a run: queued from the triage before any model call, linked to the analysis thread when
one starts, "all green" when a pipeline passes; and whether the model is asked at all (`triage.model_when`). Each
change goes to the MR's own queue group (runner/status_note.py), which writes it."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from hummingbird_agent.errors import AgentError
from hummingbird_agent.events.protocols import Continuations
from hummingbird_agent.gitlab import note_text
from hummingbird_agent.gitlab.statuses import set_status
from hummingbird_agent.runner import rules
from hummingbird_agent.runner.broken_issue import close_fixed, track_breaks
from hummingbird_agent.runner.deps import Deps
from hummingbird_agent.runner.posting import requires_internal
from hummingbird_agent.runner.status_note import StatusTarget, StatusUpdate, status_notes, submit
from hummingbird_agent.runner.work_order import WorkOrder
from hummingbird_agent.triage.model import Triage
from hummingbird_agent.triage.status_note import failed_entry, green_entry

log = logging.getLogger(__name__)


def _target(deps: Deps, project_id: int, project: str, iid: int, workflow: str | None) -> StatusTarget:
    return StatusTarget(project_id, iid, note_text.mr_url(deps.config.gitlab.url, project, iid),
                        requires_internal(deps.config, project, workflow))


def _pipeline_url(deps: Deps, project: str, pipeline_id: int) -> str:
    return note_text.pipeline_url(deps.config.gitlab.url, project, pipeline_id)


def _noted(deps: Deps, order: WorkOrder) -> bool:
    """Whether this order keeps the MR's status note: an automatic run of a pipeline, triaged, with the note on."""
    settings = deps.triage.settings(order) if deps.triage is not None else None
    return settings is not None and settings.status_note and order.automatic and order.pipeline_id is not None


async def triage_first(deps: Deps, order: WorkOrder, continuations: Continuations,
                       thread_url: str = "") -> tuple[Triage | None, bool]:
    """The order's triage (None without one) and whether it keeps a status note; the note's update (with
    `thread_url`, the analysis thread, when the model runs) queued before any model call. The commit status is the
    order's own (posted when the triage decided it): an update applied later never carries an older decision."""
    found = await deps.triage.for_order(order) if deps.triage is not None else None
    if not thread_url and found is not None and deps.triage is not None:
        # Once an order: the second update (the analysis thread's link) reuses the issues the first one found.
        found = deps.triage.amend(order, await _with_issues(deps, order, found))
    if found is None or deps.triage is None or not _noted(deps, order) or order.pipeline_id is None:
        return found, False
    entry = failed_entry(found, order.pipeline_id, _pipeline_url(deps, order.project, order.pipeline_id), thread_url)
    target = _target(deps, order.project_id, order.project, order.mr_iid, order.workflow)
    await submit(continuations, StatusUpdate(target, entry))
    return found, True


async def _with_issues(deps: Deps, order: WorkOrder, found: Triage | None) -> Triage | None:
    """The triage with each tracked break's issue found, opened or updated (`triage.culprit_issue`, automatic runs)."""
    service = deps.triage
    settings = service.settings(order) if service is not None else None
    if found is None or service is None or settings is None or not settings.culprit_issue or not order.automatic:
        return found
    checks = await track_breaks(deps.gitlab, order.project_id, order.mr_iid, found.checks,
                                lambda meta: service.fixed(order.workflow, order.project, meta))
    return replace(found, checks=checks)


def _issue_keeper(deps: Deps, project: str) -> str | None:
    """The first workflow of the project that keeps break issues: it reads whether each break is fixed."""
    workflows = deps.config.workflows
    return next((name for name, _ in rules.auto_workflows(deps.config, "pipeline", project)
                 if workflows[name].triage.enabled and workflows[name].triage.culprit_issue), None)


async def untrack(deps: Deps, project_id: int, project: str, iid: int) -> None:
    """A passing pipeline: the MR is no longer listed as blocked on the project's break issues."""
    workflow, service = _issue_keeper(deps, project), deps.triage
    if workflow is None or service is None:
        return
    await track_breaks(deps.gitlab, project_id, iid, (), lambda meta: service.fixed(workflow, project, meta))


async def branch_finished(deps: Deps, project_id: int, project: str, branch: str) -> None:
    """A pipeline of a branch finished: the break issues of that branch that it fixed are closed."""
    workflow, service = _issue_keeper(deps, project), deps.triage
    if workflow is None or service is None or not branch:
        return
    await close_fixed(deps.gitlab, project_id, branch, lambda meta: service.fixed(workflow, project, meta))


def needs_model(deps: Deps, order: WorkOrder, found: Triage) -> bool:
    """`model_when: news`: an automatic run asks the model only when some failure is new, known or unclassified,
    or something was not examined; a command always does."""
    settings = deps.triage.settings(order) if deps.triage is not None else None
    if settings is None or settings.model_when == "always" or not order.automatic:
        return True
    return not found.all_not_yours


async def all_green(deps: Deps, continuations: Continuations, project_id: int, project: str, iid: int, sha: str,
                    pipeline_id: int, discussions: list[dict[str, Any]]) -> None:
    """A passing pipeline: the status note, where the MR has one (`discussions`, just read by the caller), shows it
    green; no note is created for it, and no update is queued for an MR without one. The MR leaves the lists of
    the break issues it was blocked by."""
    target = _target(deps, project_id, project, iid, None)
    if status_notes(discussions, await deps.gitlab.bot_user_id(), target.sealed(deps.seal)):
        entry = green_entry(sha, pipeline_id, _pipeline_url(deps, project, pipeline_id))
        await submit(continuations, StatusUpdate(target, entry, create=False))
    await untrack(deps, project_id, project, iid)


async def decide_status(deps: Deps, order: WorkOrder) -> None:
    """A pipeline event that runs no workflow (it passed, was canceled): the commit status decided afresh."""
    if deps.triage is None:
        return
    found = await deps.triage.decide(deps.gitlab, order)
    await deps.triage.publish_status(deps.gitlab, order, found, "")
    log.info("commit status of %s decided on pipeline %s: %s", (order.sha or "")[:12], order.pipeline_id,
             found.status if found is not None else "no triage")


async def mark_pending(deps: Deps, project_id: int, project: str, sha: str, pipeline_id: int, workflow: str) -> None:
    """A pipeline of the commit started or runs: the workflow's commit status is pending until its events decide."""
    settings = deps.config.workflows[workflow].triage
    if not (settings.enabled and settings.commit_status and sha):
        return
    try:
        await set_status(deps.gitlab, project_id, sha, name=settings.commit_status, state="pending",
                         target_url=_pipeline_url(deps, project, pipeline_id),
                         description=f"Hummingbird triage: pipeline {pipeline_id} is running")
    except AgentError as exc:
        log.warning("commit status %s not set: %s", settings.commit_status, exc)
