"""GitLab as the triage reads it: through the workflow's read tools, within a call and byte budget, with
finished pipelines' job lists and finished logs' excerpts cached across triages."""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from hummingbird_agent import budgets
from hummingbird_agent.data_sources.direct import ReadTools
from hummingbird_agent.tools.base import StreamingResponse, ToolResult
from hummingbird_agent.triage.cases import Report, report_of
from hummingbird_agent.triage.excerpt import LogEvidence, evidence_of
from hummingbird_agent.triage.model import TriageLimits
from hummingbird_agent.triage.recent_jobs import RecentJobs, recent_jobs

Job = Mapping[str, Any]
V = TypeVar("V")
# Pipeline states after which a pipeline's jobs no longer change (except by a retry, see reader.jobs).
FINISHED = frozenset({"success", "failed", "canceled", "skipped"})


@dataclass(frozen=True, slots=True)
class Unread:
    """Why something was not read (a budget spent, GitLab's refusal, an empty or erased log): said on the row
    it concerns, and never evidence that all is well."""

    reason: str


@dataclass(frozen=True, slots=True)
class Listed:
    """A pipeline's job attempts, oldest first; `problem` says why the list is not the whole pipeline."""

    jobs: list[Job]
    problem: str = ""


class _Lru(OrderedDict[Any, V]):
    def __init__(self, size: int) -> None:
        super().__init__()
        self._size = size

    def put(self, key: Any, value: V) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self._size:
            self.popitem(last=False)


class TriageCache:
    """Kept by the service between triages: job lists of finished pipelines, evidence of finished logs."""

    def __init__(self) -> None:
        self.jobs: _Lru[tuple[Job, ...]] = _Lru(budgets.TRIAGE_CACHE_PIPELINES)
        self.logs: _Lru[LogEvidence] = _Lru(budgets.TRIAGE_CACHE_LOGS)
        self.reports: _Lru[Report] = _Lru(budgets.TRIAGE_CACHE_REPORTS)


