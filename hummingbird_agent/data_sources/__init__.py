"""Data sources the model calls as tools (GitLab, Konflux, Testing Farm); only the sources a workflow
declares are registered, with their read credentials bound into the handlers."""

from __future__ import annotations

import logging

from hummingbird_agent.config.credentials import CredentialEnv, source_env
from hummingbird_agent.config.loading import LoadedConfig, WorkflowConfig
from hummingbird_agent.data_sources import gitlab, konflux, testing_farm
from hummingbird_agent.errors import ConfigError
from hummingbird_agent.tools.registry import ToolRegistry

__all__ = ["gitlab", "konflux", "register_selected", "testing_farm"]
log = logging.getLogger(__name__)


def register_selected(registry: ToolRegistry, loaded: LoadedConfig, workflow: str, project: str) -> list[str]:
    """Register the data sources `workflow` declares, with `project`'s credentials (its own variables where its
    entry names them, else the workflow's). A source whose credentials are missing or unusable is skipped; the
    returned sentences name each skipped source, for the run to state as a gap."""
    spec = loaded.config.workflows[workflow]
    gaps: list[str] = []
    for name in spec.data_sources.declared():
        try:
            _register_one(registry, loaded, spec, project, name)
        except ConfigError as exc:
            log.warning("data source skipped workflow=%s source=%s reason=%s", workflow, name, exc)
            gaps.append(f"data source {name} is unavailable: {exc}")
    return gaps


def _register_one(registry: ToolRegistry, loaded: LoadedConfig, spec: WorkflowConfig, project: str,
                  name: str) -> None:
    declared = spec.data_sources
    if name == "gitlab" and (cred := source_env(spec, project, "gitlab")) is not None:
        gitlab.register(registry, loaded.config.gitlab.url, _secret(loaded, cred, project),
                        reader=f"the GitLab read token in {cred.env}")
    elif name == "konflux" and declared.konflux is not None and (cred := source_env(spec, project, "konflux")):
        kube = declared.konflux
        konflux.register(registry, kube.cluster_url, _secret(loaded, cred, project), kube.kubearchive_url)
    elif name == "testing_farm" and declared.testing_farm is not None:
        farm = declared.testing_farm
        testing_farm.register(registry, farm.api_url, farm.artifacts_base)


def _secret(loaded: LoadedConfig, cred: CredentialEnv, project: str) -> str:
    value = loaded.secret(cred.env)
    if value is None:
        raise ConfigError(f"env var {cred.env} ({cred.describe(project)}) is unset")
    return value
