"""Note bodies: placeholder, result, failure, help and error replies, size cap."""

from __future__ import annotations

from hummingbird_agent.gitlab import note_text
from hummingbird_agent.gitlab.markers import SessionMarker, parse_markers

MARKER = SessionMarker(id="3f1e2d4c-5b6a-4789-8abc-def012345678", wf="analyze-failures", sha="abc")


def test_placeholder_then_result_keep_the_marker() -> None:
    placeholder = note_text.placeholder_body(MARKER, "analyze-failures")
    assert placeholder.startswith("Running the workflow...")
    assert parse_markers(placeholder) == [MARKER]
    result = note_text.result_body("## Summary\nok", MARKER, reply_prompt=True)
    assert "Reply to this thread" in result and parse_markers(result) == [MARKER]
    reply = note_text.result_body("answer", MARKER, reply_prompt=False)
    assert "Reply to this thread" not in reply and parse_markers(reply) == [MARKER]


def test_failure_body_keeps_the_marker() -> None:
    body = note_text.failure_body(MARKER)
    assert body.startswith("Hummingbird analysis failed.") and parse_markers(body) == [MARKER]



def test_help_and_error_replies() -> None:
    workflows = {"analyze-failures": "Analyse failures", "review-mr": "Review the MR"}
    help_text = note_text.help_body(workflows)
    assert "`analyze-failures` — Analyse failures" in help_text and "`review-mr`" in help_text
    assert parse_markers(help_text) == []
    unknown = note_text.unknown_workflow_body("no`pe\nx", workflows)
    assert "`no'pe x`" in unknown and "`review-mr`" in unknown
    assert "`a`, `b`" in note_text.ambiguous_workflow_body("x", ["b", "a"])
    assert "Developer" in note_text.access_denied_body(42)
    assert "expired" in note_text.session_expired_body()
