"""The triage in the service: computed once per analysed pipeline (the runner's outage guard and the agent's
first message share it), the outage guard's answer, and the commit status merge rules read."""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

from hummingbird_agent import budgets
from hummingbird_agent.agent.run import RunDeps, RunRequest
from hummingbird_agent.config.loading import LoadedConfig
from hummingbird_agent.config.triage import TriageConfig
from hummingbird_agent.data_sources.direct import ReadTools
from hummingbird_agent.errors import AgentError
from hummingbird_agent.gitlab import note_text
from hummingbird_agent.gitlab.client import GitLabClient
from hummingbird_agent.gitlab.statuses import set_status
from hummingbird_agent.metrics import Metrics
from hummingbird_agent.runner.outage import OutageGuard
from hummingbird_agent.runner.work_order import WorkOrder
from hummingbird_agent.triage.broken_issue import IssueMeta
from hummingbird_agent.triage.culprit_fix import passing_again
from hummingbird_agent.triage.culprit_model import Change, RunRef
from hummingbird_agent.triage.culprit_text import culprit_plain
from hummingbird_agent.triage.model import KnownCauses, Triage
from hummingbird_agent.triage.reader import TriageCache, TriageReader
from hummingbird_agent.triage.render import for_model, headline, section
from hummingbird_agent.triage.run import TriageRequest, snapshot, triage

log = logging.getLogger(__name__)
# Triages kept for the orders being run (the runner computes one, the agent's first message reads it back).
_MEMO_SIZE = 64


def starting_from(found: Triage | None, request: RunRequest, deps: RunDeps) -> tuple[RunRequest, RunDeps]:
    """The run told the verdicts (the first message's `triage`, so an answer from them is not one from no data)
    and its note starting with them."""
    if found is None:
        return request, deps
    request = replace(request, extra={**request.extra, "triage": for_model(found)}, evidence=bool(found.checks))
    return request, replace(deps, answer_prefix=section(found))


