"""Where the bot's answers go: the user's thread, or a new internal note when the project requires it."""

from __future__ import annotations

import logging

from hummingbird_agent.config import Config
from hummingbird_agent.gitlab.client import PostedNote
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
    body: str, internal: bool,
) -> PostedNote:
    """Reply in `discussion_id` unless that would put internal analysis into a public thread (seed §10.5)."""
    if discussion_id and (discussion_internal or not internal):
        return await deps.gitlab.reply(project_id, iid, discussion_id, body)
    return await deps.gitlab.create_thread(project_id, iid, body, internal=internal)


async def post_simple_reply(deps: Deps, event: NoteEvent, body: str) -> None:
    """Help, errors and refusals: no session marker, no rate-limit impact."""
    if event.mr is None:
        return
    internal = requires_internal(deps.config, event.mr.project)
    await post_in_thread(deps, event.mr.project_id, event.mr.iid, event.discussion_id, event.internal,
                         cap_body(body), internal)
