"""The triage in words: the note's headline, table and collapsed excerpts, and the model's bounded copy."""

from __future__ import annotations

import json
import re
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.triage.model import NOT_YOURS, CheckResult, Triage, Verdict

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


def headline(triage: Triage) -> str:
    """One line that answers "is it my change?" first."""
    counts, total = triage.counts(), len(triage.checks) + triage.omitted
    not_listed = f" Not listed whole: {cell('; '.join(triage.unlisted), 400)}." if triage.unlisted else ""
    if not triage.checks:
        found = "the failed checks of this commit could not be listed" if triage.unlisted else (
            "no failed check found on this commit")
        return f"**Triage:** {found}.{not_listed}"
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
    return line + "." + not_listed


def _evidence(check: CheckResult) -> str:
    text = check.reason[:200].replace("|", " ").replace("\n", " ")
    return f"[{text}]({check.evidence_url})" if check.evidence_url else text


def table(triage: Triage) -> str:
    rows = ["| Check | Verdict | Evidence | Failure |", "|---|---|---|---|"]
    for check in sorted(triage.checks, key=lambda c: list(Verdict).index(c.verdict)):
        name = f"[`{cell(check.name, 80)}`]({check.url})" if check.url else f"`{cell(check.name, 80)}`"
        failure = f"`{cell(check.failure_line, 160)}`" if check.failure_line else ""
        if check.known is not None and check.known.resolution:
            failure += f" fix: {cell(check.known.resolution, 160)}"
        rows.append(f"| {name} | {_BADGES[check.verdict]} | {_evidence(check)} | {failure} |")
    return "\n".join(rows)


def _fence(lines: tuple[str, ...]) -> str:
    longest = max((len(m) for line in lines for m in _BACKTICKS.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    body = "\n".join(line[: budgets.TRIAGE_LINE_MAX_CHARS] for line in lines)
    return f"{fence}text\n{body}\n{fence}"


def details(triage: Triage) -> str:
    """The excerpts and the gaps, collapsed."""
    blocks = [f"**{cell(c.name, 80)}** ({c.verdict.value})\n\n{_fence(c.excerpt)}" for c in triage.checks if c.excerpt]
    gaps = [f"- {cell(g, 400)}" for g in triage.gaps]
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
        if check.known is not None:
            full["known_cause"] = {"name": check.known.name, "resolution": check.known.resolution,
                                   "incidents": list(check.known.incidents)}
        size = len(json.dumps(full))
        if used + size > budgets.TRIAGE_PROMPT_MAX_CHARS:
            full = {"check": check.name, "verdict": check.verdict.value}
            size = len(json.dumps(full))
        used += size
        out["checks"].append(full)
    return out


def pointer(triage: Triage, first: str) -> str:
    """The outage guard's note: the verdicts, and where the same failure was already diagnosed."""
    return (f"{section(triage)}\n\nThe same failure was diagnosed moments ago on another merge request: "
            f"[see that diagnosis]({first}). No new analysis was run for this one; "
            "`/hummingbird <workflow>` runs one anyway.")
