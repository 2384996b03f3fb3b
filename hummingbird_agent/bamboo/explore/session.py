"""The configured explorer: a ContextEnricher opened for one exploration (sandbox factory started, MCP
client connected, stored procedures read) and closed after it, so the synchronous builders of the CLI
and the service need no lifecycle hooks and new procedures become tools without a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.diagnose import knowledge_tools
from hummingbird_agent.bamboo.explore.enricher import ContextEnricher
from hummingbird_agent.bamboo.explore.exploration import ExplorationResult
from hummingbird_agent.bamboo.explore.prompt_fit import ToolBounds
from hummingbird_agent.bamboo.explore.tool_selection import ToolSelector, candidate_pool
from hummingbird_agent.bamboo.incident_graph import NodeType
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.learn.accumulator import Enrichment
from hummingbird_agent.bamboo.learn.reviewer import ToolInfo
from hummingbird_agent.bamboo.mcp import BuiltinMcpClient, McpClient, build_mcp_client, config_namespace
from hummingbird_agent.bamboo.stores.base import NodeRow, Stores, VectorStore
from hummingbird_agent.bamboo.stores.scoped import Scope, scoped
from hummingbird_agent.bamboo.strategies.base import IncidentInput
from hummingbird_agent.config.loading import LoadedConfig
from hummingbird_agent.data_sources import register_selected
from hummingbird_agent.errors import AgentError
from hummingbird_agent.sandbox import Sandbox, SandboxFactory
from hummingbird_agent.tools import ToolDef
from hummingbird_agent.tools.registry import ToolRegistry
from hummingbird_agent.tools.spill import Spiller

log = logging.getLogger(__name__)
TaskSummary = Callable[[IncidentInput], Mapping[str, Any]]
# The strategy's own builtin clients for one incident (the panda tools with its task dict bound in).
StrategyClients = Callable[[IncidentInput], Sequence[McpClient]]


def _forward(registry: ToolRegistry, name: str) -> Callable[..., Any]:
    async def call(**args: Any) -> Any:
        return await registry.call(name, args)

    return call


def read_only_tools(loaded: LoadedConfig, workflow: str, stores: Stores, spill_box: Sandbox,
                    project: str = "") -> list[ToolDef]:
    """The builtin tools: the data sources `workflow` declares, with `project`'s read credentials (the workflow's
    when it names none), and the knowledge queries (what `project` and its share groups learned). Every one reads
    only (data sources hold read tokens). `spill_box` is never opened: the explorer reads outputs whole (capped),
    it never spills them."""
    registry = ToolRegistry(Spiller(spill_box))
    if workflow in loaded.config.workflows:
        for gap in register_selected(registry, loaded, workflow, project):
            log.warning("explorer: %s", gap)
    knowledge_tools.register(registry, stores, Scope.of(project, loaded.config.bamboo.share_groups))
    return [ToolDef(d.name, d.description, d.parameters, _forward(registry, d.name))
            for d in registry.declarations()]


def tool_namespace(loaded: LoadedConfig) -> str:
    """The tool-selection vectors' namespace of this config (its MCP servers file and model provider)."""
    path = loaded.config.bamboo.mcp_servers_config
    return config_namespace(str(loaded.resolve(path)) if path else None, loaded.config.model.provider)


