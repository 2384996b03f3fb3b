"""Engines by composition: each order goes to the executor of its workflow's `engine`; the agent engine
adds the knowledge tools for projects that enable them and cites what they returned."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from hummingbird_agent.agent.run import SourceRegistrar
from hummingbird_agent.bamboo.diagnose import knowledge_tools
from hummingbird_agent.bamboo.diagnose.citations import Citations
from hummingbird_agent.bamboo.stores.base import Stores
from hummingbird_agent.bamboo.stores.scoped import Scope
from hummingbird_agent.config.loading import LoadedConfig
from hummingbird_agent.errors import PermanentError
from hummingbird_agent.metrics import Metrics
from hummingbird_agent.models.base import Model
from hummingbird_agent.runner.agent_executor import AgentExecutor
from hummingbird_agent.runner.executor import Executor, Publish, SaveSession
from hummingbird_agent.runner.rules import project_settings
from hummingbird_agent.runner.triage_step import TriageService
from hummingbird_agent.runner.work_order import WorkOrder
from hummingbird_agent.sandbox.base import Sandbox
from hummingbird_agent.sessions.base import StoredSession
from hummingbird_agent.tools.registry import ToolRegistry


class EngineExecutor:
    """Dispatches on the order's workflow engine; an engine that is not running (bamboo disabled) is an error."""

    def __init__(self, loaded: LoadedConfig, engines: Mapping[str, Executor]) -> None:
        self._loaded, self._engines = loaded, dict(engines)

    async def run(self, order: WorkOrder, resume: StoredSession | None, publish: Publish, save: SaveSession) -> None:
        workflow = self._loaded.config.workflows.get(order.workflow)
        engine = workflow.engine if workflow is not None else "agent"
        executor = self._engines.get(engine)
        if executor is None:
            raise PermanentError(f"workflow {order.workflow} runs on the knowledge base, which is not enabled "
                                 "(bamboo.enabled)")
        await executor.run(order, resume, publish, save)


class KnowledgeAgentExecutor:
    """The agent engine; with `stores`, projects whose settings have knowledge_tools also get the knowledge
    tools, and their note ends with the past incidents those tools returned."""

    def __init__(self, loaded: LoadedConfig, model: Model, sandbox_factory: Callable[[str], Sandbox],
                 register_sources: SourceRegistrar, redact: Callable[[str], str] = str,
                 stores: Stores | None = None, metrics: Metrics | None = None,
                 triage: TriageService | None = None) -> None:
        self._loaded, self._model, self._sandboxes = loaded, model, sandbox_factory
        self._register_sources, self._redact, self._stores = register_sources, redact, stores
        self._metrics, self._triage = metrics, triage

    def _enabled(self, order: WorkOrder) -> bool:
        workflow = self._loaded.config.workflows.get(order.workflow)
        settings = project_settings(workflow, order.project) if workflow is not None else None
        return self._stores is not None and settings is not None and settings.knowledge_tools

    async def run(self, order: WorkOrder, resume: StoredSession | None, publish: Publish, save: SaveSession) -> None:
        if not self._enabled(order) or self._stores is None:
            agent = AgentExecutor(self._loaded, self._model, self._sandboxes, self._register_sources, self._redact,
                                  metrics=self._metrics, triage=self._triage)
            await agent.run(order, resume, publish, save)
            return
        stores, citations = self._stores, Citations(self._loaded.config.gitlab.url)

        def sources(registry: ToolRegistry, loaded: LoadedConfig, workflow: str, project: str) -> Sequence[str]:
            gaps = self._register_sources(registry, loaded, workflow, project)
            scope = Scope.of(project, loaded.config.bamboo.share_groups)  # the order's project, never the model's
            knowledge_tools.register(registry, stores, scope, citations.wrap)
            return tuple(gaps or ())

        agent = AgentExecutor(self._loaded, self._model, self._sandboxes, sources, self._redact, citations.footer,
                              self._metrics, self._triage)
        await agent.run(order, resume, publish, save)
