"""One page of the project's newest jobs (every pipeline's, newest first): which pipelines it shows whole, so that
their job lists need no call of their own. A pipeline it does not show whole is read on its own; never guessed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from hummingbird_agent import budgets

Job = Mapping[str, Any]
_MARGIN = timedelta(seconds=budgets.TRIAGE_RECENT_JOBS_MARGIN_S)


@dataclass(frozen=True, slots=True)
class RecentJobs:
    by_pipeline: Mapping[int, tuple[Job, ...]] = field(default_factory=dict)
    """Each pipeline's jobs on the page, oldest first."""
    created: Mapping[int, datetime] = field(default_factory=dict)
    """When each pipeline on the page was created (its jobs' `pipeline` says)."""
    oldest: datetime | None = None
    """When the page's oldest job was created."""
    last: bool = False
    """No older job exists: the page shows every job of the project."""

    def whole(self, pipeline: Mapping[str, Any]) -> list[Job] | None:
        """The pipeline's jobs when the page shows all of them, else None. A pipeline without a job on the page is
        never shown whole: it may have been created after the page was read (GitLab commits a pipeline with its
        jobs, so one job on the page means they all exist)."""
        pipeline_id = int(pipeline["id"])
        shown = self.by_pipeline.get(pipeline_id)
        if not shown:
            return None
        if not self.last:
            created = self.created.get(pipeline_id)
            if created is None or self.oldest is None or self.oldest > created - _MARGIN:
                return None
        return list(shown)


def recent_jobs(listed: Sequence[Any], more: bool) -> RecentJobs:
    """The page as the read tool returns it (each job with `pipeline_id` and `pipeline_created_at`)."""
    by_pipeline: dict[int, list[Job]] = {}
    created: dict[int, datetime] = {}
    times: list[datetime] = []
    for job in listed:
        if not isinstance(job, Mapping) or not job.get("pipeline_id"):
            return RecentJobs()  # a job that names no pipeline: nothing on the page can be placed for sure
        pipeline_id = int(job["pipeline_id"])
        by_pipeline.setdefault(pipeline_id, []).append({k: v for k, v in job.items() if k != "pipeline_created_at"})
        if (when := _time(job.get("pipeline_created_at"))) is not None:
            created[pipeline_id] = when
        if (when := _time(job.get("created_at"))) is not None:
            times.append(when)
    whole_times = len(times) == len(listed)
    return RecentJobs({p: tuple(sorted(jobs, key=lambda j: int(j.get("id") or 0))) for p, jobs in by_pipeline.items()},
                      created, min(times) if times and whole_times else None, not more)


def _time(value: Any) -> datetime | None:
    """A time GitLab gave (UTC, `Z`); None when absent or without its zone (it could not be compared)."""
    try:
        when = datetime.fromisoformat(str(value).replace("Z", "+00:00")) if value else None
    except ValueError:
        return None
    return when if when is not None and when.tzinfo is not None else None
