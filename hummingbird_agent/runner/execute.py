"""Phase 2: run a WorkOrder — limits, placeholder, agent run, final note, session save (seed §10.6, §11).

Effectively-once: a redelivered order finds the note it already posted (by session marker) and either
stops (the note is final) or finishes it (the note is still a placeholder after a crash).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterable, Mapping
from typing import Any

from hummingbird_agent.agent.report import failure_text
from hummingbird_agent.errors import AgentError
from hummingbird_agent.gitlab import note_text
from hummingbird_agent.gitlab.client import PostedNote
from hummingbird_agent.gitlab.markers import SessionMarker, parse_markers
from hummingbird_agent.gitlab.threads import bot_notes, scan_agent_threads
from hummingbird_agent.metrics.wrappers import elapsed_since
from hummingbird_agent.observability import log_context
from hummingbird_agent.runner.deps import Deps
from hummingbird_agent.runner.posting import post_in_thread, requires_internal
from hummingbird_agent.runner.rules import project_settings
from hummingbird_agent.runner.work_order import WorkOrder
from hummingbird_agent.sessions.base import StoredSession

log = logging.getLogger(__name__)


async def handle_continuation(deps: Deps, order: WorkOrder, accepted_at: object = None) -> None:
    with log_context(session_id=order.session_id, project=order.project, mr_iid=order.mr_iid,
                     workflow=order.workflow):
        await _execute_workflow(deps, order, accepted_at)


def _marker(order: WorkOrder) -> SessionMarker:
    return SessionMarker(
        id=order.session_id, wf=order.workflow, sha=order.sha if order.automatic else None,
        re=order.note_id if order.kind == "resume_session" else None,
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


async def _execute_workflow(deps: Deps, order: WorkOrder, accepted_at: object = None) -> None:
    workflow = deps.config.workflows.get(order.workflow)
    settings = project_settings(workflow, order.project) if workflow else None
    if workflow is None or settings is None:
        log.warning("work order dropped: workflow %s not enabled for %s", order.workflow, order.project)
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
        if not await deps.sessions.exists(order.session_id):
            await _post_expired(deps, order)
            return
        resume = await deps.sessions.load(order.session_id)
    note = own[0] if own else await _post_placeholder(deps, order, marker)
    if own is None and (waited := elapsed_since(accepted_at)) is not None:
        deps.metrics.time_to_placeholder.labels(order.workflow).observe(waited)
    await _run(deps, order, marker, note, resume)


def _within_limits(discussions: list[dict[str, Any]], bot_id: int, order: WorkOrder, max_runs: int) -> bool:
    scan = scan_agent_threads(discussions, bot_id, order.workflow, order.sha)
    if scan.sha_seen:
        log.info("skipped: %s already reviewed sha %s", order.workflow, order.sha)
        return False
    if scan.thread_count >= max_runs:
        log.info("skipped: %s reached max_runs_per_mr (%d)", order.workflow, max_runs)
        return False
    return True


async def _post_placeholder(deps: Deps, order: WorkOrder, marker: SessionMarker) -> PostedNote:
    body = note_text.placeholder_body(marker, order.workflow)
    internal = requires_internal(deps.config, order.project, order.workflow)
    return await post_in_thread(deps, order.project_id, order.mr_iid, order.discussion_id,
                                order.discussion_internal, body, internal)


async def _post_expired(deps: Deps, order: WorkOrder) -> None:
    internal = requires_internal(deps.config, order.project, order.workflow)
    await post_in_thread(deps, order.project_id, order.mr_iid, order.discussion_id, order.discussion_internal,
                         note_text.session_expired_body(), internal)
    log.info("session %s not found; posted the expired-session reply", order.session_id)


async def _run(deps: Deps, order: WorkOrder, marker: SessionMarker, note: PostedNote,
               resume: StoredSession | None) -> None:
    published = False
    # Only agent sessions can be continued by a reply; the knowledge-base engines keep no conversation.
    conversational = order.kind == "new_session" and deps.config.workflows[order.workflow].engine == "agent"

    async def publish(ok: bool, text: str) -> None:
        nonlocal published
        if ok:
            body = note_text.result_body(text, marker, reply_prompt=conversational)
        else:
            log.warning("workflow run failed: %s", text)
            body = note_text.failure_body(marker, text)
        await deps.gitlab.update_note(order.project_id, order.mr_iid, note.discussion_id, note.note_id, body)
        published = True
        log.info("note %s updated (%s)", note.note_id, "result" if ok else "failure")

    async def save(context: Mapping[str, Any], transcript: str, archive: AsyncIterable[bytes] | None) -> None:
        await deps.sessions.save(order.session_id, context, transcript, archive)

    try:
        await deps.executor.run(order, resume, publish, save)
    except AgentError as exc:
        if published:
            raise
        correlation_id = uuid.uuid4().hex[:12]
        log.error("run could not start correlation_id=%s error=%s", correlation_id, exc)
        deps.metrics.runs.labels(order.workflow, "not_started").inc()
        await publish(False, failure_text(type(exc).__name__, correlation_id))
