"""The job lists the verdicts are decided from: attempts of each job in the analysed pipeline, in the other
pipelines of the same commit, on the merge base and on recent target-branch pipelines."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hummingbird_agent.triage.reader import Job

# GitLab failure reasons that say GitLab itself failed, whatever the MR changed: its scheduler, its API, its data,
# an archived project, a dependency's artifacts expired, a schedule gone stale, the CI quota, an IP restriction.
PLATFORM_REASONS = frozenset({
    "scheduler_failure", "api_failure", "data_integrity_failure", "archived_failure", "stale_schedule",
    "ci_quota_exceeded", "ip_restriction_failure",
})
# Reasons GitLab reports for the runner or the job that the MR can cause: a log it floods, a job that hangs or waits
# for a runner its new tags name, an image or a CI configuration it changes, a feature its CI file uses that the
# runner lacks, memory it exhausts, a dependency's artifacts it lets expire (`expire_in`) before the job reads them.
# Infrastructure only when the merge base's run of the job failed the same way.
MR_CAUSABLE_REASONS = frozenset({
    "runner_system_failure", "stuck_or_timeout_failure", "trace_size_exceeded", "runner_unsupported",
    "no_matching_runner", "unmet_prerequisites", "missing_dependency_failure",
})
INFRASTRUCTURE_REASONS = PLATFORM_REASONS | MR_CAUSABLE_REASONS


# The key the triage adds to a child pipeline: the name of the trigger job that started it. Two trigger jobs start
# two child pipelines whose jobs may share names and still be other jobs.
TRIGGER = "trigger_job"

# Failure reasons of a script that ran too long: its log shows where it stopped, not why it hung.
HANGS = frozenset({"job_execution_timeout"})


def by_name(jobs: Iterable[Job]) -> dict[str, list[Job]]:
    """Attempts of each job name, oldest first."""
    out: dict[str, list[Job]] = {}
    for job in sorted(jobs, key=lambda j: int(j.get("id") or 0)):
        out.setdefault(str(job.get("name")), []).append(job)
    return out


def failed_attempts(attempts: Sequence[Job]) -> list[Job]:
    return [a for a in attempts if a.get("status") == "failed" and not a.get("allow_failure")]


def same_kind(pipeline: Mapping[str, Any], of: Mapping[str, Any]) -> bool:
    """Whether `pipeline` runs the same jobs as `of`: the same ref and source, and for a child pipeline the same
    trigger job."""
    return all(pipeline.get(k) == of.get(k) for k in ("ref", "source", TRIGGER))


def passed(attempts: Sequence[Job]) -> Job | None:
    return next((a for a in reversed(attempts) if a.get("status") == "success"), None)


@dataclass(slots=True)
class Runs:
    """Job attempts by name in a set of pipelines, newest pipeline first."""

    pipelines: list[tuple[Mapping[str, Any], dict[str, list[Job]]]] = field(default_factory=list)

    def add(self, pipeline: Mapping[str, Any], jobs: Iterable[Job]) -> None:
        self.pipelines.append((pipeline, by_name(jobs)))

    def attempts(self, name: str) -> list[tuple[Mapping[str, Any], list[Job]]]:
        """(pipeline, attempts) of every pipeline in which the job `name` ran, newest first."""
        return [(p, jobs[name]) for p, jobs in self.pipelines if jobs.get(name)]

    def ran(self, name: str) -> bool:
        return bool(self.attempts(name))

    def first_pass(self, name: str) -> Job | None:
        return next((job for _, attempts in self.attempts(name) if (job := passed(attempts))), None)

    def rerun_pass(self, name: str, of: Mapping[str, Any]) -> Job | None:
        """A pass of `name` in a later pipeline of the same ref and source as `of` (a re-run of that pipeline on the
        same commit, so the same job definition): a pipeline of another kind may run another job of that name."""
        later = [(p, a) for p, a in self.attempts(name) if int(p.get("id") or 0) > int(of.get("id") or 0)
                 and same_kind(p, of)]
        return next((job for _, attempts in later if (job := passed(attempts))), None)

    def started_by(self, trigger: object) -> Runs:
        """The child pipelines among these that the trigger job `trigger` started."""
        return Runs([(p, jobs) for p, jobs in self.pipelines if p.get(TRIGGER) == trigger])

    def failures(self, name: str) -> list[Job]:
        """The last failed attempt of `name` in each pipeline where its latest attempt failed, newest first."""
        return [attempts[-1] for _, attempts in self.attempts(name) if failed_attempts(attempts[-1:])]


@dataclass(slots=True)
class Sources:
    """Everything the verdicts compare against, read once per triage."""

    analysed: dict[str, list[Job]] = field(default_factory=dict)
    pipeline: Mapping[str, Any] = field(default_factory=dict)
    """The analysed pipeline (its unit test report is read afresh)."""
    same_sha: Runs = field(default_factory=Runs)
    """The commit's other pipelines (a retried pipeline, a branch pipeline beside the MR's)."""
    base: Runs = field(default_factory=Runs)
    base_problem: str = ""
    """Why a job list of the merge base's pipelines is not whole: a job it does not show may have run there."""
    base_children: Runs = field(default_factory=Runs)
    """The child pipelines of the merge base's pipelines, each marked with its trigger job (`TRIGGER`)."""
    target: Runs = field(default_factory=Runs)
    """Recent pipelines of the target branch within the look-back window."""
    unlisted_problem: str = ""
    """Why the analysed pipeline's job list is not whole ("" when it is)."""
    unlisted_failures: list[tuple[str, str]] = field(default_factory=list)
    """(name, url) of failed jobs listed only apart, beyond the cut of the analysed pipeline's list."""
    problems: list[str] = field(default_factory=list)
    """Why other lists of the commit (its pipelines, their jobs, their trigger jobs) are not whole."""
