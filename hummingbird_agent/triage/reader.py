"""GitLab as the triage reads it: through the workflow's read tools, within a call and byte budget, with
finished pipelines' job lists and finished logs' excerpts cached across triages."""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.data_sources.direct import ReadTools
from hummingbird_agent.logs import excerpt_lines
from hummingbird_agent.logs.fingerprint import Fingerprint, Survey, fingerprint, survey
from hummingbird_agent.logs.tail import LogTail
from hummingbird_agent.tools.base import StreamingResponse

Job = Mapping[str, Any]
# Pipeline states after which a pipeline's jobs no longer change (except by a retry, see reader.jobs).
FINISHED = frozenset({"success", "failed", "canceled", "skipped"})


@dataclass(frozen=True, slots=True)
class LogEvidence:
    """A job log's failure excerpt and fingerprint."""

    excerpt: tuple[str, ...]
    fingerprint: Fingerprint
    tail: str = ""
    """The log's last lines (`LogTail`): what the knowledge base compares whole logs by."""


class _Lru(OrderedDict[Any, Any]):
    def __init__(self, size: int) -> None:
        super().__init__()
        self._size = size

    def put(self, key: Any, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self._size:
            self.popitem(last=False)


class TriageCache:
    """Kept by the service between triages: job lists of finished pipelines, evidence of finished logs."""

    def __init__(self) -> None:
        self.jobs = _Lru(budgets.TRIAGE_CACHE_PIPELINES)
        self.logs = _Lru(budgets.TRIAGE_CACHE_LOGS)


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

    def __init__(self, tools: ReadTools, project: str, cache: TriageCache) -> None:
        self._tools, self._project, self._cache = tools, project, cache
        self.calls = 0
        self.log_bytes = 0
        self.gaps: list[str] = []

    def _gap(self, text: str) -> None:
        if text not in self.gaps:
            self.gaps.append(text)

    @property
    def exhausted(self) -> bool:
        """Whether the call budget is spent (the gap saying so is then kept)."""
        if self.calls < budgets.TRIAGE_MAX_CALLS:
            return False
        self._gap(f"the triage's budget of {budgets.TRIAGE_MAX_CALLS} GitLab calls ran out; later checks were "
                  "classified from what was already read")
        return True

    async def _call(self, tool: str, **args: Any) -> Any:
        if self.exhausted:
            return None
        self.calls += 1
        before = len(self._tools.gaps)
        output = await self._tools.call(tool, project=self._project, **args)
        for gap in self._tools.gaps[before:]:
            self._gap(gap)
        return output

    async def mr(self, iid: int) -> Mapping[str, Any]:
        details = await self._call("gitlab_get_mr_details", mr_iid=iid)
        return details if isinstance(details, Mapping) else {}

    async def pipelines(self, **filters: Any) -> list[Mapping[str, Any]]:
        found = await self._call("gitlab_list_pipelines", **filters)
        return [p for p in found if isinstance(p, Mapping)] if isinstance(found, list) else []

    async def jobs(self, pipeline: Mapping[str, Any], fresh: bool = False) -> list[Job]:
        """Every attempt of the pipeline's jobs, oldest first; a finished pipeline's list comes from the cache
        unless `fresh` (the analysed pipeline: a retry may have run since)."""
        key = (self._project, int(pipeline["id"]))
        if not fresh and key in self._cache.jobs:
            return list(self._cache.jobs[key])
        found = await self._call("gitlab_get_pipeline_jobs", pipeline_id=int(pipeline["id"]))
        jobs = [j for j in found if isinstance(j, Mapping)] if isinstance(found, list) else []
        if isinstance(found, list) and pipeline.get("status") in FINISHED:
            self._cache.jobs.put(key, tuple(jobs))
        return jobs

    async def statuses(self, sha: str) -> list[Mapping[str, Any]]:
        chunks = _chunks(await self._call("gitlab_get_commit_statuses", sha=sha))
        if chunks is None:
            return []
        budget = _Budget(budgets.TRIAGE_MAX_STATUS_BYTES)
        text = await asyncio.to_thread(lambda: b"".join(budget.take(chunks)))
        if budget.cut:
            self._gap(f"the commit's statuses were read only up to {budgets.TRIAGE_MAX_STATUS_BYTES // 2**20} MiB")
        lines = text.decode("utf-8", "replace").splitlines()
        return [json.loads(line) for line in lines[:-1 if budget.cut else None] if line.strip()]

    async def log(self, job: Job, passing: Job | None = None) -> LogEvidence | None:
        """The failure excerpt of a finished job's log (shown against `passing`'s log when given) and its
        fingerprint (always from the log alone, so every run's fingerprint compares); None when the log
        cannot be read (expired, erased, empty, over budget: the gap is kept)."""
        key = (self._project, int(job["id"]), int(passing["id"]) if passing else 0)
        if key in self._cache.logs:
            return self._cache.logs[key]
        with tempfile.TemporaryDirectory(prefix="triage-") as scratch:
            failing = await self._spool(job, Path(scratch, "failing.log"))
            if failing is None:
                return None
            reference = await self._spool(passing, Path(scratch, "passing.log")) if passing else None
            evidence = await asyncio.to_thread(_evidence, failing, reference)
        self._cache.logs.put(key, evidence)
        return evidence

    async def _spool(self, job: Job, path: Path) -> Path | None:
        """The job's log written to `path` within the byte budgets; None when unreadable or empty."""
        room = budgets.TRIAGE_MAX_LOG_BYTES - self.log_bytes
        if room <= 0:
            self._gap(f"the triage's budget of {budgets.TRIAGE_MAX_LOG_BYTES // 2**20} MiB of logs ran out")
            return None
        chunks = _chunks(await self._call("gitlab_get_job_log", job_id=int(job["id"])))
        if chunks is None:
            return None
        budget = _Budget(min(room, budgets.TRIAGE_MAX_ONE_LOG_BYTES))
        await asyncio.to_thread(_write, budget.take(chunks), path)
        self.log_bytes += budget.read
        if budget.read == 0:
            self._gap(f"the log of job {job.get('name')} ({job['id']}) is empty")
            return None
        if budget.cut:
            self._gap(f"the log of job {job.get('name')} ({job['id']}) was read only up to "
                      f"{budget.limit // 2**20} MiB")
        return path


def _chunks(output: Any) -> Iterable[bytes] | None:
    """The byte chunks of a streamed tool output (the GitLab tools stream synchronously)."""
    if isinstance(output, StreamingResponse) and isinstance(output.chunks, Iterable):
        return output.chunks
    return None


def _write(chunks: Iterable[bytes], path: Path) -> None:
    with path.open("wb") as handle:
        for chunk in chunks:
            handle.write(chunk)


def _evidence(failing: Path, passing: Path | None) -> LogEvidence:
    """Blocking: the fingerprint from the log alone (its excerpt, and its failure lines, failing tests and
    diagnostics anywhere), the shown excerpt against the passing log when given."""
    alone = tuple(line for _, line in excerpt_lines(failing, max_lines=budgets.TRIAGE_EXCERPT_LINES).lines)
    shown = alone if passing is None else tuple(
        line for _, line in excerpt_lines(failing, passing=passing, max_lines=budgets.TRIAGE_EXCERPT_LINES).lines)
    tail = LogTail()
    whole = _anywhere(failing, tail)
    return LogEvidence(shown, fingerprint(alone, whole), tail.text())


def _anywhere(path: Path, tail: LogTail) -> Survey:
    """The survey of the whole log (its specific failure lines, failing tests and diagnostics); every line
    goes to `tail`."""
    def lines() -> Iterator[str]:
        with path.open("rb") as handle:
            for raw in handle:
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                tail.add(line)
                yield line[: budgets.EXCERPT_MAX_LINE_CHARS]

    return survey(lines())
