"""What a culprit search found: the run where a failure of the target branch first showed, the run before it, and
the changes between them with the merge requests that brought them in. Pure data and the grouping of a range."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class RunRef:
    """One run of the job on the target branch: its pipeline and commit, and the job's page."""

    pipeline_id: int
    sha: str
    pipeline_url: str = ""
    job_url: str = ""


@dataclass(frozen=True, slots=True)
class Change:
    """One change of the range: a merge request and the commit that brought it in (`mr_iid` 0: a push)."""

    sha: str
    mr_iid: int = 0
    mr_url: str = ""
    author: str = ""
    """The merge request's author's username; for a push, the commit's author name."""
    when: str = ""
    """When it reached the branch (ISO 8601): the merge request's merge, else the commit's date."""
    commits: int = 1


@dataclass(frozen=True, slots=True)
class Culprit:
    """The answer of one search. `changes` is the range between `last_good` and `first_bad`, newest first; the
    culprit is named only when the range is one change and nothing was left unread (`named`)."""

    branch: str
    job: str
    first_bad: RunRef
    last_good: RunRef | None = None
    """None: it failed this way on the oldest run searched too (the break is older than the search)."""
    changes: tuple[Change, ...] = ()
    commits: int = 0
    """Commits of the range (GitLab's compare); more than `changes` cover when the range was cut."""
    gap: str = ""
    """Why the answer is not narrower: a budget spent, a list or a log not read. Said, never guessed."""
    searched: int = 0
    """Target-branch pipelines the search listed."""
    probes: int = 0
    """Runs whose job list or log the bisection asked for."""
    calls: int = 0
    """GitLab calls this answer cost (0: it came from the cache)."""
    flaky: bool = False
    """A flaky failure: `first_bad` is a commit where it failed this way and passed too (no range, no culprit)."""
    now: str = ""
    """When the search ran (ISO 8601): what "2 days ago" is counted from."""
    key: str = ""
    """The failure's identity on its branch (job and fingerprint; the job alone when test cases decide it), for the
    issue that tracks it."""
    issue_url: str = ""
    """The issue that tracks the break (`triage.culprit_issue`)."""
    case: str = ""
    """The failed test case whose break is the earliest, when the search went by test reports, not logs."""

    @property
    def named(self) -> Change | None:
        """The one change that broke the branch, when the evidence names one."""
        whole = self.last_good is not None and not self.gap and self.commits == sum(c.commits for c in self.changes)
        return self.changes[0] if whole and len(self.changes) == 1 and not self.flaky else None


def changes_of(commits: Sequence[Mapping[str, Any]], mrs: Mapping[str, Sequence[Mapping[str, Any]]],
               branch: str) -> tuple[Change, ...]:
    """The range's commits (oldest first) grouped by the merge request into `branch` that brought each in (a commit
    no such MR holds is a change of its own), newest first; a change's commit is its newest in the range (a merge
    request's merge commit)."""
    out: dict[str, Change] = {}
    for commit in reversed(commits):
        change = _change(commit, mrs.get(str(commit.get("id") or ""), ()), branch)
        key = f"!{change.mr_iid}" if change.mr_iid else change.sha
        out[key] = replace(out[key], commits=out[key].commits + 1) if key in out else change
    return tuple(out.values())


def _change(commit: Mapping[str, Any], mrs: Sequence[Mapping[str, Any]], branch: str) -> Change:
    """The commit as a change: of the merge request into `branch` that holds it, else a push of its own."""
    sha, created = str(commit.get("id") or ""), str(commit.get("created_at") or "")
    mr = next((m for m in mrs if m.get("state") == "merged" and m.get("target_branch") == branch), None)
    if mr is None:
        return Change(sha, author=str(commit.get("author_name") or ""), when=created)
    return Change(sha, int(mr.get("iid") or 0), str(mr.get("web_url") or ""), str(mr.get("author") or ""),
                  str(mr.get("merged_at") or created))


def ago(when: str, now: str) -> str:
    """`when` counted back from `now` in the largest whole unit ("2 days ago"); "" when either is unknown."""
    try:
        seconds = (datetime.fromisoformat(now.replace("Z", "+00:00"))
                   - datetime.fromisoformat(when.replace("Z", "+00:00"))).total_seconds()
    except ValueError:
        return ""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''} ago"
    return "just now"
