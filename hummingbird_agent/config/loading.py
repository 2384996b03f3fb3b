"""config.yaml: loading, validation and environment overrides (the schema is in schema.py,
providers.py and knowledge.py).

This is the only module that reads `os.environ`. Secrets never live in the file: the YAML names the
environment variables that hold them, and `LoadedConfig.secret()` looks them up in the snapshot taken at load.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hummingbird_agent import budgets
from hummingbird_agent.config.credentials import data_source_env_names, project_credentials
from hummingbird_agent.config.model_targets import all_targets, embedding_connection
from hummingbird_agent.config.providers import ModelConfig
from hummingbird_agent.config.schema import (
    Config,
    DataSourcesConfig,
    GitLabConfig,
    GitLabSourceConfig,
    KonfluxSourceConfig,
    ProjectConfig,
    QueuesConfig,
    SandboxConfig,
    SessionsConfig,
    TestingFarmSourceConfig,
    TriggerRule,
    TriggerRules,
    WebhookConfig,
    WorkflowConfig,
)
from hummingbird_agent.config.yaml_file import read_yaml
from hummingbird_agent.errors import ConfigError

__all__ = [
    "Config",
    "DEFAULT_CONFIG_ENV",
    "DataSourcesConfig",
    "ENV_OVERRIDES",
    "GitLabConfig",
    "GitLabSourceConfig",
    "KonfluxSourceConfig",
    "LoadedConfig",
    "ModelConfig",
    "ProjectConfig",
    "QueuesConfig",
    "SandboxConfig",
    "SessionsConfig",
    "TestingFarmSourceConfig",
    "TriggerRule",
    "TriggerRules",
    "WebhookConfig",
    "WorkflowConfig",
    "check_role",
    "default_config_path",
    "load_config",
    "required_env_names",
]

# Environment variables that override a config value: name -> key path.
ENV_OVERRIDES: dict[str, tuple[str, ...]] = {
    "AWS_ENDPOINT_URL": ("queues", "endpoint_url"),
    "EXTRACTION_STRATEGY": ("bamboo", "extraction_strategy"),
    "MCP_SERVERS_CONFIG": ("bamboo", "mcp_servers_config"),
    "EXPLORATORY_INVESTIGATION_THRESHOLD": ("bamboo", "exploratory_threshold"),
    "LLM_PROVIDER": ("bamboo", "provider"),
    "LLM_MODEL": ("bamboo", "model"),
    "LLM_CONTEXT_WINDOW": ("bamboo", "llm_context_window"),
    "TOOL_BUDGET_MARGIN": ("bamboo", "tool_budget_margin"),
    "TOOL_MAX_FULL_SCHEMAS": ("bamboo", "tool_max_full_schemas"),
    "TOOL_RETRIEVAL_CANDIDATE_K": ("bamboo", "tool_retrieval_candidate_k"),
    "TOOL_RESERVED_EXPLORE": ("bamboo", "tool_reserved_explore"),
}
# Overrides whose value is a number: name -> the type its text converts to (the tool-budget knobs are whole).
_NUMBER_OVERRIDES = {"EXPLORATORY_INVESTIGATION_THRESHOLD": float, **{
    name: int for name, path in ENV_OVERRIDES.items() if path[-1].startswith(("tool_", "llm_context"))}}
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
DEFAULT_CONFIG_ENV = "HUMMINGBIRD_CONFIG"
# Queue URLs each `serve --role` needs with the sqs backend (check-config checks a role the same way).
ROLE_QUEUE_URLS: dict[str, tuple[str, ...]] = {
    "router": ("ingress_url", "work_url"),
    "worker": ("work_url",),
    "ingress": ("ingress_url",),
    "all": ("ingress_url", "work_url"),
}


@dataclass(frozen=True, slots=True)
class LoadedConfig:
    """A validated config plus where it came from and the environment snapshot taken at load."""

    config: Config
    path: Path
    env: Mapping[str, str] = field(repr=False)

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    def resolve(self, relative: str) -> Path:
        """A path from the config, resolved against the config file's directory."""
        return (self.base_dir / relative).resolve()

    def secret(self, env_name: str) -> str | None:
        """The value of the environment variable `env_name`, or None when unset or empty."""
        return self.env.get(env_name) or None

    def prompt_path(self, workflow: str) -> Path:
        return self.resolve(self.config.workflows[workflow].prompt)

    @property
    def sentry_dsn(self) -> str | None:
        return self.secret("SENTRY_DSN")

    @property
    def ca_bundle(self) -> str | None:
        """The deployment's CA bundle for outbound TLS (model clients), as requests and OpenSSL name it."""
        return self.secret("REQUESTS_CA_BUNDLE") or self.secret("SSL_CERT_FILE")

    @property
    def log_level(self) -> str:
        return self.env.get("LOG_LEVEL", "INFO").upper()

    def secret_values(self) -> frozenset[str]:
        """Every secret value the config names (and the MCP servers file's header and env values), for
        scrubbing logs, notes, transcripts, saved sessions and Sentry events. ConfigError, one line naming the
        variable (never the value), when one is too short to redact safely (budgets.SECRET_MIN_CHARS)."""
        names = list(dict.fromkeys(secret_env_names(self.config) + self._mcp_env_names()))
        short = [name for name in names if 0 < len(self.secret(name) or "") < budgets.SECRET_MIN_CHARS]
        if short:
            raise ConfigError(f"{', '.join(short)}: a secret shorter than {budgets.SECRET_MIN_CHARS} characters "
                              "cannot be redacted from logs and notes safely; use a longer one")
        plain = frozenset(v for name in names if (v := self.secret(name)))
        return plain | self._mcp_secret_values()

    def _mcp_env_names(self) -> list[str]:
        """The env vars the MCP servers file refers to; none when it is unset or broken (its own check says)."""
        from hummingbird_agent.config.mcp_servers import referenced_env_names

        path = self.config.bamboo.mcp_servers_config
        try:
            return referenced_env_names(self.resolve(path)) if path else []
        except ConfigError:
            return []

    def _mcp_secret_values(self) -> frozenset[str]:
        """Expanded MCP server `headers`/`env` values (and a header's credential after its scheme, as in
        `Bearer <token>`); empty when the file is unset or broken (its own check reports that). A short
        literal value in the file (`DEBUG: "1"`) is a setting, not a secret: secrets come from env vars."""
        path = self.config.bamboo.mcp_servers_config
        if not path:
            return frozenset()
        from hummingbird_agent.config.mcp_servers import load_server_configs

        try:
            entries = load_server_configs(self.resolve(path), self.env)
        except ConfigError:
            return frozenset()
        values = [v for e in entries for v in (*e.headers.values(), *e.env.values()) if v]
        values += [v.split()[-1] for v in values if v.split()]
        return frozenset(v for v in values if len(v) >= budgets.SECRET_MIN_CHARS)


