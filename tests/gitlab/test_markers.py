"""Session markers and agent-note stripping."""

from __future__ import annotations

from hummingbird_agent.gitlab.markers import (
    SessionMarker,
    format_marker,
    is_session_id,
    new_session_id,
    parse_markers,
    strip_agent_note,
)

SID = "3f1e2d4c-5b6a-4789-8abc-def012345678"


def test_marker_round_trip() -> None:
    marker = SessionMarker(id=SID, wf="analyze-failures", sha="a" * 40)
    body = f"Result text\n\n{format_marker(marker)}"
    assert parse_markers(body) == [marker]
    assert not marker.legacy


def test_reply_marker_records_the_answered_note() -> None:
    marker = SessionMarker(id=SID, wf="analyze-failures", re=4411)
    assert parse_markers(format_marker(marker)) == [marker]
    bool_re = '<!-- hummingbird-session {"id": "' + SID + '", "re": true} -->'
    assert parse_markers(bool_re) == [SessionMarker(id=SID)]


def test_legacy_plain_uuid_marker() -> None:
    [marker] = parse_markers(f"old note <!-- hummingbird-session {SID} -->")
    assert marker == SessionMarker(id=SID) and marker.legacy


def test_malformed_markers_are_ignored() -> None:
    bodies = [
        "<!-- hummingbird-session {not json} -->",
        '<!-- hummingbird-session {"id": "../../etc/passwd"} -->',
        '<!-- hummingbird-session {"wf": "x"} -->',
        "<!-- hummingbird-session 1234 -->",
    ]
    for body in bodies:
        assert parse_markers(body) == []


def test_session_ids_are_uuids_only() -> None:
    assert is_session_id(new_session_id())
    for bad in ["", "..", "a/b", SID + "/x", SID.replace("-", ""), None, 5, "{" + SID + "}"]:
        assert not is_session_id(bad)


def test_strip_agent_note_removes_transcript_footer_and_marker() -> None:
    body = (
        "## Findings\nThe build fails.\n\n"
        "<details><summary>Agent transcript</summary>\n\n" + "x" * 5000 + "\n</details>\n"
        "\n---\n<sub>hummingbird-agent · 12 iterations</sub>\n"
        f"{format_marker(SessionMarker(id=SID, wf='w'))}"
    )
    assert strip_agent_note(body) == "## Findings\nThe build fails."
