"""Phase 2: run a WorkOrder — limits, placeholder, agent run, final note, session save (seed §10.6, §11).

Effectively-once: a redelivered order finds the note it already posted (by session marker) and either
stops (the note is final) or finishes it (the note is still a placeholder after a crash).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterable, Awaitable, Callable, Mapping
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.agent.report import failure_text
from hummingbird_agent.errors import AgentError
from hummingbird_agent.events.protocols import Continuations
from hummingbird_agent.gitlab import note_text
from hummingbird_agent.gitlab.client import PostedNote
from hummingbird_agent.gitlab.markers import SessionMarker, answers_note, format_reply_marker, parse_markers
from hummingbird_agent.gitlab.threads import bot_notes, scan_agent_threads
from hummingbird_agent.metrics.wrappers import elapsed_since
from hummingbird_agent.observability import log_context
from hummingbird_agent.runner.deps import Deps
from hummingbird_agent.runner.executor import SaveSession
from hummingbird_agent.runner.posting import post_in_thread, requires_internal
from hummingbird_agent.runner.rules import project_settings
from hummingbird_agent.runner.status_step import decide_status, needs_model, triage_first
from hummingbird_agent.runner.work_order import WorkOrder
from hummingbird_agent.sessions.base import StoredSession
from hummingbird_agent.triage.model import Triage
from hummingbird_agent.triage.render import pointer, section

log = logging.getLogger(__name__)


async def handle_continuation(deps: Deps, order: WorkOrder, continuations: Continuations,
                              accepted_at: object = None) -> None:
    """Run `order`; `continuations` queues its status-note updates into the MR's own group."""
    with log_context(session_id=order.session_id, project=order.project, mr_iid=order.mr_iid,
                     workflow=order.workflow):
        if order.kind == "decide_status":
            await decide_status(deps, order)
        else:
            await _execute_workflow(deps, order, continuations, accepted_at)


def _marker(order: WorkOrder) -> SessionMarker:
    new_command = order.kind == "new_session" and not order.automatic
    return SessionMarker(
        id=order.session_id, wf=order.workflow, sha=order.sha if order.automatic else None,
        re=order.note_id if order.kind == "resume_session" else None,
        at=order.sha if new_command else None,
    )


def _find_own_note(
    discussions: list[dict[str, Any]], bot_id: int, marker: SessionMarker
) -> tuple[PostedNote, bool] | None:
    """The note this order already posted, and whether it is final (not a placeholder)."""
    for discussion in discussions:
        for note in bot_notes(discussion, bot_id):
            if marker in parse_markers(note.get("body", "")):
                final = not str(note.get("body", "")).startswith(note_text.PLACEHOLDER_TEXT)
                return PostedNote(str(discussion["id"]), int(note["id"])), final
    return None


async def _execute_workflow(deps: Deps, order: WorkOrder, continuations: Continuations,
                            accepted_at: object = None) -> None:
    workflow = deps.config.workflows.get(order.workflow)
    settings = project_settings(workflow, order.project) if workflow else None
    if workflow is None or settings is None:
        log.warning("work order dropped: workflow %s not enabled for %s", order.workflow, order.project)
        return
    # Every event re-decides the commit status first: a retry may have changed the commit since an earlier verdict,
    # and no limit below may leave that verdict standing.
    noted = await _status_first(deps, order, continuations)
    if noted is None:
        return
    bot_id = await deps.gitlab.bot_user_id()
    discussions = await deps.gitlab.discussions(order.project_id, order.mr_iid)
    marker = _marker(order)
    own = _find_own_note(discussions, bot_id, marker)
    if own is not None and own[1]:
        log.info("work order already answered; nothing to do")
        return
    if own is None and order.automatic and not _within_limits(discussions, bot_id, order, settings.max_runs_per_mr):
        return
    resume = None
    if order.kind == "resume_session":
        resume = await _resumed(deps, order, discussions, bot_id)
        if resume is None:
            return
    if workflow.action == "none":
        await _run_without_note(deps, order, resume)
        return
    note = own[0] if own else await _post_placeholder(deps, order, marker, accepted_at)
    await _run(deps, order, marker, note, resume, continuations if noted else None)