def secret_env_names(config: Config) -> list[str]:
    """The env vars among `required_env_names` whose values are secrets: not the Neo4j user name (`neo4j`
    by default) nor the kubeconfig file's path, which would be refused as too short or redact ordinary text."""
    public = {config.bamboo.graph.user_env}
    public |= {wf.data_sources.konflux.kubeconfig_env for wf in config.workflows.values() if wf.data_sources.konflux}
    public |= {e.env for _, _, envs in project_credentials(config) for e in envs if e.source == "konflux"}
    # Optional secrets: a Qdrant server's API key is needed only when the server checks keys.
    optional = [config.bamboo.vectors.api_key_env] if config.bamboo.enabled and config.bamboo.vectors.url else []
    return [name for name in dict.fromkeys(required_env_names(config) + optional) if name not in public]


def required_env_names(config: Config) -> list[str]:
    """Env var names the config refers to for secrets, in a stable order."""
    names = [config.gitlab.token_env, config.webhook.secret_env]
    names += [config.gitlab.marker_secret_env] if config.gitlab.marker_secret_env else []
    names += [t.connection.key_env for t in all_targets(config) if t.connection.needs_key()]
    names += data_source_env_names(config)
    embeddings = config.bamboo.embeddings
    if config.bamboo.enabled and embeddings.provider in ("gemini", "openai"):
        connection = embedding_connection(config)
        names += [connection.key_env] if connection.needs_key() else []
    if config.bamboo.enabled and config.bamboo.graph.backend == "neo4j":
        names += [config.bamboo.graph.user_env, config.bamboo.graph.password_env]
    if config.bamboo.enabled and config.bamboo.panda.token_env:
        names.append(config.bamboo.panda.token_env)
    return list(dict.fromkeys(names))


