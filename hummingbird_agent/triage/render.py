"""The triage in words: the note's headline, table and collapsed excerpts, and the model's bounded copy. Every text
read from a log, a job, a test or the knowledge base reaches the note through `cell` (no `<`, `>`, backticks or
pipes) or `inert` (gitlab/markers.py): none can open or close a comment, a marker, a code span or a fence."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.gitlab.markers import inert
from hummingbird_agent.gitlab.quiet import link, no_references
from hummingbird_agent.triage.culprit_text import culprit_cell, culprit_plain
from hummingbird_agent.triage.model import NOT_YOURS, CaseResult, CheckResult, Triage, Verdict

_PHRASES = {Verdict.PRE_EXISTING: "already failing on {branch}", Verdict.FLAKY: "flaky",
            Verdict.INFRASTRUCTURE: "infrastructure", Verdict.KNOWN: "known from the knowledge base",
            Verdict.NEW: "new", Verdict.UNCLASSIFIED: "unclassified"}
_BADGES = {Verdict.NEW: "🔴 new", Verdict.UNCLASSIFIED: "⚪ unclassified", Verdict.KNOWN: "🟣 known",
           Verdict.PRE_EXISTING: "🟠 pre-existing", Verdict.FLAKY: "🟡 flaky",
           Verdict.INFRASTRUCTURE: "🔵 infrastructure"}
_CELL_UNSAFE = re.compile(r"[`|\r\n<>\[\]]")
_BACKTICKS = re.compile(r"`+")


def cell(text: str, limit: int = budgets.TRIAGE_LINE_MAX_CHARS) -> str:
    """Log text made safe for inline code in a table cell: no backticks, pipes, brackets or newlines."""
    clipped = text.strip()[:limit]
    return _CELL_UNSAFE.sub(" ", clipped)


def prose(text: str, limit: int = budgets.TRIAGE_LINE_MAX_CHARS) -> str:
    """A name or a log's text outside code: `cell`, and it mentions and references nothing."""
    return no_references(cell(text, limit))


def headline(triage: Triage) -> str:
    """One line that answers "is it my change?" first."""
    counts, total = triage.counts(), len(triage.checks) + triage.omitted
    not_listed = f" Not listed whole: {prose('; '.join(triage.unlisted), 400)}." if triage.unlisted else ""
    if not triage.checks:
        found = "the failed checks of this commit could not be listed" if triage.unlisted else (
            "no failed check found on this commit")
        return f"**Triage:** {found}.{not_listed}{_running(triage)}"
    branch = f"`{cell(triage.target_branch or 'the target branch', 80)}`"
    parts = [f"{counts[v]} {_PHRASES[v].format(branch=branch)}" for v in Verdict if counts[v]]
    first_new = next((c for c in triage.checks if c.verdict == Verdict.NEW), None)
    verdict = ("none looks caused by this MR" if triage.all_not_yours
               else f"{sum(counts[v] for v in NOT_YOURS)} of {total} not caused by this MR")
    line = f"**Triage:** {total} failed check{'s' if total != 1 else ''}, {verdict}: {', '.join(parts)}"
    if first_new is not None:
        what = f"`{cell(first_new.failure_line, 120)}` in " if first_new.failure_line else ""
        line += f". New: {what}`{cell(first_new.name, 80)}`"
    if triage.omitted:
        line += f" ({triage.omitted} more not examined)"
    return line + "." + not_listed + _running(triage)


def _running(triage: Triage) -> str:
    """What of the commit has not finished: nothing is decided while it runs."""
    if not triage.running:
        return ""
    shown = prose(", ".join(triage.running[:5]), 200)
    more = f" and {len(triage.running) - 5} more" if len(triage.running) > 5 else ""
    return f" Still running: {shown}{more}; the verdict waits for them."


def _evidence(found: CheckResult | CaseResult) -> str:
    text = no_references(inert(found.reason[:200].replace("|", " ").replace("\n", " ")))
    linked = link(text, found.evidence_url)
    history = no_references(inert(found.history.replace("|", " ").replace("\n", " ")))
    return linked + (f"; {history}" if found.history else "")


def _case_rows(check: CheckResult) -> list[str]:
    """The job's failed test cases under its row (bounded, the rest counted)."""
    shown = check.cases[: budgets.TRIAGE_NOTE_CASES_PER_CHECK]
    rows = [f"| ↳ `{cell(c.title, 120)}` | {_BADGES[c.verdict]} | {_evidence(c)} | "
            + (f"`{cell(c.line, 160)}`" if c.line else "") + " |" for c in shown]
    if len(check.cases) > len(shown):
        rest = check.cases[len(shown):]
        counts = ", ".join(f"{n} {v.value}" for v in Verdict if (n := sum(c.verdict == v for c in rest)))
        rows.append(f"| ↳ {len(rest)} more failed tests | | {counts} | |")
    return rows


