"""Build the configured Model: one adapter per distinct connection (the `model` section, workflow overrides,
the knowledge base's provider), routed by model name; or the scripted replay."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from hummingbird_agent import budgets
from hummingbird_agent.config.loading import LoadedConfig
from hummingbird_agent.config.model_targets import Connection, ModelTarget, all_targets, base_connection
from hummingbird_agent.errors import ConfigError
from hummingbird_agent.models.base import Model, ModelRequest, ModelResponse
from hummingbird_agent.models.scripted import ScriptedModel


class RoutedModel:
    """The Model protocol over several adapters: a request goes to the adapter its model name was configured
    on, every other name to the default one."""

    def __init__(self, default: Model, routes: Mapping[str, Model], adapters: tuple[Model, ...]) -> None:
        self.default, self.routes, self._adapters = default, dict(routes), adapters

    async def generate(self, request: ModelRequest) -> ModelResponse:
        return await self.routes.get(request.model, self.default).generate(request)

    async def context_window(self, name: str) -> int | None:
        """The window the server of `name` reports (a local Ollama model), None when it does not say."""
        probe = getattr(self.for_name(name), "context_window", None)
        return await probe(name) if probe is not None else None

    async def count_tokens(self, request: ModelRequest) -> int | None:
        """The request's prompt tokens by its adapter's counter; None when the provider has none (OpenAI)."""
        counter = getattr(self.for_name(request.model), "count_tokens", None)
        return await counter(request) if counter is not None else None

    def for_name(self, name: str) -> Model:
        """The adapter serving model `name`."""
        return self.routes.get(name, self.default)

    async def aclose(self) -> None:
        for adapter in self._adapters:
            await adapter.aclose()


def build_adapter(loaded: LoadedConfig, connection: Connection) -> Model:
    """The adapter of one connection; ConfigError (one line) when its key is missing."""
    problem = connection.missing(loaded.secret)
    if problem:
        raise ConfigError(f"model.api_key_env: {problem}")
    key = loaded.secret(connection.key_env) if connection.key_env else None
    credentials = str(loaded.resolve(connection.credentials_file)) if connection.credentials_file else None
    if credentials and not Path(credentials).is_file():
        raise ConfigError(f"model.credentials_file: file not found: {connection.credentials_file}")
    if connection.provider == "anthropic":
        from hummingbird_agent.models.claude import ClaudeModel, ClaudeSettings

        cap = connection.output_cap or budgets.MODEL_MAX_OUTPUT_TOKENS
        return ClaudeModel(ClaudeSettings(key, connection.base_url, connection.vertex_project,
                                          connection.vertex_location, credentials, loaded.ca_bundle, cap))
    if connection.provider == "openai":
        from hummingbird_agent.models.openai_compat import OpenAIModel, OpenAISettings

        return OpenAIModel(OpenAISettings(key, connection.base_url, loaded.ca_bundle, connection.output_cap,
                                          connection.self_hosted, connection.text_tool_calls))
    from hummingbird_agent.models.gemini import GeminiModel, GeminiSettings

    return GeminiModel(GeminiSettings(key, connection.base_url, connection.api_version, connection.vertex_project,
                                      connection.vertex_location, credentials, loaded.ca_bundle,
                                      connection.output_cap))


def build_model(loaded: LoadedConfig) -> Model:
    """The models named by the config; ConfigError when a key or the script is missing."""
    cfg = loaded.config.model
    if cfg.provider == "scripted":
        if not cfg.script:
            raise ConfigError("model.script: a scripted model needs a turns file")
        return ScriptedModel.from_file(loaded.resolve(cfg.script))
    base = base_connection(cfg)
    targets = all_targets(loaded.config)
    _check_unambiguous(targets)
    # SDK clients connect lazily, so a ConfigError part way leaves nothing open.
    adapters: dict[Connection, Model] = {base: build_adapter(loaded, base)}
    for target in targets:
        if target.connection not in adapters:
            adapters[target.connection] = build_adapter(loaded, target.connection)
    routes = {t.name: adapters[t.connection] for t in targets if t.connection != base}
    return RoutedModel(adapters[base], routes, tuple(adapters.values()))


def _check_unambiguous(targets: list[ModelTarget]) -> None:
    """Routing is by model name, so one name must mean one endpoint."""
    seen: dict[str, Connection] = {}
    for target in targets:
        if seen.setdefault(target.name, target.connection) != target.connection:
            raise ConfigError(f"model {target.name!r} is configured on two different providers or endpoints")