def default_config_path(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(env.get(DEFAULT_CONFIG_ENV, "config.yaml"))


def load_config(path: str | Path, environ: Mapping[str, str] | None = None) -> LoadedConfig:
    """Read, validate and check config.yaml. Raises ConfigError with one line naming the key and problem."""
    env = dict(os.environ if environ is None else environ)
    _normalise_log_level(env)
    cfg_path = Path(path).absolute()
    raw = read_yaml(cfg_path)
    _apply_env_overrides(raw, env)
    try:
        config = Config.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{cfg_path.name}: {_first_error(exc)}") from None
    loaded = LoadedConfig(config=config, path=cfg_path, env=env)
    _check_files(loaded)
    return loaded


def _normalise_log_level(env: dict[str, str]) -> None:
    """LOG_LEVEL as the logging module takes it; empty counts as unset, anything else is one ConfigError (not a
    traceback from the logging setup)."""
    level = env.pop("LOG_LEVEL", "").strip().upper()
    if not level:
        return
    if level not in LOG_LEVELS:
        raise ConfigError(f"LOG_LEVEL: must be one of {', '.join(LOG_LEVELS)}, got {level[:20]!r}")
    env["LOG_LEVEL"] = level


def _apply_env_overrides(raw: dict[str, Any], env: Mapping[str, str]) -> None:
    for name, key_path in ENV_OVERRIDES.items():
        value = env.get(name)
        if not value:
            continue
        node = raw
        for key in key_path[:-1]:
            child = node.get(key)
            if child is None:
                child = node[key] = {}
            if not isinstance(child, dict):
                return
            node = child
        node[key_path[-1]] = _override_value(name, value)


def _override_value(name: str, value: str) -> Any:
    """Environment values are text; a number setting gets a number (or the error names the variable)."""
    kind = _NUMBER_OVERRIDES.get(name)
    if kind is None:
        return value
    try:
        return kind(value.strip())
    except ValueError:
        raise ConfigError(f"{name}: must be {'a whole number' if kind is int else 'a number'}") from None


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    first = errors[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top level)"
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        message = "unknown key"
    elif first["type"] == "missing":
        message = "required key is missing"
    others = list(dict.fromkeys(".".join(str(p) for p in e["loc"]) or "(top level)" for e in errors[1:]))
    more = f" (and {len(others)} more: {', '.join(others[:3])}{', ...' if len(others) > 3 else ''})" if others else ""
    return f"{where}: {message}{more}"


def check_role(loaded: LoadedConfig, role: str) -> None:
    """What `serve --role <role>` needs beyond a valid file: with the sqs backend, the role's queue URLs.
    `check-config` and `serve` both call it; ConfigError names the missing key."""
    if role not in ROLE_QUEUE_URLS:
        raise ConfigError(f"unknown role {role!r}; expected one of {', '.join(ROLE_QUEUE_URLS)}")
    if role == "ingress" and not loaded.config.webhook.enabled:  # it would serve nothing but its health routes
        raise ConfigError(f"{loaded.path.name}: role 'ingress' is the webhook endpoint, but webhook.enabled is false")
    queues = loaded.config.queues
    if queues.backend != "sqs":
        return
    for key in ROLE_QUEUE_URLS[role]:
        if not getattr(queues, key):
            raise ConfigError(f"{loaded.path.name}: queues.{key} is required for role {role!r} with the sqs backend")


def _is_file(loaded: LoadedConfig, relative: str) -> bool:
    try:
        return loaded.resolve(relative).is_file()
    except (OSError, ValueError):  # a NUL byte or an overlong name is no file either
        return False


def _check_files(loaded: LoadedConfig) -> None:
    for name, wf in loaded.config.workflows.items():
        if not _is_file(loaded, wf.prompt):
            shown = wf.prompt.encode("unicode_escape").decode("ascii")  # one line, whatever the name holds
            raise ConfigError(f"{loaded.path.name}: workflows.{name}.prompt: file not found: {shown}")
    script = loaded.config.model.script
    if loaded.config.model.provider == "scripted" and not (script and _is_file(loaded, script)):
        raise ConfigError(f"{loaded.path.name}: model.script: a scripted model needs an existing turns file")
