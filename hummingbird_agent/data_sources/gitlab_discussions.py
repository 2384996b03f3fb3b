"""Trust filtering of MR text before it reaches the model: notes by authors below Developer are withheld
(redacted in mixed threads, whole threads dropped), system notes pass, agent notes are stripped; an MR's
title and description by an author below Developer, and a commit status description posted by a user below
Developer, are replaced by redaction markers."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from hummingbird_agent.gitlab.markers import parse_markers, strip_agent_note

REDACTED = "[redacted: non-member comment]"
REDACTED_DESCRIPTION = "[redacted: description by a non-member author]"
REDACTED_TITLE = "[redacted: title by a non-member author]"
REDACTED_STATUS_DESCRIPTION = "[redacted: status description by a non-member]"


def _author_trusted(obj: dict[str, Any], is_trusted: Callable[[int], bool]) -> bool:
    author_id = (obj.get("author") or {}).get("id")
    return isinstance(author_id, int) and is_trusted(author_id)


def gate_mr_text(mr: dict[str, Any], shown: dict[str, Any], is_trusted: Callable[[int], bool]) -> None:
    """Withhold the free text of an MR (`shown`, built from `mr`) whose author is below Developer: whoever opens
    an MR (forks included) writes its title and description."""
    if (shown.get("title") or shown.get("description")) and not _author_trusted(mr, is_trusted):
        shown.update({k: marker for k, marker in (("title", REDACTED_TITLE), ("description", REDACTED_DESCRIPTION))
                      if shown.get(k)})


def gate_status(status: dict[str, Any], shown: dict[str, Any], is_trusted: Callable[[int], bool]) -> None:
    """Withhold a commit status's description (free text of whoever posted the status) unless its author is
    Developer+; name, state and target URL stay (they are what the analysis follows)."""
    if shown.get("description") and not _author_trusted(status, is_trusted):
        shown["description"] = REDACTED_STATUS_DESCRIPTION


def _position(note: dict[str, Any]) -> dict[str, Any] | None:
    pos = note.get("position")
    if not isinstance(pos, dict):
        return None
    return {k: pos.get(k) for k in ("old_path", "new_path", "old_line", "new_line")}


def trusted_note(note: dict[str, Any]) -> dict[str, Any]:
    """A note as the model sees it; agent notes (a session marker) lose transcripts, footers and markers."""
    body = str(note.get("body") or "")
    agent = bool(parse_markers(body))
    out: dict[str, Any] = {
        "id": note.get("id"), "author": (note.get("author") or {}).get("username"),
        "created_at": note.get("created_at"), "system": bool(note.get("system")),
        "body": strip_agent_note(body) if agent else body,
    }
    if agent:
        out["agent_note"] = True
    if note.get("resolvable"):
        out["resolved"] = bool(note.get("resolved"))
    position = _position(note)
    if position:
        out["position"] = position
    return out


def redacted_note(note: dict[str, Any]) -> dict[str, Any]:
    """Only the fact that someone replied: no body, no name (display names are free text too)."""
    return {"id": note.get("id"), "author": "non-member", "created_at": note.get("created_at"), "body": REDACTED}


def filter_discussions(discussions: Iterable[dict[str, Any]],
                       is_trusted: Callable[[int], bool]) -> list[dict[str, Any]]:
    """Discussions with untrusted notes redacted; those with no trusted or system note are dropped.

    Trust is by the author's access level (`is_trusted(author_id)`), never by a marker in the text.
    """
    kept = []
    for discussion in discussions:
        notes, any_trusted = [], False
        for note in discussion.get("notes") or []:
            author_id = (note.get("author") or {}).get("id")
            if note.get("system") or (isinstance(author_id, int) and is_trusted(author_id)):
                notes.append(trusted_note(note))
                any_trusted = True
            else:
                notes.append(redacted_note(note))
        if any_trusted:
            kept.append({"id": discussion.get("id"), "individual_note": bool(discussion.get("individual_note")),
                         "notes": notes})
    return kept
