"""Phase 1: validate an event, check trust, decide, and enqueue a WorkOrder (seed §10.3).

Handlers never run a workflow themselves; they finish in seconds so their message is deleted quickly.
"""

from __future__ import annotations

import logging
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.workflow_names import ACCUMULATE_WORKFLOW, LEARN_COMMAND
from hummingbird_agent.events.protocols import Continuations, Event
from hummingbird_agent.gitlab import note_text
from hummingbird_agent.gitlab.client import DEVELOPER_ACCESS
from hummingbird_agent.gitlab.threads import find_session_for_reply, open_agent_threads, refused_recently
from hummingbird_agent.runner import rules, status_note
from hummingbird_agent.runner.agent_threads import last_analysis, learned_in_thread
from hummingbird_agent.runner.deps import Deps
from hummingbird_agent.runner.mr_incident import failing_jobs, still_failing
from hummingbird_agent.runner.pipeline_status import commit_pipeline, enqueue, status_only
from hummingbird_agent.runner.posting import post_simple_reply
from hummingbird_agent.runner.status_step import all_green
from hummingbird_agent.runner.webhooks import (
    MergeRequestRef,
    NoteEvent,
    PipelineEvent,
    parse_merge_request,
    parse_note,
    parse_pipeline,
)
from hummingbird_agent.runner.work_order import Trigger, WorkKind, WorkOrder, derive_session_id

log = logging.getLogger(__name__)
MR_ACTIONS = {"open", "reopen", "update"}


async def handle_pipeline(deps: Deps, body: Any, continuations: Continuations) -> None:
    event = parse_pipeline(body)
    if event.source != "merge_request_event" or event.mr is None:
        await commit_pipeline(deps, event, continuations)
        return
    mr = event.mr
    if event.status == "success":
        discussions = await deps.gitlab.discussions(mr.project_id, mr.iid)
        await _auto_resolve(deps, mr.project_id, mr.iid, discussions)
        await all_green(deps, continuations, mr.project_id, mr.project, mr.iid, event.sha or mr.sha or "",
                        event.pipeline_id, discussions)
        await _learn_on_success(deps, event, mr, discussions, continuations)
    for name, settings in rules.auto_workflows(deps.config, "pipeline", mr.project):
        allowed, why = rules.rules_allow(
            settings.trigger_rules, user=event.username, branch=mr.target_branch, title=mr.title, status=event.status
        )
        if not allowed:
            log.info("pipeline %s: %s skipped (%s)", event.pipeline_id, name, why)
            await status_only(deps, event, mr.iid, event.sha or mr.sha or "", name, continuations)
            continue
        session_id = derive_session_id("pipeline", mr.project_id, event.pipeline_id, name)
        await enqueue(continuations, WorkOrder(
            kind="new_session", session_id=session_id, workflow=name, trigger="pipeline",
            project_id=mr.project_id, project=mr.project, mr_iid=mr.iid, sha=event.sha or mr.sha,
            pipeline_id=event.pipeline_id,
        ))


async def _auto_resolve(deps: Deps, project_id: int, iid: int, discussions: list[dict[str, Any]]) -> None:
    """A passing MR pipeline resolves the bot's open threads on that MR (unconditionally, seed §10.3)."""
    bot_id = await deps.gitlab.bot_user_id()
    for discussion_id in open_agent_threads(discussions, bot_id):
        await deps.gitlab.resolve_thread(project_id, iid, discussion_id)
        log.info("resolved agent thread %s on !%s after a passing pipeline", discussion_id, iid)


async def _learn_on_success(deps: Deps, event: PipelineEvent, mr: MergeRequestRef,
                            discussions: list[dict[str, Any]], continuations: Continuations) -> None:
    """A passing pipeline after an analysed failure: learn that failure (projects with learn_on_success).
    The learned note goes into the analysis thread, which is how a second success knows it is done."""
    learners = rules.engine_workflows(deps.config, "bamboo-accumulate")
    enabled = [n for n in learners if rules.enabled_for(deps.config, n, mr.project)
               and (s := rules.project_settings(deps.config.workflows[n], mr.project)) and s.learn_on_success]
    if not enabled:
        return
    bot_id = await deps.gitlab.bot_user_id()
    analysis = last_analysis(discussions, bot_id)
    if analysis is None or learned_in_thread(discussions, bot_id, analysis.discussion_id, learners):
        log.info("pipeline %s: nothing new to learn on !%s", event.pipeline_id, mr.iid)
        return
    if not await _failure_fixed(deps, mr.project_id, analysis.sha, event.sha or mr.sha, event.pipeline_id):
        return
    session_id = derive_session_id("learn", mr.project_id, event.pipeline_id, enabled[0])
    await enqueue(continuations, WorkOrder(
        kind="new_session", session_id=session_id, workflow=enabled[0], trigger="pipeline",
        project_id=mr.project_id, project=mr.project, mr_iid=mr.iid, sha=event.sha or mr.sha,
        pipeline_id=event.pipeline_id, discussion_id=analysis.discussion_id, discussion_internal=analysis.internal,
    ))