class _Budget:
    """Bytes read from a log stream, stopping at the per-log cap or the triage's remaining byte budget."""

    def __init__(self, limit: int) -> None:
        self.limit, self.read, self.cut = limit, 0, False

    def take(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        for chunk in chunks:
            if self.read + len(chunk) > self.limit:
                self.cut = True
                yield chunk[: self.limit - self.read]
                self.read = self.limit
                return
            self.read += len(chunk)
            yield chunk


class TriageReader:
    """One triage's reads of one project: counted, capped, and each gap said once."""

    def __init__(self, tools: ReadTools, project: str, cache: TriageCache, limits: TriageLimits | None = None) -> None:
        self._tools, self._project, self._cache = tools, project, cache
        self.limits = limits or TriageLimits()
        self.calls = 0
        self.log_bytes = 0
        self.report_bytes = 0
        self.gaps: list[str] = []
        self._recent: RecentJobs | None = None

    def _gap(self, text: str) -> None:
        if text not in self.gaps:
            self.gaps.append(text)

    @property
    def exhausted(self) -> bool:
        """Whether the call budget is spent (the gap saying so is then kept)."""
        if self.calls < self.limits.max_calls:
            return False
        self._gap(f"the triage's budget of {self.limits.max_calls} GitLab calls ran out; later checks were "
                  "classified from what was already read")
        return True

    async def _call(self, tool: str, **args: Any) -> Any:
        """The tool's output, or an `Unread` saying why there is none (kept as a gap)."""
        return await self._read(tool, args)

    async def _read(self, tool: str, args: Mapping[str, Any], quiet: bool = False) -> Any:
        """The tool's output, or an `Unread` saying why there is none (kept as a gap unless `quiet`: a read whose
        failure loses nothing)."""
        if self.exhausted:
            return Unread(f"the triage's budget of {self.limits.max_calls} GitLab calls ran out")
        self.calls += 1
        before = len(self._tools.gaps)
        output = await self._tools.call(tool, project=self._project, **args)
        for gap in self._tools.gaps[before:] if not quiet else ():
            self._gap(gap)
        return Unread(self._tools.last_problem or f"{tool} failed") if output is None else output

    async def mr(self, iid: int) -> Mapping[str, Any]:
        details = await self._call("gitlab_get_mr_details", mr_iid=iid)
        return details if isinstance(details, Mapping) else {}

    async def pipelines(self, **filters: Any) -> list[Mapping[str, Any]]:
        found = await self._call("gitlab_list_pipelines", **filters)
        return [p for p in found if isinstance(p, Mapping)] if isinstance(found, list) else []

    async def jobs(self, pipeline: Mapping[str, Any], fresh: bool = False, scope: str = "") -> Listed:
        """Every attempt of the pipeline's jobs (`scope`: in that state only), oldest first, and why the list is not
        whole when it is not; a finished pipeline's whole list comes from the cache unless `fresh` (the analysed
        pipeline: a retry may have run since)."""
        # A retried job updates its pipeline: a list read before the retry is not this one.
        key = (self._project, int(pipeline["id"]), scope, str(pipeline.get("updated_at") or ""))
        if not fresh and key in self._cache.jobs:
            return Listed(list(self._cache.jobs[key]))
        if not scope and (shown := await self._shown_whole(pipeline)) is not None:
            return self._keep(pipeline, key, shown)
        found = await self._call("gitlab_get_pipeline_jobs", pipeline_id=int(pipeline["id"]),
                                 max_jobs=self.limits.max_jobs_per_pipeline, **({"scope": scope} if scope else {}))
        if isinstance(found, Unread):
            return Listed([], f"the jobs of pipeline {pipeline['id']} could not be read: {found.reason}")
        listed = found.content if isinstance(found, ToolResult) else found
        jobs = [j for j in listed if isinstance(j, Mapping)] if isinstance(listed, list) else []
        if isinstance(found, ToolResult) and found.truncated:
            total = found.metadata.get("total")
            problem = (f"the jobs of pipeline {pipeline['id']} were listed only up to {len(jobs)} attempts"
                       + (f" of {total}" if total else "") + " (GitLab lists the newest first)")
            self._gap(problem)
            return Listed(jobs, problem)
        return self._keep(pipeline, key, jobs)

    def _keep(self, pipeline: Mapping[str, Any], key: tuple[str, int, str, str], jobs: list[Job]) -> Listed:
        """A whole list, kept for later triages once its pipeline is finished."""
        if pipeline.get("status") in FINISHED:
            self._cache.jobs.put(key, tuple(jobs))
        return Listed(jobs)

    async def _shown_whole(self, pipeline: Mapping[str, Any]) -> list[Job] | None:
        """The pipeline's jobs when the page of the project's newest jobs shows all of them and no more than a list
        of its own would (`max_jobs_per_pipeline`: a longer one is read on its own, to be cut as GitLab cuts it)."""
        shown = (await self._recent_jobs()).whole(pipeline)
        return shown if shown is not None and len(shown) <= self.limits.max_jobs_per_pipeline else None

    async def _recent_jobs(self) -> RecentJobs:
        """The page of the project's newest jobs, read once a triage (at its first job list: it is as fresh as that
        list), when the budget leaves room for it and another call; a page not read shows no pipeline whole."""
        if self._recent is None:
            self._recent = RecentJobs()
            if self.calls + 2 <= self.limits.max_calls:
                page = {"per_page": budgets.TRIAGE_RECENT_JOBS}
                found = await self._read("gitlab_list_project_jobs", page, quiet=True)
                if isinstance(found, ToolResult) and isinstance(found.content, list):
                    self._recent = recent_jobs(found.content, bool(found.truncated))
        return self._recent

    async def bridges(self, pipeline: Mapping[str, Any]) -> list[Job] | Unread:
        """The pipeline's trigger jobs with their downstream pipelines; `Unread` when not read whole."""
        found = await self._call("gitlab_get_pipeline_bridges", pipeline_id=int(pipeline["id"]))
        if isinstance(found, Unread):
            return found
        listed = found.content if isinstance(found, ToolResult) else found
        if isinstance(found, ToolResult) and found.truncated:
            return Unread(f"the list of its trigger jobs was cut at {len(listed)}")
        return [b for b in listed if isinstance(b, Mapping)] if isinstance(listed, list) else Unread("no list")

    async def report(self, pipeline: Mapping[str, Any], suites: frozenset[str], fresh: bool = False) -> Report | Unread:
        """These suites of the pipeline's unit test report (bounded: a cut is kept as a gap and on the report); a
        finished pipeline's comes from the cache unless `fresh` (the analysed pipeline: a retry may have run since)."""
        key = (self._project, int(pipeline["id"]), suites)
        if not fresh and key in self._cache.reports:
            return self._cache.reports[key]
        found = await self._call("gitlab_get_pipeline_test_report", pipeline_id=int(pipeline["id"]),
                                 suites=sorted(suites), max_cases=self.limits.max_report_cases,
                                 max_bytes=self.limits.max_report_bytes)
        if not isinstance(found, Mapping):
            return found if isinstance(found, Unread) else Unread("GitLab returned no test report")
        report = report_of(pipeline, found)
        self.report_bytes += report.bytes_read
        if report.cut:
            self._gap(f"the test report of pipeline {pipeline['id']} is not whole: {report.cut}")
        elif pipeline.get("status") in FINISHED:
            self._cache.reports.put(key, report)
        return report

    async def statuses(self, sha: str) -> tuple[list[Mapping[str, Any]], str]:
        """The commit's statuses, and why the list is not whole when it is not."""
        output = await self._call("gitlab_get_commit_statuses", sha=sha)
        chunks = _chunks(output)
        if chunks is None:
            why = output.reason if isinstance(output, Unread) else "GitLab returned no list"
            return [], f"the commit's statuses could not be read: {why}"
        budget = _Budget(budgets.TRIAGE_MAX_STATUS_BYTES)
        text = await asyncio.to_thread(lambda: b"".join(budget.take(chunks)))
        lines = text.decode("utf-8", "replace").splitlines()
        found = [json.loads(line) for line in lines[:-1 if budget.cut else None] if line.strip()]
        if budget.cut:
            problem = f"the commit's statuses were read only up to {budgets.TRIAGE_MAX_STATUS_BYTES // 2**20} MiB"
            self._gap(problem)
            return found, problem
        return found, ""

    async def log(self, job: Job, passing: Job | None = None) -> LogEvidence | Unread:
        """The failure excerpt of a finished job's log (shown against `passing`'s log when given) and its
        fingerprint (always from the log alone, so every run's fingerprint compares); `Unread` when the log was
        not read (erased, empty, refused, over budget: the gap is kept)."""
        if job.get("erased_at"):
            self._gap(f"the log of job {job.get('name')} ({job['id']}) is erased")
            return Unread("GitLab reports its log erased")
        key = (self._project, int(job["id"]), int(passing["id"]) if passing else 0)
        if key in self._cache.logs:
            return self._cache.logs[key]
        with tempfile.TemporaryDirectory(prefix="triage-") as scratch:
            failing = await self._spool(job, Path(scratch, "failing.log"))
            if isinstance(failing, Unread):
                return failing
            reference = await self._spool(passing, Path(scratch, "passing.log")) if passing else None
            evidence = await asyncio.to_thread(
                evidence_of, failing.path, reference.path if isinstance(reference, _Spooled) else None)
            evidence = replace(evidence, cut=failing.cut)
        self._cache.logs.put(key, evidence)
        return evidence

    async def _spool(self, job: Job, path: Path) -> _Spooled | Unread:
        """The job's log written to `path` within the byte budgets, or why it was not."""
        room = self.limits.max_log_bytes - self.log_bytes
        if room <= 0:
            spent = f"the triage's budget of {_mib(self.limits.max_log_bytes)} of logs ran out"
            self._gap(spent)
            return Unread(spent)
        output = await self._call("gitlab_get_job_log", job_id=int(job["id"]))
        chunks = _chunks(output)
        if chunks is None:
            return output if isinstance(output, Unread) else Unread("GitLab returned no log")
        budget = _Budget(min(room, self.limits.max_one_log_bytes))
        await asyncio.to_thread(_write, budget.take(chunks), path)
        self.log_bytes += budget.read
        if budget.read == 0:
            self._gap(f"the log of job {job.get('name')} ({job['id']}) is empty")
            return Unread("its log is empty")
        if budget.cut:
            self._gap(f"the log of job {job.get('name')} ({job['id']}) was read only up to {_mib(budget.limit)}")
        return _Spooled(path, budget.cut)


@dataclass(frozen=True, slots=True)
class _Spooled:
    path: Path
    cut: bool


def _mib(size: int) -> str:
    return f"{size / 2**20:g} MiB"


def _chunks(output: Any) -> Iterable[bytes] | None:
    """The byte chunks of a streamed tool output (the GitLab tools stream synchronously)."""
    if isinstance(output, StreamingResponse) and isinstance(output.chunks, Iterable):
        return output.chunks
    return None


def _write(chunks: Iterable[bytes], path: Path) -> None:
    with path.open("wb") as handle:
        for chunk in chunks:
            handle.write(chunk)
