"""The extraction-strategy plugin interface and the explicit registry of strategies."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from hummingbird_agent.bamboo.incident_graph import KnowledgeGraph
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.errors import ConfigError

if TYPE_CHECKING:
    from hummingbird_agent.bamboo.panda.tools import PandaSupport


@dataclass(frozen=True, slots=True)
class IncidentInput:
    """The raw data of one incident (seed: at least one of email_text / task_data)."""

    email_text: str = ""
    task_data: Mapping[str, Any] = field(default_factory=dict)
    external_data: Mapping[str, Any] = field(default_factory=dict)
    task_logs: Mapping[str, str] = field(default_factory=dict)
    incident_id: str | None = None
    fix: Mapping[str, Any] = field(default_factory=dict)
    """What fixed it, when known: `commits`, `files`, `titles`, `diff` (a capped summary)."""
    full_logs: Mapping[str, str] = field(default_factory=dict)
    """The jobs' whole logs when `task_logs` hold only their excerpts (the whole-log vector reads these,
    else `task_logs`); never given to a model."""


class RepoFiles(Protocol):
    """Reads one repository file at a ref (read token); None when it or the source is unavailable."""

    async def read(self, project: str, path: str, ref: str) -> str | None: ...

    async def ci_config_path(self, project: str) -> str | None:
        """The project's CI config path setting ("" when unset); None when it cannot be read."""
        ...


class ExtractionStrategy(Protocol):
    """Turns one incident's data into a typed graph. `extract` with `read_only` never writes anywhere."""

    name: str

    def incident_id(self, incident: IncidentInput) -> str: ...

    def task_summary(self, incident: IncidentInput) -> dict[str, Any]: ...

    async def prefetch_hints(self, incident: IncidentInput) -> dict[str, str]:
        """Reference text for extraction read before it (fail-open: {} when nothing could be read)."""
        ...

    async def extract(self, incident: IncidentInput, doc_hints: Mapping[str, str],
                      feedback: str = "", existing: Sequence[str] = ()) -> KnowledgeGraph:
        """`existing`: prompt lines of stored causes the model may reuse by name."""
        ...


@dataclass(frozen=True, slots=True)
class StrategyDeps:
    """What a strategy may use: the LLM, the pseudonymisation salt for identity fields, repository files,
    and PanDA access and indexes (panda strategy)."""

    llm: JsonLLM
    salt: bytes = b""
    files: RepoFiles | None = None
    panda: PandaSupport | None = None


StrategyFactory = Callable[[StrategyDeps], ExtractionStrategy]


class StrategyRegistry:
    """Name -> factory. Built explicitly by `default_registry()`; plugins call `register`."""

    def __init__(self) -> None:
        self._factories: dict[str, StrategyFactory] = {}

    def register(self, name: str, factory: StrategyFactory) -> None:
        self._factories[name.lower()] = factory

    def names(self) -> list[str]:
        return sorted(self._factories)

    def create(self, name: str, deps: StrategyDeps) -> ExtractionStrategy:
        factory = self._factories.get(name.lower())
        if factory is None:
            known = ", ".join(self.names()) or "none"
            raise ConfigError(f"extraction strategy {name!r} is not registered (registered: {known})")
        return factory(deps)


# The built-in strategies as data, "module:attribute" by name: the implementations import this module, so it
# names them without importing them; each is imported when a registry first creates it.
BUILTIN_STRATEGIES = {
    "gitlab_ci": "hummingbird_agent.bamboo.strategies.gitlab_ci:GitLabCIStrategy",
    "panda": "hummingbird_agent.bamboo.strategies.panda:PandaStrategy",
}


def load_factory(reference: str) -> StrategyFactory:
    """A factory that imports `module:attribute` when first called."""
    module, _, attribute = reference.partition(":")

    def create(deps: StrategyDeps) -> ExtractionStrategy:
        factory: StrategyFactory = getattr(importlib.import_module(module), attribute)
        return factory(deps)

    return create


def default_registry() -> StrategyRegistry:
    registry = StrategyRegistry()
    for name, reference in BUILTIN_STRATEGIES.items():
        registry.register(name, load_factory(reference))
    return registry
