"""The extraction-strategy plugin interface, its optional source-navigator hook, and the registry of strategies:
the built-in ones and those installed packages declare in the `hummingbird_agent.strategies` entry-point group."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Any, Protocol

from hummingbird_agent.bamboo.incident_graph import KnowledgeGraph
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.errors import ConfigError

log = logging.getLogger(__name__)

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
# Third-party strategies: an installed distribution declares `name = "module:factory"` in this entry-point group,
# the factory taking StrategyDeps (a class works). Built-in names cannot be taken over by a plugin.
ENTRY_POINT_GROUP = "hummingbird_agent.strategies"
BUILTIN = "built in"
_REQUIRED = ("incident_id", "task_summary", "prefetch_hints", "extract")


class SourceNavigator(Protocol):
    """A strategy's optional hook `source_navigator() -> SourceNavigator | None`: answers a question about the
    system's source code (where an error is raised, what a setting does) as text for a prompt, "" when nothing
    matches; raises AgentError when the source cannot be read."""

    async def navigate(self, question: str) -> str: ...


def _require_interface(strategy: object, name: str, origin: str, *, built: bool) -> None:
    """ConfigError naming what a strategy (or, not `built`, its class) lacks of the interface."""
    missing = [m for m in _REQUIRED if not callable(getattr(strategy, m, None))]
    if built and not isinstance(getattr(strategy, "name", None), str):
        missing.append("name")
    if missing:
        raise ConfigError(f"extraction strategy {name!r} ({origin}): does not implement the strategy interface: "
                          f"missing {', '.join(missing)}")


def source_navigator_of(strategy: ExtractionStrategy) -> SourceNavigator | None:
    """The strategy's source navigator, None when it has no hook or no source at hand."""
    hook = getattr(strategy, "source_navigator", None)
    return hook() if callable(hook) else None


class StrategyRegistry:
    """Name -> factory, and where each came from. Built explicitly by `default_registry()`."""

    def __init__(self) -> None:
        self._factories: dict[str, StrategyFactory] = {}
        self._origins: dict[str, str] = {}
        self._references: dict[str, str] = {}

    def register(self, name: str, factory: StrategyFactory, origin: str = BUILTIN, reference: str = "") -> None:
        """`reference` ("module:attribute") lets `check` import it without building the strategy."""
        self._factories[name.lower()] = factory
        self._origins[name.lower()] = origin
        self._references[name.lower()] = reference

    def check(self, name: str) -> str:
        """Where `name` comes from, after importing its factory; ConfigError (one line) when it is not registered
        or cannot be imported. For check-config: no strategy is built."""
        origin = self.origin(name)
        if origin is None:
            raise ConfigError(f"extraction strategy {name!r} is not registered (registered: {', '.join(self.names())})")
        if self._references[name.lower()]:
            factory = import_factory(self._references[name.lower()], name, origin)
            if isinstance(factory, type):  # a class: its methods can be checked before it is built
                _require_interface(factory, name, origin, built=False)
        return origin

    def names(self) -> list[str]:
        return sorted(self._factories)

    def origin(self, name: str) -> str | None:
        """"built in" or "plugin <distribution> <version>"; None when `name` is not registered."""
        return self._origins.get(name.lower())

    def create(self, name: str, deps: StrategyDeps) -> ExtractionStrategy:
        factory = self._factories.get(name.lower())
        if factory is None:
            known = ", ".join(self.names()) or "none"
            raise ConfigError(f"extraction strategy {name!r} is not registered (registered: {known})")
        strategy = factory(deps)
        _require_interface(strategy, name, self._origins[name.lower()], built=True)
        return strategy


# The built-in strategies as data, "module:attribute" by name: the implementations import this module, so it
# names them without importing them; each is imported when a registry first creates it.
BUILTIN_STRATEGIES = {
    "gitlab_ci": "hummingbird_agent.bamboo.strategies.gitlab_ci:GitLabCIStrategy",
    "panda": "hummingbird_agent.bamboo.strategies.panda:PandaStrategy",
}


def import_factory(reference: str, name: str = "", origin: str = BUILTIN) -> StrategyFactory:
    """The `module:attribute` a strategy name stands for, imported; one ConfigError line naming the strategy and
    where it came from when it cannot be."""
    module, _, attribute = reference.partition(":")
    try:
        factory: StrategyFactory = getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"extraction strategy {name!r} ({origin}): cannot load {reference} "
                          f"({type(exc).__name__}: {str(exc)[:200]})") from None
    return factory


def load_factory(reference: str, name: str = "", origin: str = BUILTIN) -> StrategyFactory:
    """A factory that imports `module:attribute` when first called (see import_factory)."""

    def create(deps: StrategyDeps) -> ExtractionStrategy:
        factory = import_factory(reference, name, origin)
        try:
            return factory(deps)
        except TypeError as exc:  # not a factory of StrategyDeps (a plugin written against another interface)
            raise ConfigError(f"extraction strategy {name!r} ({origin}): {reference} cannot be built from "
                              f"StrategyDeps ({str(exc)[:200]})") from None

    return create


def plugin_entry_points() -> list[metadata.EntryPoint]:
    """The installed strategy plugins, in a stable order (by name, then distribution)."""
    found = metadata.entry_points(group=ENTRY_POINT_GROUP)
    return sorted(found, key=lambda ep: (ep.name.lower(), ep.dist.name if ep.dist else ""))


def default_registry() -> StrategyRegistry:
    """The built-in strategies, then every installed plugin whose name is not taken (a clash is logged)."""
    registry = StrategyRegistry()
    for name, reference in BUILTIN_STRATEGIES.items():
        registry.register(name, load_factory(reference, name), BUILTIN, reference)
    for entry in plugin_entry_points():
        origin = f"plugin {entry.dist.name} {entry.dist.version}" if entry.dist else "plugin"
        taken = registry.origin(entry.name)
        if taken is not None:
            log.warning("extraction strategy plugin %r (%s) ignored: the name is %s", entry.name, origin,
                        "built in" if taken == BUILTIN else f"taken by {taken}")
            continue
        registry.register(entry.name, load_factory(entry.value, entry.name, origin), origin, entry.value)
    return registry