class TriageService:
    """One per service: the caches, the outage guard's memory and the knowledge base's matcher."""

    def __init__(self, loaded: LoadedConfig, known: KnownCauses | None = None, metrics: Metrics | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self._loaded, self._known, self._clock = loaded, known, clock
        self._metrics = metrics if metrics is not None else Metrics()
        self._cache, self._guard = TriageCache(), OutageGuard()
        # The triage of each order being run, and whether the commit's pipelines were still as it read them.
        self._memo: OrderedDict[str, tuple[Triage, bool]] = OrderedDict()

    def settings(self, order: WorkOrder) -> TriageConfig | None:
        """The workflow's triage settings when this order is triaged: a new run, or a status decision, of an enabled
        workflow."""
        workflow = self._loaded.config.workflows.get(order.workflow)
        if workflow is None or not workflow.triage.enabled or order.kind not in ("new_session", "decide_status"):
            return None
        return workflow.triage

    async def for_order(self, order: WorkOrder) -> Triage | None:
        """The order's triage as `decide` computed it for this event (computed now when it did not)."""
        if self.settings(order) is None:
            return None
        if (found := self._memo.get(order.session_id)) is not None:
            return found[0]
        return await self._fresh(order)

    async def decide(self, gitlab: GitLabClient, order: WorkOrder) -> Triage | None:
        """A fresh triage for this event (never an earlier event's: a retry may have changed the commit), its
        commit status `pending` while it reads; read again while the commit's pipelines change under it (then the
        status stays pending: their own events decide). A triage that fails leaves the status `failed`."""
        settings = self.settings(order)
        if settings is None:
            return None
        await self._set(gitlab, order, "pending", "reading the commit's checks", "")
        found: Triage | None = None
        for _ in range(budgets.TRIAGE_STABLE_READS):
            found = await self._fresh(order)
            if found is None or await self._still(order, found):
                return self._keep(order, found, stable=True)
        return self._keep(order, found, stable=False)

    def amend(self, order: WorkOrder, found: Triage | None) -> Triage | None:
        """This order's triage replaced by `found` (the same verdicts with more said on them), as stable as before."""
        stable = self._memo.get(order.session_id, (found, True))[1]
        return self._keep(order, found, stable)

    async def _fresh(self, order: WorkOrder) -> Triage | None:
        found = await self.compute(order.workflow, order.project, order.mr_iid, order.sha or "", order.pipeline_id)
        return self._keep(order, found, stable=True)

    def _keep(self, order: WorkOrder, found: Triage | None, stable: bool) -> Triage | None:
        if found is None:
            self._memo.pop(order.session_id, None)
            return None
        self._memo[order.session_id] = (found, stable)
        self._memo.move_to_end(order.session_id)
        while len(self._memo) > _MEMO_SIZE:
            self._memo.popitem(last=False)
        return found

    async def _still(self, order: WorkOrder, found: Triage) -> bool:
        """Whether the commit's pipelines are as the triage read them (none started, retried or finished since)."""
        if not found.sha:
            return True
        reader = TriageReader(ReadTools.declared(self._loaded, order.workflow, order.project), order.project,
                              self._cache)
        now = await reader.pipelines(sha=found.sha, limit=budgets.TRIAGE_SHA_PIPELINES + 1)
        return not reader.gaps and snapshot(now) == found.snapshot

    async def compute(self, workflow: str, project: str, mr_iid: int, sha: str = "",
                      pipeline_id: int | None = None) -> Triage | None:
        """A fresh triage of the MR's failed pipeline (`sha`: the analysed commit, else the MR's head), or None
        when the workflow has none or it failed (the model then runs without it)."""
        wf = self._loaded.config.workflows.get(workflow)
        if wf is None or not wf.triage.enabled:
            return None
        settings = wf.triage
        reader = TriageReader(ReadTools.declared(self._loaded, workflow, project), project, self._cache)
        request = TriageRequest(project, mr_iid, datetime.fromtimestamp(self._clock(), UTC), sha=sha,
                                pipeline_id=pipeline_id, lookback_pipelines=settings.lookback_pipelines,
                                lookback_days=settings.lookback_days, culprit=settings.culprit,
                                ignore_statuses=frozenset({settings.commit_status} if settings.commit_status else ()))
        try:
            found = await triage(reader, request, self._known)
        except AgentError as exc:
            log.warning("triage failed; the model runs without it: %s", exc)
            return None
        for check in found.checks:
            self._metrics.triage_checks.labels(workflow, check.verdict.value).inc()
        log.info("triage: %s (%d GitLab calls, %d log bytes)", headline(found), found.calls, found.log_bytes)
        return found

    async def fixed(self, workflow: str, project: str, meta: IssueMeta) -> tuple[RunRef, Change | None] | None:
        """Where the branch of a tracked break passes its job again (read with the workflow's read tools)."""
        reader = TriageReader(ReadTools.declared(self._loaded, workflow, project), project, self._cache)
        return await passing_again(reader.fork(budgets.CULPRIT_MAX_CALLS), meta)

    def earlier_diagnosis(self, order: WorkOrder, found: Triage, link: str) -> str | None:
        """The link of the first diagnosis of this failure when the outage guard answers this order."""
        settings = self.settings(order)
        if settings is None or not settings.outage.enabled or not order.automatic:
            return None
        key = self._guard.key(order.project, found)
        if key is None:
            return None
        first = self._guard.claim(key, order.mr_iid, link, self._clock(), settings.outage.min_mrs,
                                  settings.outage.window_minutes * 60)
        if first is not None:
            self._metrics.outage_guard.labels(order.workflow).inc()
        return first

    async def publish_status(self, gitlab: GitLabClient, order: WorkOrder, found: Triage | None, link: str) -> None:
        """The workflow's commit status on the analysed commit, when it names one: the triage's state, `pending`
        while the commit's pipelines changed under it, `failed` when it could not run (failures to post are
        logged: the note says everything the status would)."""
        settings = self.settings(order)
        if settings is None or not settings.commit_status:
            return
        if found is None:
            await self._set(gitlab, order, "failed", "the triage could not run: no verdict, so no green", link)
        elif not self._memo.get(order.session_id, (found, True))[1]:
            await self._set(gitlab, order, "pending", "the commit's pipelines changed while the triage read them; "
                            "their own events decide", link)
        else:
            await self._set(gitlab, order, found.status, summary(found), link, found.sha)

    async def _set(self, gitlab: GitLabClient, order: WorkOrder, state: str, text: str, link: str,
                   sha: str = "") -> None:
        settings = self.settings(order)
        sha = sha or order.sha or ""
        if settings is None or not settings.commit_status or not sha:
            return
        try:
            await set_status(gitlab, order.project_id, sha, name=settings.commit_status, state=state,
                             target_url=link or self._pipeline_url(order), description=f"Hummingbird triage: {text}")
        except AgentError as exc:
            log.warning("commit status %s not set: %s", settings.commit_status, exc)

    def _pipeline_url(self, order: WorkOrder) -> str:
        url = self._loaded.config.gitlab.url
        if order.pipeline_id:
            return note_text.pipeline_url(url, order.project, order.pipeline_id)
        return note_text.mr_url(url, order.project, order.mr_iid)


def summary(found: Triage) -> str:
    """What the status covers, as merge rules and their readers see it: every item of the commit counted."""
    counts = found.counts()
    parts = [f"{found.passed} passed"] if found.passed else []
    parts += [f"{n} {verdict.value}" for verdict, n in counts.items()]
    parts += [f"{found.optional} allowed to fail or not required"] if found.optional else []
    parts += [f"{len(found.running)} still running"] if found.running else []
    parts += [f"{found.omitted} not listed"] if found.omitted else []
    parts += ["some lists not read whole"] if found.unlisted else []
    total = found.passed + len(found.checks) + found.optional + found.omitted
    culprit = next((culprit_plain(c.culprit) for c in found.checks if c.culprit and not c.culprit.flaky), "")
    said = f"{total} checks: " + ", ".join(parts) if parts else "no check found on this commit"
    return f"{said}; {culprit}" if culprit else said
