"""The changes between the last good run and the first bad one of a culprit search: GitLab's compare of their
commits, and the merge request into the branch that brought each commit in. History does not change, so both are
cached between triages; what the budget leaves unread makes the answer a range, never a guess."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from hummingbird_agent.tools.base import ToolResult
from hummingbird_agent.triage.culprit_model import Culprit, changes_of
from hummingbird_agent.triage.reader import TriageReader, Unread


async def range_of(reader: TriageReader, project: str, head: Culprit) -> Culprit:
    """`head` (a search with both runs found) with the changes between them, newest first."""
    good, bad = head.last_good, head.first_bad
    if good is None:
        return head
    if good.sha == bad.sha:
        return replace(head, gap=_join(head.gap, f"it passed and failed this way on one commit ({bad.sha[:12]}): "
                                       "nothing between the two runs changed"))
    listed = await _commits(reader, project, good.sha, bad.sha)
    if isinstance(listed, str):
        return replace(head, gap=_join(head.gap, f"the commits between the two runs were not listed: {listed}"))
    commits, total = listed
    mrs: dict[str, list[Mapping[str, Any]]] = {}
    unread = 0
    for commit in reversed(commits):
        sha = str(commit.get("id") or "")
        found = await _mrs(reader, project, sha)
        if found is None:
            unread += 1
        else:
            mrs[sha] = found
    gap = head.gap
    if unread:
        gap = _join(gap, f"the merge requests of {unread} of its commits were not looked up")
    return replace(head, changes=changes_of(commits, mrs, head.branch), commits=total, gap=gap)


async def _commits(reader: TriageReader, project: str, good: str,
                   bad: str) -> tuple[list[Mapping[str, Any]], int] | str:
    """The range's commits (oldest first, at most CULPRIT_MAX_RANGE_COMMITS: the newest) and how many it holds; or
    why they were not read."""
    key = ("compare", project, good, bad)
    if (cached := reader.cache.lookups.get(key)) is not None:
        return tuple(cached)
    found = await reader.call("gitlab_compare_commits", from_sha=good, to_sha=bad)
    if isinstance(found, Unread):
        return found.reason
    if not isinstance(found, ToolResult) or not isinstance(found.content, list):
        return "GitLab returned no commit list"
    commits = [c for c in found.content if isinstance(c, Mapping)]
    answer = (commits, int(found.metadata.get("total") or len(commits)))
    reader.cache.lookups.put(key, answer)
    return answer


async def _mrs(reader: TriageReader, project: str, sha: str) -> list[Mapping[str, Any]] | None:
    """The merge requests that contain the commit; None when not read (the budget, GitLab's refusal)."""
    key = ("mrs", project, sha)
    if (cached := reader.cache.lookups.get(key)) is not None:
        return list(cached)
    if reader.exhausted:
        return None
    found = await reader.call("gitlab_get_commit_merge_requests", sha=sha)
    if not isinstance(found, list):
        return None
    mrs = [m for m in found if isinstance(m, Mapping)]
    reader.cache.lookups.put(key, mrs)
    return mrs


def _join(first: str, second: str) -> str:
    return f"{first}; {second}" if first else second