def table(triage: Triage) -> str:
    rows = ["| Check | Verdict | Evidence | Failure |", "|---|---|---|---|"]
    for check in sorted(triage.checks, key=lambda c: list(Verdict).index(c.verdict)):
        name = link(f"`{cell(check.name, 80)}`", check.url)
        failure = f"`{cell(check.failure_line, 160)}`" if check.failure_line else ""
        if check.known is not None and check.known.resolution:
            failure += f" fix: {prose(check.known.resolution, 160)}"
        said = _evidence(check) + (f"; {culprit_cell(check.culprit)}" if check.culprit else "")
        rows.append(f"| {name} | {_BADGES[check.verdict]} | {said} | {failure} |")
        rows += _case_rows(check)
    return "\n".join(rows)


def fence(lines: Sequence[str]) -> str:
    """Log lines as a code block no line of theirs can end or turn into a comment."""
    longest = max((len(m) for line in lines for m in _BACKTICKS.findall(line)), default=0)
    ticks = "`" * max(3, longest + 1)
    # The fence is longer than any backtick run in the lines, so no line closes it; `inert` keeps the raw text
    # (which the service parses, fences or not) free of comments.
    body = "\n".join(inert(line[: budgets.TRIAGE_LINE_MAX_CHARS]) for line in lines)
    return f"{ticks}text\n{body}\n{ticks}"


def details(triage: Triage) -> str:
    """The excerpts and the gaps, collapsed."""
    blocks = [f"**{prose(c.name, 80)}** ({c.verdict.value})\n\n{fence(c.excerpt)}" for c in triage.checks if c.excerpt]
    gaps = [f"- {prose(g, 400)}" for g in triage.gaps]
    parts = blocks + (["**Not checked**\n\n" + "\n".join(gaps)] if gaps else [])
    if not parts:
        return ""
    return "<details><summary>Triage evidence</summary>\n\n" + "\n\n".join(parts) + "\n\n</details>"


def section(triage: Triage) -> str:
    """Headline, table and collapsed evidence: what the note shows before the model's explanation."""
    parts = [headline(triage)]
    if triage.checks:
        parts.append(table(triage))
    if extra := details(triage):
        parts.append(extra)
    return "\n\n".join(parts)


def for_model(triage: Triage) -> dict[str, Any]:
    """The triage as the model's first message carries it, within TRIAGE_PROMPT_MAX_CHARS: checks beyond the
    budget keep their name and verdict only."""
    out: dict[str, Any] = {"headline": headline(triage), "target_branch": triage.target_branch,
                           "merge_base": triage.base_sha, "gaps": list(triage.gaps),
                           "not_listed_whole": list(triage.unlisted), "checks": []}
    used = len(json.dumps(out))
    for check in triage.checks:
        full: dict[str, Any] = {"check": check.name, "verdict": check.verdict.value, "evidence": check.reason,
                                "evidence_url": check.evidence_url, "job_url": check.url,
                                "excerpt": list(check.excerpt)}
        if check.history:
            full["history"] = check.history
        if check.culprit is not None:
            full["culprit"] = culprit_plain(check.culprit)
        if check.cases:
            full["failed_tests"] = [_case_for_model(c) for c in check.cases]
        if check.known is not None:
            full["known_cause"] = {"name": check.known.name, "resolution": check.known.resolution,
                                   "incidents": list(check.known.incidents)}
        full = _fitted(full, budgets.TRIAGE_PROMPT_MAX_CHARS - used)
        used += len(json.dumps(full))
        out["checks"].append(full)
    return out


def _fitted(full: dict[str, Any], room: int) -> dict[str, Any]:
    """The check as it fits in `room` characters: whole; else with the failed tests that fit (the rest counted);
    else its name and verdict only."""
    if len(json.dumps(full)) <= room:
        return full
    tests = full.pop("failed_tests", [])
    kept: list[dict[str, str]] = []
    left = room - len(json.dumps(full)) - 60  # the keys of the failed tests and of their count
    for test in tests:
        left -= len(json.dumps(test)) + 2
        if left < 0:
            break
        kept.append(test)
    if kept:
        return full | {"failed_tests": kept, "failed_tests_not_listed": len(tests) - len(kept)}
    return {"check": full["check"], "verdict": full["verdict"]}


def _case_for_model(case: CaseResult) -> dict[str, str]:
    out = {"test": case.title, "suite": case.suite, "verdict": case.verdict.value, "evidence": case.reason,
           "evidence_url": case.evidence_url, "first_line": case.line}
    return out | ({"history": case.history} if case.history else {})


def pointer(triage: Triage, first: str) -> str:
    """The outage guard's note: the verdicts, and where the same failure was already diagnosed."""
    return (f"{section(triage)}\n\nThe same failure was diagnosed moments ago on another merge request: "
            f"[see that diagnosis]({first}). No new analysis was run for this one; "
            "`/hummingbird <workflow>` runs one anyway.")
