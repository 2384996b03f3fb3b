"""Where the bot's answers go: the user's thread, or a new internal note when the project requires it."""

from __future__ import annotations

import logging
from collections.abc import Callable

from hummingbird_agent.config.loading import Config
from hummingbird_agent.gitlab.client import PostedNote
from hummingbird_agent.gitlab.markers import answers_note, format_reply_marker
from hummingbird_agent.gitlab.note_text import cap_body
from hummingbird_agent.runner.deps import Deps
from hummingbird_agent.runner.webhooks import NoteEvent

log = logging.getLogger(__name__)


def requires_internal(config: Config, project: str, workflow: str | None = None) -> bool:
    """internal_notes for the workflow on the project; without a workflow, whether any workflow requires it."""
    workflows = [config.workflows[workflow]] if workflow else list(config.workflows.values())
    return any((s := wf.projects.get(project)) is not None and s.internal_notes for wf in workflows)


async def post_in_thread(
    deps: Deps, project_id: int, iid: int, discussion_id: str | None, discussion_internal: bool,
    body: str, internal: bool, is_mine: Callable[[str], bool],
) -> PostedNote:
    """Reply in `discussion_id` unless that would put internal analysis into a public thread (seed §10.5).
    Posted once: after a failed POST the bot's note recognised by `is_mine` is looked for first."""
    target = discussion_id if discussion_id and (discussion_internal or not internal) else None
    return await deps.gitlab.post_note_once(project_id, iid, body, discussion_id=target, internal=internal,
                                            is_mine=is_mine)


async def post_simple_reply(deps: Deps, event: NoteEvent, body: str) -> None:
    """Help, errors and refusals: no session marker, no rate-limit impact. A reply marker names the
    answered note, so a POST that failed after GitLab stored it is found instead of repeated."""
    if event.mr is None:
        return
    internal = requires_internal(deps.config, event.mr.project)
    tail = f"\n\n{format_reply_marker(event.note_id)}"
    await post_in_thread(deps, event.mr.project_id, event.mr.iid, event.discussion_id, event.internal,
                         cap_body(body, reserve=len(tail)) + tail, internal,
                         lambda text: answers_note(text, event.note_id))
