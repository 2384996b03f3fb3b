"""Session markers: the hidden JSON comment in every agent note, and stripping agent notes for the model.

A marker is trusted only when the note's author is the bot (checked by the caller through the API);
the text alone proves nothing, since anyone can type one. `inert` is what makes the bot's own notes safe to
read back: untrusted text (logs, model answers, names, titles, comments) passes through it wherever a note
shows it, so no text but the service's own can open or close a comment, and so no text can become a marker.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass

from hummingbird_agent.errors import PermanentError
from hummingbird_agent.sessions.base import validate_session_id

MARKER_TAG = "hummingbird-session"
# Help, error and refusal replies carry no session; this marker only records the user note they answer,
# so a post that failed after GitLab stored it can be recognised instead of posted twice.
REPLY_TAG = "hummingbird-reply"
# `<!-- hummingbird-session {"id": "...", "wf": "...", "sha": "..."} -->`, or the legacy plain-UUID form.
# An automatic run records its commit as `sha` (SHA dedup reads it); a command-triggered run as `at`,
# which dedup ignores (a member may ask again for the same commit) but learning reads.
_MARKER_RE = re.compile(r"<!--\s*" + MARKER_TAG + r"[:\s]\s*(?P<payload>[^\n]*?)\s*-->")
_REPLY_RE = re.compile(r"<!--\s*" + REPLY_TAG + r"\s+\{\"re\":(?P<re>\d+)\}\s*-->")
_TRANSCRIPT_RE = re.compile(r"<details>\s*<summary>\s*Agent transcript.*?</details>", re.S | re.I)
_HEX = re.compile(r"[0-9a-f]{7,64}")
_FOOTER_RE = re.compile(r"\n-{3,}\n<sub>.*?</sub>\s*$", re.S)
# HTML (and so GitLab's Markdown) opens a comment, a declaration or CDATA with `<!`, and closes a comment
# with `-->` or `--!>`; a zero-width space breaks each without changing what a reader sees, even in code.
_OPENS = re.compile(r"<(?=!)")
_CLOSES = re.compile(r"(?<=--)(!?)>")
_BREAK = "\u200b"


@dataclass(frozen=True, slots=True)
class SessionMarker:
    """What an agent note says about its session: id always; workflow and SHA for new-format markers."""

    id: str
    wf: str | None = None
    sha: str | None = None
    re: int | None = None
    """For answers to a reply: the id of the user note answered (a redelivered reply is answered once)."""
    at: str | None = None
    """For command-triggered runs: the commit the run looked at (not used for SHA dedup)."""

    @property
    def commit(self) -> str | None:
        """The commit the run looked at, however it was triggered."""
        return self.sha or self.at

    @property
    def legacy(self) -> bool:
        return self.wf is None and self.sha is None


def inert(text: str) -> str:
    """Untrusted text as a note may show it: it can neither open nor close an HTML comment, so never a
    marker of the service's, whatever block it lands in. Idempotent."""
    return _CLOSES.sub(lambda m: m.group(1) + _BREAK + ">", _OPENS.sub("<" + _BREAK, text))


def is_session_id(value: object) -> bool:
    """Session ids are canonical UUID strings; anything else never reaches a key or a path."""
    if not isinstance(value, str):
        return False
    try:
        validate_session_id(value.lower())
    except PermanentError:
        return False
    return True


def new_session_id() -> str:
    return str(uuid.uuid4())


def format_marker(marker: SessionMarker) -> str:
    payload: dict[str, str | int] = {"id": marker.id}
    if marker.wf:
        payload["wf"] = marker.wf
    if marker.sha:
        payload["sha"] = marker.sha
    if marker.re is not None:
        payload["re"] = marker.re
    if marker.at:
        payload["at"] = marker.at
    # `--` cannot appear inside an HTML comment; JSON of ids, names and hex SHAs never contains it.
    return f"<!-- {MARKER_TAG} {json.dumps(payload, separators=(',', ':'))} -->"


def format_reply_marker(note_id: int) -> str:
    return f'<!-- {REPLY_TAG} {{"re":{int(note_id)}}} -->'


def answers_note(body: str, note_id: int) -> bool:
    """Whether `body` carries the reply marker of an answer to note `note_id`."""
    return any(int(m.group("re")) == note_id for m in _REPLY_RE.finditer(body or ""))


def parse_markers(body: str) -> list[SessionMarker]:
    """Every well-formed marker in a note body, in order; malformed ones are ignored."""
    found = []
    for match in _MARKER_RE.finditer(body or ""):
        marker = _parse_payload(match.group("payload"))
        if marker is not None:
            found.append(marker)
    return found


def _parse_payload(payload: str) -> SessionMarker | None:
    if is_session_id(payload):
        return SessionMarker(id=payload.lower())
    try:
        data = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(data, dict) or not is_session_id(data.get("id")):
        return None
    wf, sha, re_, at = data.get("wf"), data.get("sha"), data.get("re"), data.get("at")
    return SessionMarker(
        id=data["id"].lower(),
        wf=wf if isinstance(wf, str) and wf else None,
        sha=sha if isinstance(sha, str) and sha else None,
        re=re_ if isinstance(re_, int) and not isinstance(re_, bool) else None,
        at=at if isinstance(at, str) and _HEX.fullmatch(at) else None,
    )


def strip_agent_note(body: str) -> str:
    """The review text of an agent note without transcript blocks, footer and markers (for the model)."""
    text = _TRANSCRIPT_RE.sub("", body or "")
    text = _REPLY_RE.sub("", _MARKER_RE.sub("", text))
    text = _FOOTER_RE.sub("", text.rstrip() + "\n")
    return text.strip()
