"""The culprit of a failure the target branch already has: the first of its pipelines whose run of the job failed
the same way (the triage's own comparison of logs, not a name match) and the run before it, found by bisection, so
the reads grow with the logarithm of the pipelines searched; then the commits between the two runs and the merge
requests that brought them in (`culprit_range`). Within its own call budget; a budget spent is said."""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.triage.compare import same_failure
from hummingbird_agent.triage.culprit_model import Culprit, RunRef
from hummingbird_agent.triage.culprit_range import range_of
from hummingbird_agent.triage.evidence import by_name
from hummingbird_agent.triage.excerpt import LogEvidence
from hummingbird_agent.triage.reader import Job, TriageReader, Unread

Pipeline = Mapping[str, Any]
# Pipelines whose job lists tell: a canceled or skipped one may not have run the job (a probe says so).
_DONE = ("success", "failed")


@dataclass(frozen=True, slots=True)
class Suspect:
    """Where a search starts: the job's name, a failing run of it (its pipeline and job) whose failure is the MR's
    (the run the verdict named), and whether it hung (compared then by whole logs)."""

    name: str
    pipeline: Pipeline
    job: Job
    hung: bool = False


class Outcome(enum.Enum):
    """A run of the job: good (it passed), bad (it failed this way), or unknown (it failed another way, which may
    hide this failure behind it; it did not run or finish there; its log was not read): the range widens across an
    unknown run, never past it."""

    GOOD, BAD, UNKNOWN = "good", "bad", "unknown"


