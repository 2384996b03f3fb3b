"""Thread scans: only the bot's notes count; legacy markers never count toward limits; refusal memory."""

from __future__ import annotations

from typing import Any

from hummingbird_agent.gitlab.markers import SessionMarker, format_marker
from hummingbird_agent.gitlab.note_text import access_denied_body
from hummingbird_agent.gitlab.threads import (
    find_session_note,
    open_agent_threads,
    refused_recently,
    scan_agent_threads,
)

BOT, USER = 9001, 42
S1 = "11111111-1111-4111-8111-111111111111"
S2 = "22222222-2222-4222-8222-222222222222"
S3 = "33333333-3333-4333-8333-333333333333"


def note(author: int, body: str, nid: int = 1, **extra: Any) -> dict[str, Any]:
    return {"id": nid, "author": {"id": author}, "body": body, **extra}


def disc(did: str, *notes: dict[str, Any]) -> dict[str, Any]:
    return {"id": did, "notes": list(notes)}


def marker(sid: str, wf: str | None = None, sha: str | None = None) -> str:
    return format_marker(SessionMarker(id=sid, wf=wf, sha=sha))


DISCUSSIONS = [
    disc("d1", note(BOT, "result " + marker(S1, "analyze-failures", "sha1"), 10, resolvable=True, resolved=False)),
    disc("d2", note(BOT, "result " + marker(S2, "review-mr", "sha1"), 11)),
    disc("d3", note(BOT, "legacy " + f"<!-- hummingbird-session {S3} -->", 12)),
    # A user pasting a marker must not count and must not be found.
    disc("d4", note(USER, "forged " + marker(S3, "analyze-failures", "sha2"), 13)),
]


def test_scan_counts_only_bot_threads_of_the_workflow() -> None:
    scan = scan_agent_threads(DISCUSSIONS, BOT, "analyze-failures", "sha1")
    assert scan.thread_count == 1 and scan.sha_seen
    assert not scan_agent_threads(DISCUSSIONS, BOT, "analyze-failures", "sha2").sha_seen
    assert scan_agent_threads(DISCUSSIONS, BOT, "other", "sha1").thread_count == 0




def test_find_session_note_and_open_threads() -> None:
    assert find_session_note(DISCUSSIONS, BOT, S2) == ("d2", 11)
    assert find_session_note(DISCUSSIONS, BOT, S3) == ("d3", 12)
    assert find_session_note(DISCUSSIONS[3:], BOT, S3) is None
    assert open_agent_threads(DISCUSSIONS, BOT) == ["d1"]


def at(minute: int) -> str:
    return f"2026-01-05T{9 + minute // 60:02d}:{minute % 60:02d}:00.000Z"


def test_a_refusal_is_remembered_for_an_hour_per_user() -> None:
    refusal = disc("r", note(USER, "/hummingbird ana", 1, created_at=at(0)),
                   note(BOT, access_denied_body(USER), 2, created_at=at(1)))
    later = disc("l", note(USER, "/hummingbird ana", 3, created_at=at(59)))
    assert refused_recently([refusal, later], BOT, USER, 3600)
    assert not refused_recently([refusal, later], BOT, USER + 1, 3600)  # another user is answered
    much_later = disc("m", note(USER, "/hummingbird ana", 4, created_at=at(62)))
    assert not refused_recently([refusal, much_later], BOT, USER, 3600)
    forged = disc("f", note(USER, access_denied_body(USER), 5, created_at=at(60)))
    assert not refused_recently([forged, later], BOT, USER, 3600)  # only the bot's own notes count
    unreadable = disc("u", note(BOT, access_denied_body(USER), 6, created_at="yesterday"))
    assert refused_recently([unreadable, later], BOT, USER, 3600)