class ConfiguredEnricher:
    """Enricher (accumulator), Explorer (navigator) and ToolMemory (tool selection's first source) over
    the config. The tool-selection vectors stay open while any exploration or remember runs."""

    def __init__(self, loaded: LoadedConfig, llm: JsonLLM, stores: Stores, tool_vectors: VectorStore,
                 workflow: str, task_summary: TaskSummary, strategy_clients: StrategyClients | None = None) -> None:
        self._loaded, self._llm, self._stores, self._workflow = loaded, llm, stores, workflow
        self._summary = task_summary
        self._strategy_clients = strategy_clients
        path = loaded.config.bamboo.mcp_servers_config
        self._mcp_path = str(loaded.resolve(path)) if path else None
        self._vectors = tool_vectors
        cfg = loaded.config.bamboo
        self.selector = ToolSelector(tool_vectors, stores.embedder, tool_namespace(loaded),
                                     cfg.tool_max_full_schemas,
                                     candidate_pool(cfg.tool_max_full_schemas, cfg.tool_retrieval_candidate_k),
                                     cfg.tool_reserved_explore)
        self._lock = asyncio.Lock()
        self._users = 0
        self._seen: list[ToolInfo] = []

    def available_tools(self) -> list[ToolInfo]:
        """For the reviewer: the tools of the last exploration (external servers' appear after their first
        connect); before any, the knowledge tools and the strategy's own (the panda tools)."""
        if self._seen:
            return list(self._seen)
        extra = self._strategy_clients(IncidentInput()) if self._strategy_clients else ()
        return ([ToolInfo(t.name, t.description) for t in knowledge_tools.TOOL_DEFS]
                + [ToolInfo(t.name, t.description) for c in extra for t in c.list_tools() if t.read_only])

    async def enrich(self, incident: IncidentInput, issues: Sequence[str], doc_hints: Mapping[str, str]) -> Enrichment:
        if not issues:
            return Enrichment()
        async with self.session(incident) as enricher:
            return await enricher.enrich(incident, issues, doc_hints)

    async def explore(self, incident: IncidentInput, issues: Sequence[str], mode: str) -> ExplorationResult:
        if not issues:
            return ExplorationResult()
        async with self.session(incident) as enricher:
            return await enricher.explore(incident, issues, mode)

    async def remember(self, key: str, query: str, tools: Sequence[str], weight: float = 1.0,
                       project: str = "") -> None:
        if not await self._acquire():
            return
        try:
            await self.selector.remember(key, query, tools, weight, project)
        finally:
            await self._release()

    @contextlib.asynccontextmanager
    async def session(self, incident: IncidentInput | None = None) -> AsyncIterator[ContextEnricher]:
        """A started ContextEnricher (with the strategy's clients for `incident`); everything it opened is
        closed on leaving, in reverse order."""
        async with contextlib.AsyncExitStack() as stack:
            sandboxes = SandboxFactory(self._loaded.config.sandbox)
            await sandboxes.start()
            stack.push_async_callback(sandboxes.close)
            project = str(incident.task_data.get("project") or "") if incident is not None else ""
            scope = self.scope(project)
            selector = None
            if await self._acquire():
                stack.push_async_callback(self._release)
                selector = self.selector.scoped(scope.projects)
            builtin = BuiltinMcpClient(read_only_tools(self._loaded, self._workflow, self._stores, sandboxes.new(),
                                                       project))
            extra = self._strategy_clients(incident) if self._strategy_clients and incident else ()
            client = build_mcp_client([builtin, *extra], self._mcp_path, self._loaded.env)
            stack.push_async_callback(client.close)
            await client.connect()
            procedures = await self._procedures(scope)
            enricher = ContextEnricher(self._llm, client, sandboxes.new, selector, procedures,
                                       self._summary, await self.tool_bounds())
            await enricher.start()
            stack.push_async_callback(enricher.aclose)
            self._seen = enricher.available_tools()
            yield enricher

    def scope(self, project: str) -> Scope:
        """What a run for `project` reads: itself and its share groups (bamboo.share_groups)."""
        return Scope.of(project, self._loaded.config.bamboo.share_groups)

    async def tool_bounds(self) -> ToolBounds:
        """The tool-block bounds: bamboo.llm_context_window when set, else the window the model's server reports
        (Ollama), else TOOL_CONTEXT_WINDOW_TOKENS; the margin and full-schema cap from the config."""
        cfg = self._loaded.config.bamboo
        window = cfg.llm_context_window or await self._llm.context_window() or budgets.TOOL_CONTEXT_WINDOW_TOKENS
        return ToolBounds(window, cfg.tool_budget_margin, cfg.tool_max_full_schemas)

    async def _procedures(self, scope: Scope) -> list[NodeRow]:
        """The investigation procedures `scope`'s projects learned (their code runs as proc__ tools)."""
        try:
            return await scoped(self._stores, scope).graph.nodes(NodeType.PROCEDURE.value)
        except AgentError as exc:
            log.warning("explorer: stored procedures unavailable; no proc__ tools this time: %s", exc)
            return []

    async def _acquire(self) -> bool:
        async with self._lock:
            if self._users == 0:
                try:
                    await self._vectors.open()
                except AgentError as exc:
                    log.warning("tool selection vectors unavailable: %s", exc)
                    return False
            self._users += 1
            return True

    async def _release(self) -> None:
        async with self._lock:
            self._users -= 1
            if self._users == 0:
                await self._vectors.aclose()
