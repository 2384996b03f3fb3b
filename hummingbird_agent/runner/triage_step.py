"""The triage in the service: computed once per analysed pipeline (the runner's outage guard and the agent's
first message share it), the outage guard's answer, and the commit status merge rules read."""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

from hummingbird_agent.agent.run import RunDeps, RunRequest
from hummingbird_agent.config.loading import LoadedConfig
from hummingbird_agent.config.triage import TriageConfig
from hummingbird_agent.data_sources.direct import ReadTools
from hummingbird_agent.errors import AgentError
from hummingbird_agent.gitlab.client import GitLabClient
from hummingbird_agent.gitlab.statuses import CommitStatus, publish
from hummingbird_agent.metrics import Metrics
from hummingbird_agent.runner.outage import OutageGuard
from hummingbird_agent.runner.work_order import WorkOrder
from hummingbird_agent.triage.model import KnownCauses, Triage
from hummingbird_agent.triage.reader import TriageCache, TriageReader
from hummingbird_agent.triage.render import for_model, headline, section
from hummingbird_agent.triage.run import TriageRequest, triage

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
        self._memo: OrderedDict[str, Triage] = OrderedDict()

    def settings(self, order: WorkOrder) -> TriageConfig | None:
        """The workflow's triage settings when this order is triaged: a new run of an enabled workflow."""
        workflow = self._loaded.config.workflows.get(order.workflow)
        if workflow is None or not workflow.triage.enabled or order.kind != "new_session":
            return None
        return workflow.triage

    async def for_order(self, order: WorkOrder) -> Triage | None:
        """The order's triage (computed on first use), or None when its workflow has none or it failed."""
        settings = self.settings(order)
        if settings is None:
            return None
        if (found := self._memo.get(order.session_id)) is not None:
            return found
        found = await self.compute(order.workflow, order.project, order.mr_iid, order.sha or "", order.pipeline_id)
        if found is None:
            return None
        self._memo[order.session_id] = found
        while len(self._memo) > _MEMO_SIZE:
            self._memo.popitem(last=False)
        return found

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
                                lookback_days=settings.lookback_days,
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

    def commit_status(self, order: WorkOrder, found: Triage) -> CommitStatus | None:
        """The workflow's commit status on the analysed commit, when it names one and there is something to say."""
        settings = self.settings(order)
        if settings is None or not settings.commit_status or not found.sha or not (found.checks or found.unlisted):
            return None
        counts = found.counts()
        summary = ", ".join([f"{n} {verdict.value}" for verdict, n in counts.items()]
                            + (["some failures not listed"] if found.unlisted else []))
        return CommitStatus(found.sha, settings.commit_status, found.status, f"Hummingbird triage: {summary}")

    async def publish_status(self, gitlab: GitLabClient, order: WorkOrder, found: Triage, link: str) -> None:
        """The commit status (`commit_status`), when there is one, linked to `link`."""
        if (wanted := self.commit_status(order, found)) is not None:
            await publish(gitlab, order.project_id, wanted, link)