async def _resumed(deps: Deps, order: WorkOrder, discussions: list[dict[str, Any]],
                   bot_id: int) -> StoredSession | None:
    """The session a reply resumes; None once the reply saying it is gone (expired or never saved) is posted."""
    if not await deps.sessions.exists(order.session_id):
        await _post_missing_session(deps, order, _never_saved(discussions, bot_id, order.session_id))
        return None
    return await deps.sessions.load(order.session_id)


async def _status_first(deps: Deps, order: WorkOrder, continuations: Continuations) -> bool | None:
    """The commit status decided afresh and posted, then the status note's update queued, before anything else
    (whether the MR keeps a status note); None when that is the whole answer: no model run, as every failure is
    someone else's (`triage.model_when: news`)."""
    if order.kind != "new_session" or deps.triage is None:
        return False
    decided = await deps.triage.decide(deps.gitlab, order)
    if deps.triage.settings(order) is not None:
        await deps.triage.publish_status(deps.gitlab, order, decided, "")
    found, noted = await triage_first(deps, order, continuations)
    if found is None or needs_model(deps, order, found):
        return noted
    log.info("no model run: every failure of pipeline %s is pre-existing, flaky or infrastructure", order.pipeline_id)
    return None


def _within_limits(discussions: list[dict[str, Any]], bot_id: int, order: WorkOrder, max_runs: int) -> bool:
    scan = scan_agent_threads(discussions, bot_id, order.workflow, order.sha)
    if scan.sha_seen:
        log.info("skipped: %s already reviewed sha %s", order.workflow, order.sha)
        return False
    if scan.thread_count >= max_runs:
        log.info("skipped: %s reached max_runs_per_mr (%d)", order.workflow, max_runs)
        return False
    return True


async def _post_placeholder(deps: Deps, order: WorkOrder, marker: SessionMarker,
                            accepted_at: object = None) -> PostedNote:
    body = note_text.placeholder_body(marker, order.workflow)
    internal = requires_internal(deps.config, order.project, order.workflow)
    posted = await post_in_thread(deps, order.project_id, order.mr_iid, order.discussion_id,
                                  order.discussion_internal, body, internal,
                                  lambda text: marker in parse_markers(text))
    if (waited := elapsed_since(accepted_at)) is not None:
        deps.metrics.time_to_placeholder.labels(order.workflow).observe(waited)
    return posted


def _never_saved(discussions: list[dict[str, Any]], bot_id: int, session_id: str) -> bool:
    """Whether the session's own note says its save failed (then it never existed, it did not expire)."""
    return any(
        note_text.UNSAVED_NOTICE in str(note.get("body", ""))
        and any(m.id == session_id for m in parse_markers(str(note.get("body", ""))))
        for discussion in discussions for note in bot_notes(discussion, bot_id)
    )


async def _post_missing_session(deps: Deps, order: WorkOrder, never_saved: bool) -> None:
    internal = requires_internal(deps.config, order.project, order.workflow)
    note_id = order.note_id or 0
    text = note_text.session_unsaved_body() if never_saved else note_text.session_expired_body()
    body = f"{text}\n\n{format_reply_marker(note_id)}"
    await post_in_thread(deps, order.project_id, order.mr_iid, order.discussion_id, order.discussion_internal,
                         body, internal, lambda posted: answers_note(posted, note_id))
    log.info("session %s not found (%s); posted the reply saying so", order.session_id,
             "never saved" if never_saved else "expired")