async def _failure_fixed(deps: Deps, project_id: int, analysed: str | None, passing: str | None,
                         pipeline_id: int) -> bool:
    """Learn only from a fix: every job that failed on the analysed commit passes on the passing one. A job
    that was skipped, removed or still fails means the failure went away without being fixed."""
    if not analysed or not passing:
        log.info("pipeline %s: the analysed commit is not known; nothing learned", pipeline_id)
        return False
    failed = [job.name for job in failing_jobs(await deps.gitlab.commit_statuses(project_id, analysed))]
    unfixed = still_failing(failed, await deps.gitlab.commit_statuses(project_id, passing)) if failed else []
    if not failed or unfixed:
        why = f"{', '.join(unfixed)} did not pass" if unfixed else "no failed job is recorded"
        log.info("pipeline %s: not learned: %s (analysed %s, passing %s)", pipeline_id, why, analysed[:12],
                 passing[:12])
        return False
    return True


async def handle_merge_request(deps: Deps, body: Any, continuations: Continuations) -> None:
    event = parse_merge_request(body)
    mr = event.mr
    if event.action not in MR_ACTIONS or event.draft:
        log.debug("merge request !%s skipped: action %s, draft %s", mr.iid, event.action, event.draft)
        return
    for name, settings in rules.auto_workflows(deps.config, "merge_request", mr.project):
        allowed, why = rules.rules_allow(
            settings.trigger_rules, user=event.username, branch=mr.target_branch, title=mr.title
        )
        if not allowed:
            log.info("merge request !%s: %s skipped (%s)", mr.iid, name, why)
            continue
        session_id = derive_session_id("merge_request", mr.project_id, mr.iid, mr.sha, name)
        await enqueue(continuations, WorkOrder(
            kind="new_session", session_id=session_id, workflow=name, trigger="merge_request",
            project_id=mr.project_id, project=mr.project, mr_iid=mr.iid, sha=mr.sha,
        ))


async def handle_note(deps: Deps, body: Any, continuations: Continuations) -> None:
    event = parse_note(body)
    if event.mr is None or event.action not in ("create", None) or event.system:
        return
    if event.author_id == await deps.gitlab.bot_user_id():
        log.debug("note %s skipped: written by the bot", event.note_id)
        return
    command = rules.parse_command(event.body)
    if command is not None:
        await _handle_command(deps, event, event.mr, command, continuations)
    elif event.discussion_id:
        await _handle_reply(deps, event, event.mr, event.discussion_id, continuations)


async def _member(deps: Deps, event: NoteEvent, mr: MergeRequestRef) -> bool:
    if await deps.gitlab.access_level(mr.project_id, event.author_id) >= DEVELOPER_ACCESS:
        return True
    log.info("note %s: author %s lacks Developer access", event.note_id, event.author_id)
    # The memory of past refusals is the bot's own notes on the MR: it survives restarts and is shared by replicas.
    discussions = await deps.gitlab.discussions(mr.project_id, mr.iid)
    bot_id = await deps.gitlab.bot_user_id()
    if refused_recently(discussions, bot_id, event.author_id, budgets.REFUSAL_NOTE_INTERVAL_S):
        log.info("note %s: author %s was refused on !%s within %.0f s; no second note",
                 event.note_id, event.author_id, mr.iid, budgets.REFUSAL_NOTE_INTERVAL_S)
        return False
    await post_simple_reply(deps, event, note_text.access_denied_body(event.author_id))
    return False


async def _handle_command(deps: Deps, event: NoteEvent, mr: MergeRequestRef, command: rules.SlashCommand,
                          continuations: Continuations) -> None:
    if not await _member(deps, event, mr):
        return
    learners = rules.engine_workflows(deps.config, "bamboo-accumulate")
    described = _described(deps, mr.project, learners)
    if command.name in (None, "help"):
        await post_simple_reply(deps, event, note_text.help_body(described))
        return
    if command.name == LEARN_COMMAND:
        if not learners:
            await post_simple_reply(deps, event, note_text.not_enabled_body(ACCUMULATE_WORKFLOW))
            return
        command = rules.SlashCommand(learners[0], command.text)
    workflow = await _runnable_workflow(deps, event, mr, command.name or "", described)
    if workflow is None:
        return
    session_id = derive_session_id("command", mr.project_id, event.note_id)
    await enqueue(continuations, _order_for_note(
        event, mr, ("new_session", "command"), workflow, command.text, session_id))


