"""The agent's analysis notes on an MR, found by the session markers of bot-authored notes only: which
failure `/hummingbird learn` and learn-on-success learn, and whether it was learned already."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hummingbird_agent.gitlab.markers import parse_markers, strip_agent_note
from hummingbird_agent.gitlab.note_text import PLACEHOLDER_TEXT
from hummingbird_agent.gitlab.threads import bot_notes

ANALYSIS_WORKFLOW = "analyze-failures"


@dataclass(frozen=True, slots=True)
class AnalysisNote:
    """The agent's final analysis note: its session, the analysed SHA (None for legacy notes) and its text."""

    session_id: str
    sha: str | None
    discussion_id: str
    internal: bool
    text: str


def last_analysis(discussions: Iterable[Mapping[str, Any]], bot_id: int,
                  workflow: str = ANALYSIS_WORKFLOW) -> AnalysisNote | None:
    """The latest finished analysis note the bot wrote (placeholders and other workflows are skipped)."""
    found = None
    for discussion in discussions:
        for note in bot_notes(discussion, bot_id):
            body = str(note.get("body") or "")
            mine = [m for m in parse_markers(body) if m.wf == workflow]
            if mine and not body.startswith(PLACEHOLDER_TEXT):
                found = AnalysisNote(mine[0].id, mine[0].commit, str(discussion["id"]), bool(note.get("internal")),
                                     strip_agent_note(body))
    return found


def learned_in_thread(discussions: Iterable[Mapping[str, Any]], bot_id: int, discussion_id: str,
                      workflows: Iterable[str]) -> bool:
    """Whether the bot already answered in the analysis thread with one of the learning `workflows`."""
    names = set(workflows)
    for discussion in discussions:
        if str(discussion.get("id")) != discussion_id:
            continue
        return any(m.wf in names for note in bot_notes(discussion, bot_id)
                   for m in parse_markers(str(note.get("body") or "")))
    return False
