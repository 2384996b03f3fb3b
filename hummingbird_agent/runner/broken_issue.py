"""The issue of a broken target branch in the service (`triage.culprit_issue`, off unless set): one issue per
distinct pre-existing failure (per job break, when test cases decide it), found again by its marker (never opened
twice, also across replicas: a second one opened at the same moment is closed into the first), listing the open MRs
it blocks and each case's break (edited in place, read back); closed with the fixing pipeline when the branch passes
the job again. Written with the bot's token, in the MR's own project only; a token that may not write issues writes
nothing (logged)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.errors import AgentError, OutcomeUnknown, TransientError
from hummingbird_agent.gitlab.client import GitLabClient
from hummingbird_agent.triage.broken_issue import (
    LABEL,
    IssueMeta,
    fixed_comment,
    issue_body,
    issue_title,
    listed,
    meta_of,
    with_break,
)
from hummingbird_agent.triage.culprit_model import Change, RunRef
from hummingbird_agent.triage.model import CheckResult, Verdict

log = logging.getLogger(__name__)
Issue = dict[str, Any]
# Where the branch passes the issue's job again (the pipeline and the change it ran on), None while it does not.
Fixed = Callable[[IssueMeta], Awaitable[tuple[RunRef, Change | None] | None]]


def tracked(check: CheckResult) -> bool:
    """A failure an issue tracks: pre-existing, with a search that found its failure's key (never a flaky one)."""
    culprit = check.culprit
    return check.verdict is Verdict.PRE_EXISTING and culprit is not None and not culprit.flaky and bool(culprit.key)


async def track_breaks(gitlab: GitLabClient, project_id: int, mr_iid: int, checks: Sequence[CheckResult],
                       fixed: Fixed) -> tuple[CheckResult, ...]:
    """The checks with their culprits linked to their issues: each tracked failure's issue found (else opened) and
    this MR listed on it; the project's other open break issues no longer list this MR, and those whose branch
    passes their job again are closed. Failures to write are logged: the note says everything else."""
    wanted = {c.culprit.key: c for c in checks if tracked(c) and c.culprit is not None}
    try:
        bot = await gitlab.bot_user_id()
        links: dict[str, str] = {}
        for key, check in wanted.items():
            issue = await _issue(gitlab, project_id, bot, key) or await _open(gitlab, project_id, bot, check)
            await _listing(gitlab, project_id, issue, mr_iid, add=True, check=check)
            links[key] = str(issue.get("web_url") or "")
        for issue, meta in await _own(gitlab, project_id, bot):
            if meta.key not in wanted:
                await _listing(gitlab, project_id, issue, mr_iid, add=False)
                await _close_if_fixed(gitlab, project_id, issue, meta, fixed)
    except AgentError as exc:
        log.warning("issues of broken branches in project %s not updated: %s", project_id, exc)
        return tuple(checks)
    return tuple(_linked(c, links) for c in checks)


async def close_fixed(gitlab: GitLabClient, project_id: int, branch: str, fixed: Fixed) -> None:
    """A pipeline of `branch` finished: the project's open break issues of that branch whose job passes again are
    closed (the target branch's own pipelines, which name no MR, are where a fix shows first)."""
    try:
        bot = await gitlab.bot_user_id()
        for issue, meta in await _own(gitlab, project_id, bot):
            if meta.branch == branch:
                await _close_if_fixed(gitlab, project_id, issue, meta, fixed)
    except AgentError as exc:
        log.warning("issues of broken branches in project %s not closed: %s", project_id, exc)


def _linked(check: CheckResult, links: dict[str, str]) -> CheckResult:
    if check.culprit is None or check.culprit.key not in links:
        return check
    return replace(check, culprit=replace(check.culprit, issue_url=links[check.culprit.key]))


async def _own(gitlab: GitLabClient, project_id: int, bot: int, key: str = "") -> list[tuple[Issue, IssueMeta]]:
    """The project's open issues the bot opened with its marker (of this failure `key` when given), oldest first."""
    found = []
    for issue in await gitlab.issues(project_id, labels=LABEL, search=key):
        meta = meta_of(str(issue.get("description") or ""))
        if (issue.get("author") or {}).get("id") == bot and meta is not None and (not key or meta.key == key):
            found.append((issue, meta))
    return sorted(found, key=lambda pair: int(pair[0].get("iid") or 0))


async def _issue(gitlab: GitLabClient, project_id: int, bot: int, key: str) -> Issue | None:
    found = await _own(gitlab, project_id, bot, key)
    return found[0][0] if found else None


async def _open(gitlab: GitLabClient, project_id: int, bot: int, check: CheckResult) -> Issue:
    """A new issue for the failure, posted once; the oldest open one of the failure wins (another replica may have
    opened one at the same moment): a younger one of ours is closed into it."""
    assert check.culprit is not None
    mine: Issue | None = None
    try:
        mine = await gitlab.create_issue(project_id, title=issue_title(check, check.culprit),
                                         description=issue_body(check, check.culprit, []), labels=LABEL)
    except (OutcomeUnknown, TransientError) as exc:
        log.warning("issue of %s: %s; looking for it before anything else", check.name, exc)
    found = await _own(gitlab, project_id, bot, check.culprit.key)
    if not found:
        raise TransientError(f"the issue of {check.name} was not found after it was posted")
    first = found[0][0]
    if mine is not None and int(mine.get("iid") or 0) != int(first.get("iid") or 0):
        await gitlab.comment_issue(project_id, int(mine["iid"]), f"Duplicate of #{first['iid']}.")
        await gitlab.edit_issue(project_id, int(mine["iid"]), state_event="close")
    return first


async def _listing(gitlab: GitLabClient, project_id: int, issue: Issue, mr_iid: int, add: bool,
                   check: CheckResult | None = None) -> None:
    """This MR listed (or not) among the issue's blocked MRs, and the `check`'s break among the job's breaks (the
    earliest in the title): read, edited, read back once a replica's write based on an older read would have landed
    (merged in the next round)."""
    description = str(issue.get("description") or "")
    for _ in range(budgets.BROKEN_ISSUE_WRITE_ROUNDS):
        wanted, title = with_break(description, check) if check is not None else (description, "")
        wanted = listed(wanted, mr_iid, add)
        if wanted == description:
            return
        fields = {"description": wanted, **({"title": title} if title else {})}
        await gitlab.edit_issue(project_id, int(issue["iid"]), **fields)
        await asyncio.sleep(budgets.BROKEN_ISSUE_SETTLE_S)
        description = str((await gitlab.issue(project_id, int(issue["iid"]))).get("description") or "")
    log.warning("issue #%s: its list of blocked MRs still changing after %d writes", issue.get("iid"),
                budgets.BROKEN_ISSUE_WRITE_ROUNDS)


async def _close_if_fixed(gitlab: GitLabClient, project_id: int, issue: Issue, meta: IssueMeta,
                          fixed: Fixed) -> None:
    """Closed with a comment naming the fixing pipeline and change once the branch passes the job again."""
    found = await fixed(meta)
    if found is None:
        return
    current = await gitlab.issue(project_id, int(issue["iid"]))
    if current.get("state") != "opened":
        return  # another replica closed it
    await gitlab.comment_issue(project_id, int(issue["iid"]), fixed_comment(meta, *found))
    await gitlab.edit_issue(project_id, int(issue["iid"]), state_event="close")
    log.info("issue #%s closed: %s passes on %s again", issue.get("iid"), meta.job, meta.branch)
