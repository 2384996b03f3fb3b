"""The note and the issue docs/culprit.md shows are what the service renders (`python -m tests.docs.culprit_example`
rewrites them)."""

from __future__ import annotations

from tests.docs import culprit_example


def test_the_culprit_page_shows_the_rendered_note_and_issue() -> None:
    rendered, shown = culprit_example.render_examples(), culprit_example.shown()
    assert shown == rendered, "run: python -m tests.docs.culprit_example"
    assert "broken on `main` since [!108](" in rendered["culprit-note"]
    assert "- !7\n- !12" in rendered["culprit-issue"]
