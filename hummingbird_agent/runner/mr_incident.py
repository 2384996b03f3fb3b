"""An MR's CI failure as a knowledge-base incident: the failing jobs of one SHA (commit statuses) with
their log excerpts, read through the workflow's declared data sources (read token), plus the trusted
discussion read with the bot client and filtered by access level."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.data_sources.direct import ReadTools
from hummingbird_agent.data_sources.gitlab_discussions import REDACTED, REDACTED_TITLE, filter_discussions
from hummingbird_agent.gitlab.client import DEVELOPER_ACCESS, GitLabClient
from hummingbird_agent.logs import excerpt_lines
from hummingbird_agent.logs.decode import iter_lines
from hummingbird_agent.runner.job_facts import JobLog, LogFacts, external_references, job_fields
from hummingbird_agent.runner.work_order import WorkOrder
from hummingbird_agent.tools.base import StreamingResponse

_JOB_URL = re.compile(r"/-/jobs/(\d+)(?:[/?#]|$)")


@dataclass(frozen=True, slots=True)
class FailedJob:
    name: str
    stage: str
    job_id: int | None
    """GitLab CI job id (from the status target_url); None for external statuses (Konflux...)."""


def latest_statuses(statuses: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The latest status of each name (a retried job counts once)."""
    latest: dict[str, Mapping[str, Any]] = {}
    for status in sorted(statuses, key=lambda s: int(s.get("id") or 0)):
        latest[str(status.get("name"))] = status
    return latest


def failed_statuses(statuses: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The latest status of each name that failed and may not fail."""
    return [s for s in latest_statuses(statuses).values()
            if s.get("status") == "failed" and not s.get("allow_failure")]


def failing_jobs(statuses: Iterable[Mapping[str, Any]]) -> list[FailedJob]:
    jobs = []
    for status in failed_statuses(statuses):
        match = _JOB_URL.search(str(status.get("target_url") or ""))
        jobs.append(FailedJob(str(status.get("name")), str(status.get("stage") or ""),
                              int(match[1]) if match else None))
    return jobs


def still_failing(failed: Iterable[str], statuses: Iterable[Mapping[str, Any]]) -> list[str]:
    """Which of the `failed` job names do not pass in `statuses` (failed again, skipped, or gone)."""
    latest = latest_statuses(statuses)
    return [name for name in failed if (latest.get(name) or {}).get("status") != "success"]


def read_job_log(chunks: Iterable[bytes]) -> JobLog:
    """The failure excerpt of a streamed log, the runner's image and the failing command (blocking: run it
    in a thread)."""
    facts = LogFacts()
    excerpt = excerpt_lines(facts.tap(iter_lines(chunks)), max_lines=budgets.BAMBOO_LOG_EXCERPT_LINES)
    return JobLog("\n".join(line for _, line in excerpt.lines), facts.image, facts.failing_command(excerpt.lines),
                  tuple(facts.tf_requests.items()), facts.tail.text())


def discussion_text(trusted: Sequence[Mapping[str, Any]]) -> str:
    """Members' comments as `author: text`; agent notes, system notes and withheld comments left out."""
    lines = []
    for discussion in trusted:
        for note in discussion.get("notes") or []:
            if note.get("agent_note") or note.get("system") or note.get("body") == REDACTED:
                continue
            lines.append(f"{note.get('author')}: {str(note.get('body') or '').strip()}")
    return "\n\n".join(lines)


@dataclass(slots=True)
class Gathered:
    """What the incident is built from; `gaps` says what could not be read."""

    task: dict[str, Any] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)
    tails: dict[str, str] = field(default_factory=dict)
    """Each job's log tail (the whole-log vector's input; never shown to a model)."""
    discussion: str = ""
    title: str = ""
    author_trusted: bool = False
    """The MR's author is Developer+ (its title was not withheld); decides whether commit titles are shown."""
    gaps: list[str] = field(default_factory=list)


async def _read_stream(output: Any, reader: Any) -> Any:
    if not isinstance(output, StreamingResponse) or not isinstance(output.chunks, Iterable):
        return None
    return await asyncio.to_thread(reader, output.chunks)


def _statuses(chunks: Iterable[bytes]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in iter_lines(chunks) if line.strip()]


async def gather_failure(tools: ReadTools, order: WorkOrder, sha: str | None) -> Gathered:
    """Task facts (job, stage, image, runner tags, failure reason, failing command, Konflux and Testing Farm
    references) and log excerpts of the failing jobs of `sha`; the MR title."""
    out = Gathered(task={"project": order.project, "mr": order.mr_iid, "status": "failed"})
    if order.pipeline_id is not None:
        out.task["pipeline"] = order.pipeline_id
    if sha:
        out.task["sha"] = sha
    details = await tools.call("gitlab_get_mr_details", project=order.project, mr_iid=order.mr_iid)
    out.title = str(details.get("title") or "") if isinstance(details, dict) else ""
    out.author_trusted = bool(out.title) and out.title != REDACTED_TITLE  # the MR-text gate's own decision
    statuses = await _read_stream(await tools.call("gitlab_get_commit_statuses", project=order.project, sha=sha),
                                  _statuses) if sha else None
    failed = failed_statuses(statuses or [])
    jobs = failing_jobs(failed)[: budgets.BAMBOO_INCIDENT_MAX_JOBS]
    read: list[JobLog] = []
    facts = [await _job(tools, order.project, job, out, read) for job in jobs]
    if facts:
        out.task.update(facts[0])
    if len(facts) > 1:
        out.task["jobs"] = facts
    out.task.update(external_references(failed, read))
    if not jobs:
        out.gaps.append(f"no failed job found for {sha[:12]}" if sha else "the analysed commit is not known")
    out.gaps += tools.gaps
    return out


async def _job(tools: ReadTools, project: str, job: FailedJob, out: Gathered,
               read: list[JobLog]) -> dict[str, Any]:
    """One failing job's facts; its excerpt and tail go to `out`, its log to `read`. External statuses
    have no job to read."""
    facts: dict[str, Any] = {"job": job.name, "stage": job.stage}
    if job.job_id is None:
        return facts
    record = await tools.call("gitlab_get_job", project=project, job_id=job.job_id)
    log = await _read_stream(await tools.call("gitlab_get_job_log", project=project, job_id=job.job_id),
                             read_job_log)
    if log is not None:
        read.append(log)
    if log is not None and log.excerpt:
        out.logs[job.name] = log.excerpt
    if log is not None and log.tail:
        out.tails[job.name] = log.tail
    return facts | job_fields(record if isinstance(record, dict) else None, log)


async def trusted_discussion(gitlab: GitLabClient, project_id: int, discussions: list[dict[str, Any]]) -> str:
    """The discussion as members wrote it: access levels come from the API, never from the text."""
    authors = {(n.get("author") or {}).get("id") for d in discussions for n in d.get("notes") or []}
    levels = {a: await gitlab.access_level(project_id, a) for a in authors if isinstance(a, int)}
    trusted = filter_discussions(discussions, lambda author: levels.get(author, 0) >= DEVELOPER_ACCESS)
    return discussion_text(trusted)
