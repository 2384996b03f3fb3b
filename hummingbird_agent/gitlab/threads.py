"""Reading MR discussions: agent-thread scans for rate limits and SHA dedup, session lookup for replies.

Only notes written by the bot count; markers anywhere else are ignored, so nobody can hijack a session
or inflate a counter by typing a marker.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from hummingbird_agent.gitlab.markers import SessionMarker, parse_markers
from hummingbird_agent.gitlab.note_text import refusal_tag

Discussion = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ThreadScan:
    """What the bot's own notes on an MR say about one workflow."""

    thread_count: int
    sha_seen: bool


def bot_notes(discussion: Discussion, bot_id: int) -> list[Mapping[str, Any]]:
    return [n for n in discussion.get("notes") or [] if (n.get("author") or {}).get("id") == bot_id]


def scan_agent_threads(discussions: Iterable[Discussion], bot_id: int, workflow: str, sha: str | None) -> ThreadScan:
    """One pass: threads the workflow opened (legacy markers never count) and whether it saw `sha`."""
    threads, sha_seen = 0, False
    for discussion in discussions:
        markers = [m for note in bot_notes(discussion, bot_id) for m in parse_markers(note.get("body", ""))]
        mine = [m for m in markers if not m.legacy and m.wf == workflow]
        if mine:
            threads += 1
            sha_seen = sha_seen or (sha is not None and any(m.sha == sha for m in mine))
    return ThreadScan(thread_count=threads, sha_seen=sha_seen)


def find_session_for_reply(discussion: Discussion, bot_id: int) -> SessionMarker | None:
    """The first session marker in a bot-authored note of the thread, or None."""
    for note in bot_notes(discussion, bot_id):
        markers = parse_markers(note.get("body", ""))
        if markers:
            return markers[0]
    return None


def find_session_note(discussions: Iterable[Discussion], bot_id: int, session_id: str) -> tuple[str, int] | None:
    """(discussion id, note id) of the bot's note carrying `session_id`: a redelivery finds its placeholder."""
    for discussion in discussions:
        for note in bot_notes(discussion, bot_id):
            if any(m.id == session_id for m in parse_markers(note.get("body", ""))):
                return str(discussion["id"]), int(note["id"])
    return None


def open_agent_threads(discussions: Iterable[Discussion], bot_id: int) -> list[str]:
    """Ids of resolvable, unresolved threads the bot started (auto-resolved when the pipeline passes)."""
    ids = []
    for discussion in discussions:
        notes = discussion.get("notes") or []
        if not notes or (notes[0].get("author") or {}).get("id") != bot_id:
            continue
        first = notes[0]
        if parse_markers(first.get("body", "")) and first.get("resolvable") and not first.get("resolved"):
            ids.append(str(discussion["id"]))
    return ids



def refused_recently(discussions: Iterable[Discussion], bot_id: int, user_id: int, window_s: float) -> bool:
    """Whether the bot refused `user_id` on this MR within `window_s` before the MR's newest note.

    GitLab's own timestamps on both ends (the newest note is the comment being answered), so the
    service's clock and GitLab's need not agree.
    """
    tag = refusal_tag(user_id)
    notes = [note for discussion in discussions for note in discussion.get("notes") or []]
    times = [t for note in notes if (t := _created(note)) is not None]
    if not times:
        return False
    since = max(times) - timedelta(seconds=window_s)
    for note in notes:
        if (note.get("author") or {}).get("id") == bot_id and tag in str(note.get("body") or ""):
            created = _created(note)
            if created is None or created >= since:  # an unreadable time counts as recent: no second note
                return True
    return False


def _created(note: Mapping[str, Any]) -> datetime | None:
    try:
        created = datetime.fromisoformat(str(note.get("created_at")))
    except ValueError:
        return None
    return created if created.tzinfo else created.replace(tzinfo=UTC)
