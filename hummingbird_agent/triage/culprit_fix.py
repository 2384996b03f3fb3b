"""Whether a tracked break of the target branch is fixed: the newest of the branch's pipelines after the first
failing one that ran the job passed it; the fix is the first pipeline of that streak of passes, with the change it
ran on (its merge request into the branch, else the pushed commit)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.triage.broken_issue import IssueMeta
from hummingbird_agent.triage.culprit import run_ref
from hummingbird_agent.triage.culprit_model import Change, RunRef, changes_of
from hummingbird_agent.triage.evidence import by_name
from hummingbird_agent.triage.reader import Job, TriageReader


async def passing_again(reader: TriageReader, meta: IssueMeta) -> tuple[RunRef, Change | None] | None:
    """The fixing pipeline and its change; None while the newest run of the job after the break fails (or none
    ran, or what was read does not tell)."""
    listed = await reader.pipelines(ref=meta.branch, limit=budgets.BROKEN_FIX_PIPELINES)
    streak: tuple[Mapping[str, Any], Job] | None = None
    for pipeline in listed:
        if int(pipeline.get("id") or 0) <= meta.since or pipeline.get("status") not in ("success", "failed"):
            continue
        attempts = by_name((await reader.jobs(pipeline)).jobs).get(meta.job)
        if not attempts:
            continue
        if attempts[-1].get("status") != "success":
            break
        streak = (pipeline, attempts[-1])
    if streak is None:
        return None
    pipeline, job = streak
    sha = str(pipeline.get("sha") or "")
    mrs = await reader.call("gitlab_get_commit_merge_requests", sha=sha)
    found = [m for m in mrs if isinstance(m, Mapping)] if isinstance(mrs, list) else []
    changes = changes_of([{"id": sha}], {sha: found}, meta.branch)
    return run_ref(pipeline, job), (changes[0] if changes else None)
