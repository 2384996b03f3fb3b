"""Data sources the model calls as tools (GitLab, Konflux, Testing Farm); only the sources a workflow
declares are registered, with their read credentials bound into the handlers."""

from __future__ import annotations

import logging

from hummingbird_agent.config.loading import DataSourcesConfig, LoadedConfig
from hummingbird_agent.data_sources import gitlab, konflux, testing_farm
from hummingbird_agent.errors import ConfigError
from hummingbird_agent.tools.registry import ToolRegistry

__all__ = ["gitlab", "konflux", "register_selected", "testing_farm"]
log = logging.getLogger(__name__)


def register_selected(registry: ToolRegistry, loaded: LoadedConfig, workflow: str, project: str) -> list[str]:
    """Register the data sources `workflow` declares (the same for every `project`). A source whose credentials
    are missing or unusable is skipped; the returned sentences name each skipped source, for the run to state
    as a gap."""
    config = loaded.config
    declared = config.workflows[workflow].data_sources
    gaps: list[str] = []
    for name in declared.declared():
        try:
            _register_one(registry, loaded, declared, name)
        except ConfigError as exc:
            log.warning("data source skipped workflow=%s source=%s reason=%s", workflow, name, exc)
            gaps.append(f"data source {name} is unavailable: {exc}")
    return gaps


def _register_one(registry: ToolRegistry, loaded: LoadedConfig, declared: DataSourcesConfig, name: str) -> None:
    if name == "gitlab" and declared.gitlab is not None:
        token_env = declared.gitlab.token_env
        token = loaded.secret(token_env)
        if token is None:
            raise ConfigError(f"env var {token_env} (GitLab read token) is unset")
        gitlab.register(registry, loaded.config.gitlab.url, token)
    elif name == "konflux" and declared.konflux is not None:
        kube = declared.konflux
        kubeconfig = loaded.secret(kube.kubeconfig_env) or ""
        konflux.register(registry, kube.cluster_url, kubeconfig, kube.kubearchive_url)
    elif name == "testing_farm" and declared.testing_farm is not None:
        farm = declared.testing_farm
        testing_farm.register(registry, farm.api_url, farm.artifacts_base)