async def _run_without_note(deps: Deps, order: WorkOrder, resume: StoredSession | None) -> None:
    """`action: none`: the result goes to the log and the session only. A saved session is the run's
    effect, so a redelivered new-session order finds it and stops."""
    if resume is None and await deps.sessions.exists(order.session_id):
        log.info("work order already ran (session saved); nothing to do")
        return

    async def publish(ok: bool, text: str) -> None:
        log.info("workflow result (action none, %s, %d chars): %s", "ok" if ok else "failed", len(text),
                 text[: budgets.LOG_RESULT_MAX_CHARS])

    await deps.executor.run(order, resume, publish, _saver(deps, order, None))


def note_url(deps: Deps, order: WorkOrder, note: PostedNote) -> str:
    return f"{note_text.mr_url(deps.config.gitlab.url, order.project, order.mr_iid)}#note_{note.note_id}"


async def _run(deps: Deps, order: WorkOrder, marker: SessionMarker, note: PostedNote,
               resume: StoredSession | None, status: Continuations | None = None) -> None:
    link = note_url(deps, order, note)
    if status is not None:  # the status note links the analysis thread before the model is asked
        await triage_first(deps, order, status, link)
    found = await deps.triage.for_order(order) if deps.triage is not None else None
    if deps.triage is not None and found is not None and (first := deps.triage.earlier_diagnosis(order, found, link)):
        body = note_text.result_body(pointer(found, first), marker, reply_prompt=False)
        await deps.gitlab.update_note(order.project_id, order.mr_iid, note.discussion_id, note.note_id, body)
        log.info("outage guard: pointed to the earlier diagnosis %s instead of running the model", first)
        return
    await _run_engine(deps, order, marker, note, resume, found)


async def _run_engine(deps: Deps, order: WorkOrder, marker: SessionMarker, note: PostedNote,
                      resume: StoredSession | None, found: Triage | None) -> None:
    # Only agent sessions can be continued by a reply; the knowledge-base engines keep no conversation.
    conversational = order.kind == "new_session" and deps.config.workflows[order.workflow].engine == "agent"

    published, posted_body = False, ""

    async def publish(ok: bool, text: str) -> None:
        nonlocal published, posted_body
        if ok:
            body = note_text.result_body(text, marker, reply_prompt=conversational)
        else:
            log.warning("workflow run failed: %s", text)
            body = note_text.failure_body(marker, text)
        await deps.gitlab.update_note(order.project_id, order.mr_iid, note.discussion_id, note.note_id, body)
        published, posted_body = True, body
        log.info("note %s updated (%s)", note.note_id, "result" if ok else "failure")

    async def mark_unsaved() -> None:
        # Only a new conversation has a reply prompt to withdraw; a resumed one keeps its earlier save.
        if conversational and published and note_text.REPLY_PROMPT in posted_body:
            await deps.gitlab.update_note(order.project_id, order.mr_iid, note.discussion_id, note.note_id,
                                          note_text.unsaved_body(posted_body))

    try:
        await deps.executor.run(order, resume, publish, _saver(deps, order, mark_unsaved))
    except AgentError as exc:
        if published:
            raise
        correlation_id = uuid.uuid4().hex[:12]
        log.error("run could not start correlation_id=%s error=%s", correlation_id, exc)
        deps.metrics.runs.labels(order.workflow, "not_started").inc()
        evidence = f"{section(found)}\n\n" if found is not None else ""
        await publish(False, evidence + failure_text(type(exc).__name__, correlation_id))


def _saver(deps: Deps, order: WorkOrder, on_failure: Callable[[], Awaitable[None]] | None) -> SaveSession:
    """The executor's save step; on failure (which the run logs with the session id and cause) `on_failure`
    tells the note's readers that the conversation cannot be continued."""
    async def save(context: Mapping[str, Any], transcript: str, archive: AsyncIterable[bytes] | None) -> None:
        try:
            await deps.sessions.save(order.session_id, context, transcript, archive)
        except (AgentError, OSError):
            if on_failure is not None:
                try:
                    await on_failure()
                except AgentError as note_exc:
                    log.warning("session %s: the note could not say it was not saved: %s", order.session_id, note_exc)
            raise

    return save
