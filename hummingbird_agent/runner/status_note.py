"""The MR's status note in the service: one writer at a time. Every change is a StatusUpdate sent to the MR's own
FIFO group (`StatusUpdate.group`), so the queue serialises writers across pipelines, workers and replicas: each
update reads the note, merges its section and writes it back with nobody writing in between. The note is found by
its signed head among the bot's notes, created once, edited in place; a note from before markers were signed, or
signed with a rotated key, is adopted (its unverified sections dropped), and duplicates an earlier version left are
merged into the older."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, replace
from typing import Any

from pydantic import ConfigDict, TypeAdapter

from hummingbird_agent import budgets
from hummingbird_agent.errors import AgentError
from hummingbird_agent.events.envelope import encode_envelope
from hummingbird_agent.events.protocols import Continuations
from hummingbird_agent.gitlab.client import GitLabClient
from hummingbird_agent.gitlab.seal import Seal
from hummingbird_agent.runner.work_order import from_queue
from hummingbird_agent.triage.status_note import (
    StatusEntry,
    is_adoptable_status_note,
    is_status_note,
    merged,
    parse,
    render,
)

log = logging.getLogger(__name__)
EVENT_TYPE = "status_note"
EVIDENCE_LEFT_OUT = "_The excerpts were too large to pass on; the jobs' logs have them._"


@dataclass(frozen=True, slots=True)
class StatusTarget:
    """Where the note lives: the MR, and whether its notes must be internal (the workflow's setting)."""

    project_id: int
    iid: int
    mr_url: str
    internal: bool = False

    def sealed(self, seal: Seal) -> Seal:
        """`seal` bound to this MR: markers signed for another MR do not verify here."""
        return seal.within(f"{self.project_id}!{self.iid}")


@dataclass(frozen=True, slots=True)
class StatusUpdate:
    """One change of an MR's status note as it crosses the queue: the section to show, and whether a note may be
    created for it."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # validated by from_json, like any queue input

    target: StatusTarget
    entry: StatusEntry
    create: bool = True

    @property
    def group(self) -> str:
        """The MR's own FIFO group: every update of one MR's note runs after the one before it."""
        return f"status-note:{self.target.project_id}:{self.target.iid}"

    def to_json(self) -> dict[str, Any]:
        return {"status_update": asdict(self)}

    @staticmethod
    def from_json(body: Any) -> StatusUpdate:
        return from_queue(_ADAPTER, body, "status_update", "status update")


_ADAPTER = TypeAdapter(StatusUpdate)


async def submit(continuations: Continuations, update: StatusUpdate) -> None:
    """Queue `update` behind the MR's earlier ones (its group); `apply` carries it out. Excerpts too large for one
    message are left out (the verdicts are what the note is for)."""
    body = update.to_json()
    if len(encode_envelope("agent", EVENT_TYPE, body).encode()) > budgets.QUEUE_MESSAGE_MAX_BYTES:
        log.warning("status note of !%s: the excerpts of pipeline %s are too large for the queue; left out",
                    update.target.iid, update.entry.pipeline_id)
        body = replace(update, entry=replace(update.entry, evidence=EVIDENCE_LEFT_OUT)).to_json()
    await continuations.send(update.group, EVENT_TYPE, body)


async def apply(gitlab: GitLabClient, seal: Seal, update: StatusUpdate) -> str | None:
    """Carry out one queued update: the note's URL, or None when there is no note to edit."""
    link = await record(gitlab, seal, update.target, update.entry, update.create)
    if link is not None:
        log.info("status note of !%s: pipeline %s %s", update.target.iid, update.entry.pipeline_id,
                 "passed" if update.entry.state == "success" else "triaged")
    return link


async def record(gitlab: GitLabClient, seal: Seal, target: StatusTarget, entry: StatusEntry,
                 create: bool = True) -> str | None:
    """Show `entry` in the MR's status note (created when there is none and `create`); the note's URL, or None
    when there is no note to edit. A later pipeline of the same commit already shown wins. The caller holds the
    MR's group: nobody else writes the note meanwhile."""
    seal = target.sealed(seal)
    for _ in range(budgets.STATUS_NOTE_WRITE_ROUNDS):
        notes = await _status_notes(gitlab, seal, target)
        if not notes:
            if not create:
                return None
            await gitlab.post_note_once(target.project_id, target.iid, render([entry], seal), discussion_id=None,
                                        internal=target.internal, is_mine=lambda body: is_status_note(body, seal),
                                        plain=True)
            continue  # read back for its id
        (keep, body), *extra = notes
        entries = parse(body, seal)
        for _, other in extra:
            for found in parse(other, seal):
                entries = merged(entries, found) or entries
        wanted = merged(entries, entry)
        if wanted is None and not extra:
            return _url(target, keep)
        await gitlab.edit_note(target.project_id, target.iid, keep, render(wanted or entries, seal))
        await _drop(gitlab, target, [note_id for note_id, _ in extra])
    log.warning("status note of !%s: still changing after %d writes; left as the last one", target.iid,
                budgets.STATUS_NOTE_WRITE_ROUNDS)
    notes = await _status_notes(gitlab, seal, target)
    return _url(target, notes[0][0]) if notes else None


async def _status_notes(gitlab: GitLabClient, seal: Seal, target: StatusTarget) -> list[tuple[int, str]]:
    discussions = await gitlab.discussions(target.project_id, target.iid)
    return status_notes(discussions, await gitlab.bot_user_id(), seal)


def status_notes(discussions: list[dict[str, Any]], bot_id: int, seal: Seal) -> list[tuple[int, str]]:
    """(id, body) of the MR's status notes, oldest first: the first note of a discussion, by the bot, that begins
    with the head the service signed for this MR (`seal`, bound to it), or the head of a note from before signing or
    signed with a rotated key."""
    found: list[tuple[int, str]] = []
    for discussion in discussions:
        first = (discussion.get("notes") or [{}])[0]
        body = str(first.get("body") or "")
        if (first.get("author") or {}).get("id") == bot_id and (
                is_status_note(body, seal) or is_adoptable_status_note(body)):
            found.append((int(first["id"]), body))
    return sorted(found)


async def _drop(gitlab: GitLabClient, target: StatusTarget, note_ids: list[int]) -> None:
    """Delete the younger duplicates once their sections are merged into the older note."""
    for note_id in note_ids:
        try:
            await gitlab.delete_note(target.project_id, target.iid, note_id)
        except AgentError as exc:  # already gone: the read-back shows which
            log.info("status note %s of !%s not deleted: %s", note_id, target.iid, exc)


def _url(target: StatusTarget, note_id: int) -> str:
    return f"{target.mr_url}#note_{note_id}"
