"""The MR's status note in the service: found by its marker among the bot's notes, created once, edited in place.
Every write is checked by reading the note back: replicas writing at once (each read, then PUT) converge, since a
writer whose section was overwritten merges again; two notes created at once are merged into the older."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.errors import AgentError
from hummingbird_agent.gitlab.client import GitLabClient
from hummingbird_agent.gitlab.threads import bot_notes
from hummingbird_agent.triage.status_note import StatusEntry, is_status_note, merged, parse, render

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class StatusTarget:
    """Where the note lives: the MR, and whether its notes must be internal (the workflow's setting)."""

    project_id: int
    iid: int
    mr_url: str
    internal: bool = False


async def record(gitlab: GitLabClient, target: StatusTarget, entry: StatusEntry, create: bool = True,
                 read: list[dict[str, Any]] | None = None) -> str | None:
    """Show `entry` in the MR's status note (created when there is none and `create`); the note's URL, or None
    when there is no note to edit. A later pipeline of the same commit already shown wins. `read`: the MR's
    discussions when the caller has just read them (the first round then reads nothing)."""
    for _ in range(budgets.STATUS_NOTE_WRITE_ROUNDS):
        notes = await _status_notes(gitlab, target, read)
        read = None
        if not notes:
            if not create:
                return None
            await gitlab.post_note_once(target.project_id, target.iid, render([entry]), discussion_id=None,
                                        internal=target.internal, is_mine=is_status_note, plain=True)
            continue  # read back: another replica may have created one at the same moment
        (keep, body), *extra = notes
        entries = parse(body)
        for _, other in extra:
            for found in parse(other):
                entries = merged(entries, found) or entries
        wanted = merged(entries, entry)
        if wanted is None and not extra:
            return _url(target, keep)
        await gitlab.edit_note(target.project_id, target.iid, keep, render(wanted or entries))
        await _drop(gitlab, target, [note_id for note_id, _ in extra])
    log.warning("status note of !%s: still changing after %d writes; left as the last one", target.iid,
                budgets.STATUS_NOTE_WRITE_ROUNDS)
    notes = await _status_notes(gitlab, target)
    return _url(target, notes[0][0]) if notes else None


async def _status_notes(gitlab: GitLabClient, target: StatusTarget,
                        read: list[dict[str, Any]] | None = None) -> list[tuple[int, str]]:
    """(id, body) of the bot's status notes on the MR, oldest first."""
    bot_id = await gitlab.bot_user_id()
    found: list[tuple[int, str]] = []
    discussions = read if read is not None else await gitlab.discussions(target.project_id, target.iid)
    for discussion in discussions:
        found += [(int(n["id"]), str(n.get("body") or "")) for n in bot_notes(discussion, bot_id) if _status(n)]
    return sorted(found)


def _status(note: Mapping[str, Any]) -> bool:
    return is_status_note(str(note.get("body") or ""))


async def _drop(gitlab: GitLabClient, target: StatusTarget, note_ids: list[int]) -> None:
    """Delete the younger duplicates once their sections are merged into the older note."""
    for note_id in note_ids:
        try:
            await gitlab.delete_note(target.project_id, target.iid, note_id)
        except AgentError as exc:  # already deleted by the replica that created it: the read-back shows which
            log.info("status note %s of !%s not deleted: %s", note_id, target.iid, exc)


def _url(target: StatusTarget, note_id: int) -> str:
    return f"{target.mr_url}#note_{note_id}"