async def narrow(count: int, probe: Callable[[int], Awaitable[Outcome]],
                 spent: Callable[[], bool]) -> tuple[int, int, bool]:
    """Bisection over runs 0..count-1 (oldest first; the last is known bad): the newest good run below the oldest
    bad one (-1: none found) and that bad one; True when `spent` stopped it first. Unknown runs are stepped over."""
    lo, hi, unknown = -1, count - 1, set[int]()
    while open_ := [i for i in range(lo + 1, hi) if i not in unknown]:
        if spent():
            return lo, hi, True
        mid = open_[len(open_) // 2]
        outcome = await probe(mid)
        if outcome is Outcome.BAD:
            hi = mid
        elif outcome is Outcome.GOOD:
            lo = mid
        else:
            unknown.add(mid)
    return lo, hi, False


async def find_culprit(reader: TriageReader, project: str, branch: str, now: str,
                       suspect: Suspect) -> Culprit | None:
    """The culprit of the suspect's failure on `branch` (cached per project, branch, failing run and job: every MR
    blocked by one break asks the same question); None when the branch has no earlier pipeline to search."""
    key = ("culprit", project, branch, int(suspect.job.get("id") or 0), suspect.name)
    return await cached_search(reader, key, now, lambda search: _Search(search, project, branch, suspect).run(now))


async def cached_search(reader: TriageReader, key: tuple[Any, ...], now: str,
                        search: Callable[[TriageReader], Awaitable[Culprit | None]]) -> Culprit | None:
    """The cached answer for `key`, else `search`'s with a reader of its own budget (`limits.culprit_calls`); an
    answer with a gap is not kept (a later search may read what this one could not)."""
    if (cached := reader.cache.culprits.get(key)) is not None:
        return replace(cached, now=now, calls=0)
    forked = reader.fork(reader.limits.culprit_calls)
    found = await search(forked)
    if found is None:
        return None
    found = replace(found, calls=forked.calls)
    if not found.gap:
        reader.cache.culprits.put(key, found)
    return found


def spent(reader: TriageReader, probe_calls: int) -> Callable[[], bool]:
    """Whether another probe of `probe_calls` calls would take what the range needs."""
    reserve = budgets.CULPRIT_RANGE_CALLS + probe_calls
    return lambda: reader.calls + reserve > reader.limits.max_calls


def unsearched(reader: TriageReader, lo: int, hi: int) -> str:
    return (f"the search's budget of {reader.limits.max_calls} GitLab calls ran out with {hi - lo - 1} pipelines "
            "between the two runs unsearched")


async def branch_window(reader: TriageReader, branch: str, failing: Pipeline) -> tuple[list[Pipeline], str]:
    """The target branch's finished pipelines older than the failing run's, oldest first, up to
    CULPRIT_MAX_PIPELINES, then the failing run's; and why the list is not whole when it is not."""
    anchor, older, problem = int(failing.get("id") or 0), list[Pipeline](), ""
    for page in range(1, budgets.CULPRIT_MAX_PAGES + 1):
        before = len(reader.gaps)
        listed = await reader.pipelines(ref=branch, limit=100, page=page)
        if len(reader.gaps) > before:
            problem = f"the pipelines of `{branch}` were not listed whole: {reader.gaps[-1]}"
            break
        older += [p for p in listed if int(p.get("id") or 0) < anchor and p.get("status") in _DONE]
        if len(older) >= budgets.CULPRIT_MAX_PIPELINES or len(listed) < 100:
            break
    older.sort(key=lambda p: int(p.get("id") or 0))
    return [*older[-budgets.CULPRIT_MAX_PIPELINES:], failing], problem


def failure_key(branch: str, name: str, evidence: LogEvidence) -> str:
    """The failure's identity on its branch: the job and its fingerprint (or, for a failure too generic to name,
    its whole log's digest)."""
    said = "\n".join(evidence.fingerprint.lines) or evidence.digest
    return hashlib.sha1(f"{branch}\n{name}\n{said}".encode()).hexdigest()[:16]


def run_ref(pipeline: Pipeline, job: Job | None) -> RunRef:
    return RunRef(int(pipeline.get("id") or 0), str(pipeline.get("sha") or ""), str(pipeline.get("web_url") or ""),
                  str((job or {}).get("web_url") or ""))


class _Search:
    def __init__(self, reader: TriageReader, project: str, branch: str, suspect: Suspect) -> None:
        self._reader, self._project, self._branch, self._suspect = reader, project, branch, suspect
        self._runs: dict[int, tuple[Outcome, Job | None]] = {}
        self._mine: LogEvidence | None = None

    async def run(self, now: str) -> Culprit | None:
        suspect = self._suspect
        head = Culprit(self._branch, suspect.name, run_ref(suspect.pipeline, suspect.job), now=now)
        mine = await self._reader.log(suspect.job)
        if isinstance(mine, Unread):
            return replace(head, gap=f"the failing run's log was not read: {mine.reason}")
        self._mine, head = mine, replace(head, key=failure_key(self._branch, suspect.name, mine))
        window, problem = await branch_window(self._reader, self._branch, suspect.pipeline)
        if len(window) == 1 and not problem:
            return None
        # A probe takes a job list and a log at most.
        lo, hi, stopped = await narrow(len(window), lambda i: self._probe(window[i]), spent(self._reader, 2))
        bad = window[hi]
        head = replace(head, first_bad=run_ref(bad, self._runs.get(int(bad["id"]), (None, suspect.job))[1]),
                       searched=len(window), probes=len(self._runs))
        gap = unsearched(self._reader, lo, hi) if stopped else problem
        if lo < 0:
            return replace(head, gap=gap)
        good = run_ref(window[lo], self._runs[int(window[lo]["id"])][1])
        return await range_of(self._reader, self._project, replace(head, last_good=good, gap=gap))

    async def _probe(self, pipeline: Pipeline) -> Outcome:
        outcome, job = await self._outcome(pipeline)
        self._runs[int(pipeline["id"])] = (outcome, job)
        return outcome

    async def _outcome(self, pipeline: Pipeline) -> tuple[Outcome, Job | None]:
        """The job's latest attempt in the pipeline: passed (good), failed this way (bad), or nothing to tell."""
        attempts: Sequence[Job] = by_name((await self._reader.jobs(pipeline)).jobs).get(self._suspect.name, [])
        last = attempts[-1] if attempts else None
        if last is None or last.get("allow_failure"):
            return Outcome.UNKNOWN, last
        if last.get("status") == "success":
            return Outcome.GOOD, last
        if last.get("status") != "failed" or self._mine is None:
            return Outcome.UNKNOWN, last
        theirs = await self._reader.log(last)
        if isinstance(theirs, Unread):
            return Outcome.UNKNOWN, last
        return (Outcome.BAD if same_failure(self._mine, theirs, self._suspect.hung) else Outcome.UNKNOWN), last
