"""A culprit search's answer in words: a note's table cell ("broken on `main` since !123 (`abc1234`, @bob, 2 days
ago)", linking the first failing run and the last passing one), the commit status's plain line, and the list of a
range. Pure functions; every name GitLab gave is made safe for inline text."""

from __future__ import annotations

import re

from hummingbird_agent import budgets
from hummingbird_agent.gitlab.quiet import link, link_target, no_references
from hummingbird_agent.triage.culprit_model import Change, Culprit, RunRef, ago

# What could open a link, code span, table cell or marker in the note: removed from names GitLab gave.
_UNSAFE = re.compile(r"[`|\r\n<>\[\]()\\]")


def safe(text: str, limit: int = 80) -> str:
    """A name GitLab gave (a branch, a job, a commit's author), shown inline: it mentions nobody either."""
    return no_references(_UNSAFE.sub(" ", text.strip())[:limit])


def _who(change: Change) -> str:
    return f"@{safe(change.author, 60)}" if change.mr_iid and change.author else safe(change.author, 60)


def _change(change: Change, now: str, linked: bool = True) -> str:
    """`!123 (`abc1234`, @bob, 2 days ago)`; a push: `` `abc1234` (Bob, 2 days ago) ``."""
    facts = [f"`{change.sha[:8]}`"] if change.mr_iid else []
    facts += [p for p in (_who(change), ago(change.when, now)) if p]
    if not change.mr_iid:
        return f"`{change.sha[:8]}` ({', '.join(facts)})" if facts else f"`{change.sha[:8]}`"
    mr = link(f"!{change.mr_iid}", change.mr_url) if linked else f"!{change.mr_iid}"
    return f"{mr} ({', '.join(facts)})"


def _run(label: str, run: RunRef) -> str:
    url = run.job_url or run.pipeline_url
    return link(label, url) if link_target(url) else f"{label} (pipeline {run.pipeline_id})"


def _runs(culprit: Culprit) -> str:
    first = _run("first failing run", culprit.first_bad)
    if culprit.last_good is None:
        return first
    return f"{first}, {_run('last passing run', culprit.last_good)}"


def changes_list(culprit: Culprit, linked: bool = True) -> str:
    """The range's changes, newest first, the rest counted."""
    shown = culprit.changes[: budgets.CULPRIT_SHOWN_COMMITS]
    said = ", ".join(_change(c, culprit.now, linked) for c in shown)
    listed = sum(c.commits for c in culprit.changes[: len(shown)])
    return said + (f" and {culprit.commits - listed} more commits" if culprit.commits > listed else "")


def case_said(case: str) -> str:
    """How a cell names the test case whose break it gives."""
    return f"first by test `{safe(case, 160)}`"


def culprit_cell(culprit: Culprit) -> str:
    """The culprit in the note: where the target branch broke this way, the evidence's two runs, and the issue that
    tracks the break."""
    said = _cell(culprit)
    return f"{said} · {link('tracked in an issue', culprit.issue_url)}" if link_target(culprit.issue_url) else said


def _cell(culprit: Culprit) -> str:
    branch = f"`{safe(culprit.branch)}`"
    gap = f" ({safe(culprit.gap, 240)})" if culprit.gap else ""
    if culprit.flaky:
        return (f"flaky on {branch} too: failed this way and passed on `{culprit.first_bad.sha[:8]}` "
                f"({_run('failing run', culprit.first_bad)})")
    by = f", {case_said(culprit.case)}" if culprit.case else ""
    if (named := culprit.named) is not None:
        return f"broken on {branch} since {_change(named, culprit.now)}{by}: {_runs(culprit)}"
    if culprit.last_good is None:
        return (f"failing this way on {branch} since before pipeline {culprit.first_bad.pipeline_id}, the oldest of "
                f"{culprit.searched} searched{by}: {_runs(culprit)}{gap}")
    if not culprit.changes:
        return f"broken on {branch} between two runs{by}: {_runs(culprit)}{gap}"
    count = f"{culprit.commits} commits" if culprit.commits != 1 else "1 commit"
    return f"broken on {branch} by one of {count}{by}: {changes_list(culprit)}; {_runs(culprit)}{gap}"


def culprit_plain(culprit: Culprit) -> str:
    """One plain line (a commit status's description has no links)."""
    branch = safe(culprit.branch)
    if culprit.flaky:
        return f"flaky on {branch} too (failed and passed on {culprit.first_bad.sha[:8]})"
    if (named := culprit.named) is not None:
        return f"broken on {branch} since {_change(named, culprit.now, linked=False).replace('`', '')}"
    if culprit.last_good is None:
        return f"broken on {branch} since before pipeline {culprit.first_bad.pipeline_id}"
    return (f"broken on {branch} between {culprit.last_good.sha[:8]} and {culprit.first_bad.sha[:8]} "
            f"({culprit.commits} commits)")
