"""The MR's status note in words: one note per MR, edited in place as its pipelines finish — the newest
pipeline's verdicts first, earlier commits' collapsed below. The note is its own memory: each section carries a
marker with its commit, pipeline and state, so any replica, after any restart, rebuilds the note from GitLab alone.
Pure functions; the runner reads and writes the note."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

from hummingbird_agent import budgets
from hummingbird_agent.triage.model import Triage
from hummingbird_agent.triage.render import details, headline, table

STATUS_TAG = "hummingbird-status"
_HEAD = f"<!-- {STATUS_TAG} -->"
_TITLE = "**Hummingbird CI status** (edited as this MR's pipelines finish)"
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


def is_status_note(body: str) -> bool:
    return body.startswith(_HEAD)


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


def parse(body: str) -> list[StatusEntry]:
    """The entries a status note shows (the bot's own note: its author is checked by the caller)."""
    out: list[StatusEntry] = []
    for found in _ENTRY.finditer(body):
        try:
            meta = json.loads(found["meta"])
            sha, pipeline, state = str(meta["sha"]), int(meta["pipeline"]), str(meta["state"])
        except (ValueError, KeyError, TypeError):
            continue
        if not _SHA.fullmatch(sha) or state not in _STATES:
            continue
        summary, _, evidence = found["body"].partition(f"\n{_EVIDENCE}\n")
        out.append(StatusEntry(sha, pipeline, state, summary, evidence))
    return out


def render(entries: list[StatusEntry]) -> str:
    """The note: the newest entry whole, earlier ones' summaries collapsed."""
    if not entries:
        return f"{_HEAD}\n{_TITLE}"
    newest, earlier = entries[0], entries[1:]
    parts = [f"{_HEAD}\n{_TITLE}", _section(newest, with_evidence=True)]
    if earlier:
        inner = "\n\n".join(_section(e, with_evidence=False) for e in earlier)
        parts.append(f"<details><summary>Earlier pipelines ({len(earlier)})</summary>\n\n{inner}\n\n</details>")
    return "\n\n".join(parts)


def _section(entry: StatusEntry, with_evidence: bool) -> str:
    meta = json.dumps({"sha": entry.sha, "pipeline": entry.pipeline_id, "state": entry.state},
                      separators=(",", ":"))
    evidence = f"\n{_EVIDENCE}\n{entry.evidence}" if with_evidence and entry.evidence else ""
    return f"<!-- hummingbird-status-entry {meta} -->\n{entry.summary}{evidence}\n<!-- hummingbird-status-end -->"
