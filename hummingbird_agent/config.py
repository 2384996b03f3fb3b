"""config.yaml: loading, validation and environment overrides (the schema is in config_schema.py).

This is the only module that reads `os.environ`. Secrets never live in the file: the YAML names the
environment variables that hold them, and `LoadedConfig.secret()` looks them up in the snapshot taken at load.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from hummingbird_agent.config_schema import (
    BambooConfig,
    Config,
    DataSourcesConfig,
    EmbeddingsConfig,
    GitLabConfig,
    GitLabSourceConfig,
    GraphStoreConfig,
    KonfluxSourceConfig,
    ModelConfig,
    ProjectConfig,
    QueuesConfig,
    SandboxConfig,
    SessionsConfig,
    TestingFarmSourceConfig,
    TriggerRule,
    TriggerRules,
    VectorStoreConfig,
    WebhookConfig,
    WorkflowConfig,
)
from hummingbird_agent.errors import ConfigError
from hummingbird_agent.model_targets import all_targets, embedding_connection

__all__ = [
    "BambooConfig",
    "Config",
    "DEFAULT_CONFIG_ENV",
    "DataSourcesConfig",
    "ENV_OVERRIDES",
    "EmbeddingsConfig",
    "GitLabConfig",
    "GitLabSourceConfig",
    "GraphStoreConfig",
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
    "VectorStoreConfig",
    "WebhookConfig",
    "WorkflowConfig",
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
}
DEFAULT_CONFIG_ENV = "HUMMINGBIRD_CONFIG"


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
        """Every secret value the config names, for scrubbing logs, errors and Sentry events."""
        plain = frozenset(v for name in required_env_names(self.config) if (v := self.secret(name)))
        return plain | self._mcp_secret_values()

    def _mcp_secret_values(self) -> frozenset[str]:
        """Expanded MCP server `headers`/`env` values (and a header's credential after its scheme, as in
        `Bearer <token>`); empty when the file is unset or broken (its own check reports that)."""
        path = self.config.bamboo.mcp_servers_config
        if not path:
            return frozenset()
        from hummingbird_agent.bamboo.mcp.server_config import load_server_configs

        try:
            entries = load_server_configs(self.resolve(path), self.env)
        except ConfigError:
            return frozenset()
        values = [v for e in entries for v in (*e.headers.values(), *e.env.values()) if v]
        return frozenset(values + [v.split()[-1] for v in values if v.split()])


def required_env_names(config: Config) -> list[str]:
    """Env var names the config refers to for secrets, in a stable order."""
    names = [config.gitlab.token_env, config.webhook.secret_env]
    names += [t.connection.key_env for t in all_targets(config) if t.connection.needs_key()]
    for wf in config.workflows.values():
        sources = wf.data_sources
        if sources.gitlab:
            names.append(sources.gitlab.token_env)
        if sources.konflux:
            names.append(sources.konflux.kubeconfig_env)
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
    cfg_path = Path(path).absolute()
    raw = _read_yaml(cfg_path)
    _apply_env_overrides(raw, env)
    try:
        config = Config.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{cfg_path.name}: {_first_error(exc)}") from None
    loaded = LoadedConfig(config=config, path=cfg_path, env=env)
    _check_files(loaded)
    return loaded


class _UniqueKeyLoader(yaml.SafeLoader):
    """A YAML loader that rejects duplicate mapping keys instead of keeping the last one."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
        if key in seen:
            line = key_node.start_mark.line + 1
            raise ConfigError(f"line {line}: duplicate key {key!r}")
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file ({exc.strerror})") from None
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except ConfigError as exc:
        raise ConfigError(f"{path.name}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise ConfigError(f"{path.name}: {where}invalid YAML ({problem})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path.name}: the top level must be a mapping of settings")
    return data


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
        node[key_path[-1]] = value


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    first = errors[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top level)"
    message = first["msg"]
    if first["type"] == "extra_forbidden":
        message = "unknown key"
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return f"{where}: {message}{more}"


def _check_files(loaded: LoadedConfig) -> None:
    for name, wf in loaded.config.workflows.items():
        prompt = loaded.prompt_path(name)
        if not prompt.is_file():
            raise ConfigError(f"{loaded.path.name}: workflows.{name}.prompt: file not found: {wf.prompt}")
    script = loaded.config.model.script
    if loaded.config.model.provider == "scripted" and not (script and loaded.resolve(script).is_file()):
        raise ConfigError(f"{loaded.path.name}: model.script: a scripted model needs an existing turns file")
