"""The MR's status note in words: one note per MR, edited in place as its pipelines finish — the newest
pipeline's verdicts first, earlier commits' collapsed below. The note is its own memory: each section carries a
marker with its commit, pipeline and state, so any replica, after any restart, rebuilds the note from GitLab alone.
Every marker carries the service's MAC (gitlab/seal.py, scoped to the MR): a note is the status note, and a section
one of its entries, only when the MAC verifies. Pure functions; the runner reads and writes the note."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.gitlab.markers import parse_markers
from hummingbird_agent.gitlab.seal import Seal
from hummingbird_agent.triage.model import Triage
from hummingbird_agent.triage.render import details, headline, table

STATUS_TAG = "hummingbird-status"
_TITLE = "**Hummingbird CI status** (edited as this MR's pipelines finish)"
# The head as notes written before markers were signed began; such a note is adopted, its sections are not.
_LEGACY_HEAD = f"<!-- {STATUS_TAG} -->\n{_TITLE}"
_HEAD = re.compile(r"<!-- hummingbird-status (?P<meta>\{[^\n]*?\}) -->\n")
_ENTRY = re.compile(r"<!-- hummingbird-status-entry (?P<meta>\{[^\n]*?\}) -->\n(?P<body>.*?)\n"
                    r"<!-- hummingbird-status-end -->", re.S)
_EVIDENCE = "<!-- hummingbird-status-evidence -->"
_SHA = re.compile(r"[0-9a-f]{7,64}")
_STATES = ("failed", "success")


@dataclass(frozen=True, slots=True)
class StatusEntry:
    """One pipeline's verdicts in the note: `summary` (heading, headline, table) always shows; `evidence` (the
    collapsed excerpts) only while it is the newest."""

    sha: str
    pipeline_id: int
    state: str
    summary: str
    evidence: str = ""


def is_status_note(body: str, seal: Seal) -> bool:
    """Whether `body` is this MR's status note by its skeleton: it begins with the head marker the service signed
    for this MR (what an answer or a log says further down never counts)."""
    head = _HEAD.match(body)
    return head is not None and seal.verify(_meta(head["meta"]).get("mac"), STATUS_TAG)


def is_adoptable_status_note(body: str) -> bool:
    """A status note whose head does not verify: written before markers were signed, or signed with a key since
    rotated (the key derived from a bot token that was rotated). Its exact head and title, and no session marker (an
    analysis note, the only bot note that begins with text the service did not write, always has one). Adopted as the
    status note, so a rotation never leaves a second note; none of its sections is trusted."""
    head = _HEAD.match(body)
    skeleton = body.startswith(_LEGACY_HEAD) or (head is not None and body[head.end():].startswith(_TITLE))
    return skeleton and not parse_markers(body)


def failed_entry(found: Triage, pipeline_id: int, pipeline_url: str, thread_url: str = "") -> StatusEntry:
    """The verdicts of a failed pipeline; `thread_url` links the analysis thread when the model runs."""
    parts = [_heading(found.sha, pipeline_id, pipeline_url, thread_url), headline(found)]
    if found.checks:
        parts.append(table(found))
    if not thread_url:
        parts.append("No model was asked: every failure is someone else's (above), so there is nothing new to "
                     "explain. `/hummingbird analyze-failures` asks anyway."
                     if found.all_not_yours else "")
    return StatusEntry(found.sha, pipeline_id, "failed", "\n\n".join(p for p in parts if p), details(found))


def green_entry(sha: str, pipeline_id: int, pipeline_url: str) -> StatusEntry:
    return StatusEntry(sha, pipeline_id, "success",
                       f"{_heading(sha, pipeline_id, pipeline_url, '')}\n\n✅ The pipeline passed: all green.")


def _heading(sha: str, pipeline_id: int, pipeline_url: str, thread_url: str) -> str:
    pipeline = f"[pipeline #{pipeline_id}]({pipeline_url})" if pipeline_url else f"pipeline #{pipeline_id}"
    thread = f" · [analysis]({thread_url})" if thread_url else ""
    return f"#### Commit `{sha[:12]}` · {pipeline}{thread}"


def merged(entries: list[StatusEntry], new: StatusEntry) -> list[StatusEntry] | None:
    """The entries with `new` in its place, newest pipeline first; None when the note already shows this commit at
    a later pipeline (a late older pipeline never overwrites a newer one) or exactly this entry."""
    same = next((e for e in entries if e.sha == new.sha), None)
    if same is not None and (same.pipeline_id > new.pipeline_id or same == new):
        return None
    if same is not None and same.pipeline_id == new.pipeline_id and same.summary != new.summary:
        new = replace(new, evidence=new.evidence or same.evidence)
    kept = [e for e in entries if e.sha != new.sha]
    ordered = sorted([*kept, new], key=lambda e: e.pipeline_id, reverse=True)
    return ordered[: budgets.STATUS_NOTE_MAX_COMMITS]


def parse(body: str, seal: Seal) -> list[StatusEntry]:
    """The entries the MR's status note shows: none unless the note is the service's (`is_status_note`; its
    author is checked by the caller), and only sections whose marker carries the service's MAC."""
    if not is_status_note(body, seal):
        return []
    out: list[StatusEntry] = []
    for found in _ENTRY.finditer(body):
        meta = _meta(found["meta"])
        try:
            sha, pipeline, state = str(meta["sha"]), int(meta["pipeline"]), str(meta["state"])
        except (ValueError, KeyError, TypeError):
            continue
        if not _SHA.fullmatch(sha) or state not in _STATES or not seal.verify(meta.get("mac"), sha, pipeline, state):
            continue
        summary, _, evidence = found["body"].partition(f"\n{_EVIDENCE}\n")
        out.append(StatusEntry(sha, pipeline, state, summary, evidence))
    return out


def _meta(text: str) -> dict[str, Any]:
    try:
        meta = json.loads(text)
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


def render(entries: list[StatusEntry], seal: Seal) -> str:
    """The note: the signed head, the newest entry whole, earlier ones' summaries collapsed."""
    head = f"<!-- {STATUS_TAG} {json.dumps({'mac': seal.mac(STATUS_TAG)}, separators=(',', ':'))} -->\n{_TITLE}"
    if not entries:
        return head
    newest, earlier = entries[0], entries[1:]
    parts = [head, _section(newest, seal, with_evidence=True)]
    if earlier:
        inner = "\n\n".join(_section(e, seal, with_evidence=False) for e in earlier)
        parts.append(f"<details><summary>Earlier pipelines ({len(earlier)})</summary>\n\n{inner}\n\n</details>")
    return "\n\n".join(parts)


def _section(entry: StatusEntry, seal: Seal, with_evidence: bool) -> str:
    mac = seal.mac(entry.sha, entry.pipeline_id, entry.state)
    meta = json.dumps({"sha": entry.sha, "pipeline": entry.pipeline_id, "state": entry.state, "mac": mac},
                      separators=(",", ":"))
    evidence = f"\n{_EVIDENCE}\n{entry.evidence}" if with_evidence and entry.evidence else ""
    return f"<!-- hummingbird-status-entry {meta} -->\n{entry.summary}{evidence}\n<!-- hummingbird-status-end -->"
