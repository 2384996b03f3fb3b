"""An MR's CI failure as a knowledge-base incident: the failing jobs of one SHA (commit statuses) with
their log excerpts, read through the workflow's declared data sources (read token), plus the trusted
discussion read with the bot client and filtered by access level."""

from __future__ import annotations

import asyncio
import codecs
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from hummingbird_agent import budgets
from hummingbird_agent.config import LoadedConfig
from hummingbird_agent.data_sources import register_selected
from hummingbird_agent.data_sources.gitlab_discussions import REDACTED, filter_discussions
from hummingbird_agent.gitlab.client import DEVELOPER_ACCESS, GitLabClient
from hummingbird_agent.logs import excerpt_lines
from hummingbird_agent.runner.work_order import WorkOrder
from hummingbird_agent.tools.base import StreamingResponse, ToolDef, ToolResult
from hummingbird_agent.tools.registry import ToolRegistry, argument_problem

_JOB_URL = re.compile(r"/-/jobs/(\d+)(?:[/?#]|$)")


@dataclass(frozen=True, slots=True)
class FailedJob:
    name: str
    stage: str
    job_id: int | None
    """GitLab CI job id (from the status target_url); None for external statuses (Konflux...)."""


def failing_jobs(statuses: Iterable[Mapping[str, Any]]) -> list[FailedJob]:
    """The latest status of each name that failed and may not fail (a retried job counts once)."""
    latest: dict[str, Mapping[str, Any]] = {}
    for status in sorted(statuses, key=lambda s: int(s.get("id") or 0)):
        latest[str(status.get("name"))] = status
    jobs = []
    for name, status in latest.items():
        if status.get("status") == "failed" and not status.get("allow_failure"):
            match = _JOB_URL.search(str(status.get("target_url") or ""))
            jobs.append(FailedJob(name, str(status.get("stage") or ""), int(match[1]) if match else None))
    return jobs


def iter_lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """Text lines of a byte stream (invalid UTF-8 replaced), one chunk in memory at a time."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    rest = ""
    for chunk in chunks:
        *lines, rest = (rest + decoder.decode(chunk)).split("\n")
        yield from lines
    tail = rest + decoder.decode(b"", final=True)
    if tail:
        yield tail


def log_excerpt(chunks: Iterable[bytes]) -> str:
    """The failure excerpt of a streamed log (blocking: run it in a thread)."""
    excerpt = excerpt_lines(iter_lines(chunks), max_lines=budgets.BAMBOO_LOG_EXCERPT_LINES)
    return "\n".join(line for _, line in excerpt.lines)


def discussion_text(trusted: Sequence[Mapping[str, Any]]) -> str:
    """Members' comments as `author: text`; agent notes, system notes and withheld comments left out."""
    lines = []
    for discussion in trusted:
        for note in discussion.get("notes") or []:
            if note.get("agent_note") or note.get("system") or note.get("body") == REDACTED:
                continue
            lines.append(f"{note.get('author')}: {str(note.get('body') or '').strip()}")
    return "\n\n".join(lines)


class ReadTools:
    """The data-source tools a workflow declares, called directly by code (their read token is bound in)."""

    def __init__(self) -> None:
        self._tools: dict[str, ToolDef] = {}
        self.gaps: list[str] = []

    def register_data_source(self, source: str, tools: Sequence[ToolDef], tool_notes: str = "",
                             response_metadata: Mapping[str, Any] | None = None) -> None:
        self._tools.update({t.name: t for t in tools})

    @staticmethod
    def declared(loaded: LoadedConfig, workflow: str, project: str) -> ReadTools:
        tools = ReadTools()
        tools.gaps += register_selected(cast(ToolRegistry, tools), loaded, workflow, project)
        return tools

    async def call(self, name: str, **args: Any) -> Any:
        """The tool's output (a stream is returned unread), or None with the reason kept in `gaps`."""
        tool = self._tools.get(name)
        problem = f"{name} is not available" if tool is None else argument_problem(tool.parameters, args)
        if tool is None or problem:
            self.gaps.append(problem or name)
            return None
        output = await asyncio.to_thread(tool.handler, **args)
        if isinstance(output, ToolResult) and not output.ok:
            self.gaps.append(str(output.content))
            return None
        return output


@dataclass(slots=True)
class Gathered:
    """What the incident is built from; `gaps` says what could not be read."""

    task: dict[str, Any] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)
    discussion: str = ""
    title: str = ""
    gaps: list[str] = field(default_factory=list)


async def _read_stream(output: Any, reader: Any) -> Any:
    if not isinstance(output, StreamingResponse) or not isinstance(output.chunks, Iterable):
        return None
    return await asyncio.to_thread(reader, output.chunks)


def _statuses(chunks: Iterable[bytes]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in iter_lines(chunks) if line.strip()]


async def gather_failure(tools: ReadTools, order: WorkOrder, sha: str | None) -> Gathered:
    """Task facts and log excerpts of the failing jobs of `sha`; the MR title."""
    out = Gathered(task={"project": order.project, "mr": order.mr_iid, "status": "failed"})
    if order.pipeline_id is not None:
        out.task["pipeline"] = order.pipeline_id
    details = await tools.call("gitlab_get_mr_details", project=order.project, mr_iid=order.mr_iid)
    out.title = str(details.get("title") or "") if isinstance(details, dict) else ""
    statuses = await _read_stream(await tools.call("gitlab_get_commit_statuses", project=order.project, sha=sha),
                                  _statuses) if sha else None
    jobs = failing_jobs(statuses or [])[: budgets.BAMBOO_INCIDENT_MAX_JOBS]
    if jobs:
        out.task.update(job=jobs[0].name, stage=jobs[0].stage)
    for job in jobs:
        if job.job_id is not None:
            output = await tools.call("gitlab_get_job_log", project=order.project, job_id=job.job_id)
            excerpt = await _read_stream(output, log_excerpt)
            if excerpt:
                out.logs[job.name] = excerpt
    if not jobs:
        out.gaps.append(f"no failed job found for {sha[:12]}" if sha else "the analysed commit is not known")
    out.gaps += tools.gaps
    return out


async def trusted_discussion(gitlab: GitLabClient, project_id: int, discussions: list[dict[str, Any]]) -> str:
    """The discussion as members wrote it: access levels come from the API, never from the text."""
    authors = {(n.get("author") or {}).get("id") for d in discussions for n in d.get("notes") or []}
    levels = {a: await gitlab.access_level(project_id, a) for a in authors if isinstance(a, int)}
    trusted = filter_discussions(discussions, lambda author: levels.get(author, 0) >= DEVELOPER_ACCESS)
    return discussion_text(trusted)
