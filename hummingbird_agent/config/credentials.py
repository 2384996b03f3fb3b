"""Which environment variable holds a data source's credential for one project of one workflow (seed §9.4
`resolve_tool_token`): the project's own when its entry names one, else the workflow's. The bot token is global.

A project that names its own variable never falls back to the workflow's: when its variable is unset, its
runs have no such source (a stated gap), so they never read with a token meant for other projects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hummingbird_agent.config.schema import Config, WorkflowConfig

Source = Literal["gitlab", "konflux"]
CREDENTIAL_SOURCES: tuple[Source, ...] = ("gitlab", "konflux")
_PROJECT_KEY = {"gitlab": "gitlab_token_env", "konflux": "konflux_kubeconfig_env"}
WHAT = {"gitlab": "GitLab read token", "konflux": "Konflux kubeconfig"}


@dataclass(frozen=True, slots=True)
class CredentialEnv:
    """The variable a (workflow, project) reads `source` with, and whether the project named it itself."""

    source: Source
    env: str
    own: bool

    def describe(self, project: str) -> str:
        """What the variable is, for one-line messages: `GitLab read token of group/app`."""
        return f"{WHAT[self.source]} of {project}" if self.own else WHAT[self.source]


def source_env(workflow: WorkflowConfig, project: str, source: Source) -> CredentialEnv | None:
    """The variable holding `source`'s credential for `project`; None when the workflow declares no `source`."""
    declared = getattr(workflow.data_sources, source)
    if declared is None:
        return None
    settings = workflow.projects.get(project)
    own = getattr(settings, _PROJECT_KEY[source]) if settings is not None else None
    if own:
        return CredentialEnv(source, own, True)
    return CredentialEnv(source, declared.token_env if source == "gitlab" else declared.kubeconfig_env, False)


def project_credentials(config: Config) -> list[tuple[str, str, list[CredentialEnv]]]:
    """(workflow, project, the variables it reads with) for every allowlisted project of a workflow that declares
    GitLab or Konflux, in config order; names only."""
    table = []
    for name, workflow in config.workflows.items():
        for project in workflow.projects:
            envs = [found for source in CREDENTIAL_SOURCES if (found := source_env(workflow, project, source))]
            if envs:
                table.append((name, project, envs))
    return table


def data_source_env_names(config: Config) -> list[str]:
    """The variables data sources read with: each workflow's own (GitLab, then Konflux), then those projects name."""
    names = [e.env for wf in config.workflows.values() for source in CREDENTIAL_SOURCES
             if (e := source_env(wf, "", source)) is not None]
    return names + [e.env for _, _, envs in project_credentials(config) for e in envs if e.own]