def _described(deps: Deps, project: str, learners: list[str]) -> dict[str, str]:
    """Command name -> description, for help and the "available" list of an unknown command."""
    # Help and "available" name only what runs on this project: other projects' workflows are theirs.
    described = {name: wf.description for name, wf in deps.config.workflows.items()
                 if rules.enabled_for(deps.config, name, project)}
    if learners and learners[0] in described:
        described[f"{LEARN_COMMAND} [explanation]"] = (
            "Learn this MR's last analysed failure, with your explanation and the discussion, into the knowledge base")
    return described


async def _runnable_workflow(deps: Deps, event: NoteEvent, mr: MergeRequestRef, name: str,
                             described: dict[str, str]) -> str | None:
    """The workflow `name` resolves to on this project; None once a reply has said why there is none."""
    if name in deps.config.workflows and not rules.enabled_for(deps.config, name, mr.project):
        allowed = rules.project_settings(deps.config.workflows[name], mr.project) is not None
        await post_simple_reply(deps, event, note_text.not_enabled_body(name, allowed))
        return None
    runnable = {n: wf for n, wf in deps.config.workflows.items() if rules.enabled_for(deps.config, n, mr.project)}
    resolution = rules.resolve_workflow(name, runnable)
    if resolution.workflow is None:
        text = (note_text.ambiguous_workflow_body(name, list(resolution.matches)) if resolution.matches
                else note_text.unknown_workflow_body(name, described))
        await post_simple_reply(deps, event, text)
    return resolution.workflow


async def _handle_reply(deps: Deps, event: NoteEvent, mr: MergeRequestRef, discussion_id: str,
                        continuations: Continuations) -> None:
    discussion = await deps.gitlab.discussion(mr.project_id, mr.iid, discussion_id)
    marker = find_session_for_reply(discussion, await deps.gitlab.bot_user_id())
    if marker is None:
        log.debug("note %s ignored: not a command nor a reply to an agent thread", event.note_id)
        return
    if not await _member(deps, event, mr):
        return
    # Legacy markers carry no workflow; the session itself remembers it, this is only the FIFO label.
    workflow = marker.wf if marker.wf in deps.config.workflows else next(iter(deps.config.workflows))
    await enqueue(continuations, _order_for_note(
        event, mr, ("resume_session", "reply"), workflow, event.body, marker.id))


def _order_for_note(event: NoteEvent, mr: MergeRequestRef, kind: tuple[WorkKind, Trigger], workflow: str,
                    message: str, session_id: str) -> WorkOrder:
    return WorkOrder(
        kind=kind[0], session_id=session_id, workflow=workflow, trigger=kind[1],
        project_id=mr.project_id, project=mr.project, mr_iid=mr.iid, sha=mr.sha,
        discussion_id=event.discussion_id, discussion_internal=event.internal,
        note_id=event.note_id, message=message, user_id=event.author_id,
    )


async def handle_event(deps: Deps, event: Event, continuations: Continuations) -> None:
    """Dispatch on (source, event_type) exactly as seed §10.3; anything else is ignored."""
    from hummingbird_agent.runner.execute import handle_continuation

    key = (event.source, event.event_type)
    if key == ("agent", "continuation"):
        await handle_continuation(deps, WorkOrder.from_json(event.body), continuations, event.body.get("accepted_at"))
    elif key == ("agent", status_note.EVENT_TYPE):
        await status_note.apply(deps.gitlab, deps.seal, status_note.StatusUpdate.from_json(event.body))
    elif event.source == "gitlab" and event.event_type in GITLAB_HANDLERS:
        await GITLAB_HANDLERS[event.event_type](deps, event.body, continuations)
    else:
        log.debug("ignored event %s/%s", *key)


# GitLab event type -> handler. The webhook queues exactly these kinds (events.webhook.HANDLED_EVENT_TYPES;
# a test holds the two equal): a kind queued but not handled would be acknowledged and silently dropped.
GITLAB_HANDLERS = {"pipeline": handle_pipeline, "merge_request": handle_merge_request, "note": handle_note}
