"""The issue of a broken target branch in words: one per distinct pre-existing failure (per job, when test cases
decide it), found again by the marker that opens its description (its branch, job, failure key and first failing
pipeline), naming the culprit (each case's break), the first failing run and the failure's lines, with the open MRs
it blocks listed between markers and edited in place. Pure functions; the runner finds, opens, edits and closes the
issue (runner/broken_issue.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from hummingbird_agent import budgets
from hummingbird_agent.gitlab.quiet import link
from hummingbird_agent.triage.culprit_model import Change, Culprit, RunRef
from hummingbird_agent.triage.culprit_text import case_said, culprit_cell, safe
from hummingbird_agent.triage.model import CheckResult
from hummingbird_agent.triage.render import cell, fence


@dataclass(frozen=True, slots=True)
class IssueMeta:
    """What the marker of an issue the service opened says."""

    key: str
    """The failure's key (`culprit.failure_key`): its job and fingerprint on its branch."""
    branch: str
    job: str
    """The job's name, as the branch's pipelines list it."""
    since: int
    """The first failing pipeline's id: a pass of the job on a later pipeline of the branch closes the issue."""


# The label the issues are listed by (a plain one: scoped labels need a paid tier).
LABEL = "hummingbird-broken-branch"
# The marker only a description's first line can be (log lines come later, and are made inert).
_MARKER = re.compile(r"<!-- hummingbird-broken (\{[^\n]*?\}) -->\n")
_BLOCKED, _BLOCKED_END = "<!-- hummingbird-blocked -->", "<!-- hummingbird-blocked-end -->"
_BREAKS, _BREAKS_END = "<!-- hummingbird-breaks -->", "<!-- hummingbird-breaks-end -->"
_LISTED = re.compile(r"^- !(\d+)$", re.M)
# A failure key as `culprit.failure_key` makes it.
_KEY = re.compile(r"[0-9a-f]{16}")


def meta_of(description: str) -> IssueMeta | None:
    """The marker of a description that starts with one (the caller checks the issue's author is the bot)."""
    found = _MARKER.match(description)
    if found is None:
        return None
    try:
        raw = json.loads(found[1])
        meta = IssueMeta(str(raw["key"]), str(raw["branch"]), str(raw["job"]), int(raw["since"]))
    except (ValueError, KeyError, TypeError):
        return None
    return meta if _KEY.fullmatch(meta.key) else None


def issue_title(check: CheckResult, culprit: Culprit) -> str:
    named = culprit.named
    since = (f"since !{named.mr_iid}" if named and named.mr_iid else f"since {named.sha[:8]}" if named else
             f"since before pipeline {culprit.first_bad.pipeline_id}" if culprit.last_good is None else
             f"since one of {culprit.commits} commits")
    return f"{safe(culprit.branch)} is broken: {safe(check.name)} fails {since}"


def issue_body(check: CheckResult, culprit: Culprit, blocked: Sequence[int]) -> str:
    """The description: the marker, the culprit (counted in no relative time: the text stays), the failure, the
    blocked MRs."""
    meta = IssueMeta(culprit.key, culprit.branch, check.name, culprit.first_bad.pipeline_id)
    branch = f"`{safe(culprit.branch)}`"
    lines = check.excerpt[: budgets.TRIAGE_EXCERPT_LINES]
    parts = [_marker(meta),
             f"**{branch} is broken**: `{safe(check.name)}` fails the same way on its pipelines. Opened by "
             f"Hummingbird's triage; closed when `{safe(check.name)}` passes on {branch} again.",
             f"{_BREAKS}\n{_break_line(culprit)}\n{_BREAKS_END}",
             f"- **Failure**: `{cell(check.failure_line, 200)}`" if check.failure_line else "",
             f"<details><summary>Failure lines</summary>\n\n{fence(lines)}\n\n</details>" if lines else "",
             blocked_section(blocked)]
    return "\n\n".join(p for p in parts if p)


def with_break(description: str, check: CheckResult) -> tuple[str, str]:
    """The description with the check's break listed among its job's, when test cases decided it (a break by logs
    is its issue's only one), and the issue's title when that break is older than its marker's ("": unchanged)."""
    culprit, meta, end = check.culprit, meta_of(description), description.find(_BREAKS_END)
    if culprit is None or not culprit.case or meta is None or end < 0:
        return description, ""
    if case_said(culprit.case) not in description[description.find(_BREAKS):end]:
        description = f"{description[:end]}{_break_line(culprit)}\n{description[end:]}"
    if culprit.first_bad.pipeline_id >= meta.since:
        return description, ""
    rest = description.split("\n", 1)[1]
    return f"{_marker(replace(meta, since=culprit.first_bad.pipeline_id))}\n{rest}", issue_title(check, culprit)


def listed(description: str, mr_iid: int, add: bool) -> str:
    """The description with this MR listed (or not) among the blocked MRs."""
    blocked = blocked_of(description)
    if (mr_iid in blocked) == add:
        return description
    return with_blocked(description, [*blocked, mr_iid] if add else [n for n in blocked if n != mr_iid])


def blocked_section(blocked: Sequence[int]) -> str:
    shown = sorted(set(blocked))[-budgets.BROKEN_ISSUE_MAX_BLOCKED:]
    items = "\n".join(f"- !{iid}" for iid in shown) or "(none open now)"
    return f"#### Merge requests blocked by it\n\n{_BLOCKED}\n{items}\n{_BLOCKED_END}"


def blocked_of(description: str) -> list[int]:
    """The MRs the description lists as blocked (from its own section: the first, before any log line)."""
    start = description.find(_BLOCKED)
    end = description.find(_BLOCKED_END, start)
    return [int(n) for n in _LISTED.findall(description[start:end])] if start >= 0 and end > start else []


def with_blocked(description: str, blocked: Sequence[int]) -> str:
    """The description with its list of blocked MRs replaced."""
    start = description.find("#### Merge requests blocked by it")
    end = description.find(_BLOCKED_END, start)
    if start < 0 or end < 0:
        return f"{description}\n\n{blocked_section(blocked)}"
    return description[:start] + blocked_section(blocked) + description[end + len(_BLOCKED_END):]


def fixed_comment(meta: IssueMeta, run: RunRef, change: Change | None) -> str:
    """The closing comment: the pipeline where the job passes again and the change it ran on."""
    pipeline = f"pipeline {run.pipeline_id}"
    pipeline = link(pipeline, run.pipeline_url)
    by = (f" by {link(f'!{change.mr_iid}', change.mr_url)} (@{safe(change.author, 60)})"
          if change is not None and change.mr_iid else "")
    return (f"`{safe(meta.job)}` passes on `{safe(meta.branch)}` again: {pipeline} on `{run.sha[:8]}`{by}. "
            "Closing.")


def _marker(meta: IssueMeta) -> str:
    said = json.dumps({"key": meta.key, "branch": meta.branch, "job": meta.job, "since": meta.since},
                      separators=(",", ":"))
    return f"<!-- hummingbird-broken {said} -->"


def _break_line(culprit: Culprit) -> str:
    """One break of the job (no relative time: the text stays)."""
    return f"- **Culprit**: {culprit_cell(replace(culprit, now='', issue_url=''))}"

