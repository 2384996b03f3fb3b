"""Which model a call goes to: the `model` section, a workflow's override and the knowledge base's
provider/model resolved into one frozen ModelTarget per use (pure: no SDK, no I/O)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from hummingbird_agent import budgets
from hummingbird_agent.config.providers import ModelConfig, ModelConnection, WorkflowModel
from hummingbird_agent.config.schema import Config

# Hosts of hosted OpenAI-compatible APIs; any other `base_url` of the openai provider is a self-hosted server.
_HOSTED_OPENAI = ("api.openai.com", ".openai.azure.com", ".services.ai.azure.com")
_CONNECTION_KEYS = ("api_key_env", "base_url", "vertex_project", "vertex_location", "credentials_file",
                    "max_output_tokens", "recover_text_tool_calls")

DEFAULT_KEY_ENV = {"gemini": "GEMINI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
DEFAULT_MODEL = {"gemini": "gemini-2.5-pro", "anthropic": "claude-sonnet-5", "openai": "gpt-4.1",
                 "scripted": "scripted"}
DEFAULT_KB_MODEL = {"gemini": "gemini-2.5-flash", "anthropic": "claude-haiku-4-5", "openai": "gpt-4.1-mini",
                    "scripted": "scripted"}


@dataclass(frozen=True, slots=True)
class Connection:
    """Where one provider is reached; equal connections share one client."""

    provider: str
    api_key_env: str | None = None
    base_url: str | None = None
    api_version: str = "v1beta"
    vertex_project: str | None = None
    vertex_location: str | None = None
    credentials_file: str | None = None
    max_output_tokens: int | None = None
    recover_text_tool_calls: bool | None = None

    @property
    def key_env(self) -> str:
        return self.api_key_env or DEFAULT_KEY_ENV.get(self.provider, "")

    @property
    def vertex(self) -> bool:
        return self.vertex_project is not None

    @property
    def self_hosted(self) -> bool:
        """An `openai` endpoint that is not OpenAI's or Azure's API: llama.cpp, Ollama, vLLM, a gateway."""
        if self.provider != "openai" or not self.base_url:
            return False
        host = (urlsplit(self.base_url).hostname or "").lower()
        return not any(host == h or (h.startswith(".") and host.endswith(h)) for h in _HOSTED_OPENAI)

    @property
    def output_cap(self) -> int | None:
        """Output tokens per call: the configured cap, else the self-hosted default, else None (the provider's
        own; the Claude adapter sends budgets.MODEL_MAX_OUTPUT_TOKENS, which Anthropic requires)."""
        if self.max_output_tokens is not None:
            return self.max_output_tokens
        return budgets.LOCAL_MODEL_MAX_OUTPUT_TOKENS if self.self_hosted else None

    @property
    def text_tool_calls(self) -> bool:
        """Whether a tool call written as JSON text is read as a call: configured, else on for self-hosted."""
        return self.self_hosted if self.recover_text_tool_calls is None else self.recover_text_tool_calls

    def needs_key(self) -> bool:
        """False for Vertex AI (Google credentials) and a local OpenAI-compatible server (Ollama, vLLM)."""
        if self.provider == "scripted" or self.vertex:
            return False
        return not (self.provider == "openai" and self.base_url and not self.api_key_env)

    def missing(self, secret: Callable[[str], str | None]) -> str | None:
        """What this connection lacks to start, as one phrase; None when it can start."""
        if not self.needs_key() or secret(self.key_env):
            return None
        return f"environment variable {self.key_env} is not set (the {self.provider} API key)"

    def describe(self) -> str:
        """One phrase for check-config: provider, where, and how it authenticates."""
        where = f"Vertex AI {self.vertex_project}/{self.vertex_location or 'global'}" if self.vertex else (
            self.base_url or "the provider's API")
        if self.vertex:
            auth = f"service account {self.credentials_file}" if self.credentials_file else "Application Default " \
                "Credentials"
        else:
            auth = f"key in {self.key_env}" if self.needs_key() else "no API key"
        return f"{self.provider} at {where} ({auth})"


@dataclass(frozen=True, slots=True)
class ModelTarget:
    connection: Connection
    name: str


def base_connection(cfg: ModelConfig) -> Connection:
    return Connection(cfg.provider, cfg.api_key_env, cfg.base_url, cfg.api_version, cfg.vertex_project,
                      cfg.vertex_location, cfg.credentials_file, cfg.max_output_tokens, cfg.recover_text_tool_calls)


def _overlay(base: Connection, over: ModelConnection) -> Connection:
    """`over` on top of `base`; another provider starts from that provider's defaults, not base's endpoint."""
    start = base if over.provider in (None, base.provider) else Connection(over.provider or base.provider,
                                                                            api_version=base.api_version)
    fields = {k: v for k in _CONNECTION_KEYS if (v := getattr(over, k)) is not None}
    return replace(start, **fields)


def workflow_target(config: Config, workflow: str) -> ModelTarget:
    """The model a workflow's agent runs on."""
    base = base_connection(config.model)
    default_name = config.model.name or DEFAULT_MODEL[base.provider]
    chosen = config.workflows[workflow].model
    if chosen is None or isinstance(chosen, str):
        return ModelTarget(base, chosen or default_name)
    assert isinstance(chosen, WorkflowModel)
    return ModelTarget(_overlay(base, chosen), chosen.name)


def knowledge_target(config: Config) -> ModelTarget:
    """The model of the knowledge base's calls (LLM_PROVIDER / LLM_MODEL arrive as bamboo.provider/model)."""
    base = base_connection(config.model)
    kb = config.bamboo
    connection = _overlay(base, ModelConnection(provider=kb.provider, base_url=kb.base_url, api_key_env=kb.api_key_env,
                                                max_output_tokens=kb.max_output_tokens))
    return ModelTarget(connection, config.bamboo.model or DEFAULT_KB_MODEL[connection.provider])


def embedding_connection(config: Config) -> Connection:
    """The endpoint of `bamboo.embeddings` (provider gemini or openai): the `model` section's when it is the
    same provider, else that provider's defaults; its own base_url / api_key_env override either."""
    cfg = config.bamboo.embeddings
    if cfg.provider not in ("gemini", "openai"):  # hashing and minilm run locally: callers never ask
        raise ValueError(f"bamboo.embeddings.provider {cfg.provider} has no endpoint")
    over = ModelConnection(provider=cfg.provider, base_url=cfg.base_url, api_key_env=cfg.api_key_env)
    return _overlay(base_connection(config.model), over)


def all_targets(config: Config) -> list[ModelTarget]:
    """Every model the service may call, workflows first, in a stable order."""
    targets = [workflow_target(config, name) for name in config.workflows]
    if config.bamboo.enabled:
        targets.append(knowledge_target(config))
    return targets
