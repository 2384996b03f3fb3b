"""An investigation's parts for one turn: the planner, the started explorer (catalogue, sandbox, MCP
servers) and the stores, opened for the turn and closed after it (a session spans hours of human replies)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

from hummingbird_agent.bamboo.explore.session import ConfiguredEnricher
from hummingbird_agent.bamboo.investigate.engine import Checkpoint, Investigator
from hummingbird_agent.bamboo.investigate.planner import Planner
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.stores.base import Stores
from hummingbird_agent.bamboo.stores.scoped import scoped
from hummingbird_agent.bamboo.strategies.base import IncidentInput


class InvestigationKit:
    """Built once from config (no I/O); `investigator(...)` opens what one turn needs."""

    def __init__(self, llm: JsonLLM, explorer: ConfiguredEnricher, stores: Stores, guidance: str = "",
                 auto_run_read_only: bool = True, other_approver: bool = False) -> None:
        self.llm, self.explorer, self.stores = llm, explorer, stores
        self.guidance, self.auto_run_read_only, self.other_approver = guidance, auto_run_read_only, other_approver

    @contextlib.asynccontextmanager
    async def investigator(self, task: Mapping[str, Any], checkpoint: Checkpoint) -> AsyncIterator[Investigator]:
        async with self.explorer.session(IncidentInput("", dict(task))) as enricher:
            planner = Planner(self.llm, enricher.selector, enricher.bounds, self.guidance)
            # The turn reads (the finalize preview) as the investigation's project may; writes go through as they are.
            stores = scoped(self.stores, self.explorer.scope(str(task.get("project") or "")))
            yield Investigator(planner, enricher, stores, self.explorer, checkpoint, self.auto_run_read_only,
                               other_approver=self.other_approver)
