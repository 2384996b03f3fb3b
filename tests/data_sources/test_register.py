"""register_selected: only the sources a workflow declares become tools; missing credentials are a gap."""

from __future__ import annotations

from pathlib import Path

from hummingbird_agent.config import loading as cfg
from hummingbird_agent.config.loading import (
    Config,
    DataSourcesConfig,
    GitLabSourceConfig,
    KonfluxSourceConfig,
    LoadedConfig,
    WorkflowConfig,
)
from hummingbird_agent.data_sources import register_selected
from hummingbird_agent.tools.registry import ToolRegistry
from hummingbird_agent.tools.spill import Spiller

KUBECONFIG = """\
apiVersion: v1
current-context: c
contexts: [{name: c, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://api.example:6443"}}]
users: [{name: u, user: {token: sha256~kube-secret}}]
"""


def loaded(tmp_path: Path, sources: DataSourcesConfig, env: dict[str, str]) -> LoadedConfig:
    workflow = WorkflowConfig(description="d", prompt="p.md", data_sources=sources)
    return LoadedConfig(Config(workflows={"wf": workflow}), tmp_path / "config.yaml", env)


def registry() -> ToolRegistry:
    # Registration never touches the sandbox; a spiller without one is enough here.
    return ToolRegistry(Spiller(None))  # type: ignore[arg-type]


def test_only_declared_sources_are_registered(tmp_path: Path) -> None:
    reg = registry()
    gaps = register_selected(reg, loaded(tmp_path, DataSourcesConfig(gitlab=GitLabSourceConfig()),
                                         {"GITLAB_READ_TOKEN": "glpat-read"}), "wf", "g/p")
    assert gaps == []
    assert all(name.startswith("gitlab_") for name in reg.data_source_tools())
    assert len(reg.data_source_tools()) == 18  # the GitLab tools; jobs, bridges, reports, compare, commit MRs, versions
    assert "glpat-read" not in str([d for d in reg.declarations()]) + reg.notes()


def test_all_sources_and_their_notes(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    sources = DataSourcesConfig(gitlab=GitLabSourceConfig(), testing_farm=cfg.TestingFarmSourceConfig(),
                                konflux=KonfluxSourceConfig(cluster_url="https://api.example:6443"))
    reg = registry()
    env = {"GITLAB_READ_TOKEN": "glpat-read", "KONFLUX_KUBECONFIG": str(kubeconfig)}
    assert register_selected(reg, loaded(tmp_path, sources, env), "wf", "g/p") == []
    names = reg.data_source_tools()
    assert {n.split("_")[0] for n in names} == {"gitlab", "konflux", "tf"}
    assert "kube-secret" not in str(reg.declarations()) + reg.notes()
    assert reg.response_metadata("tf_get_results") == {"artifacts_base": cfg.TestingFarmSourceConfig().artifacts_base}


def test_missing_credentials_skip_the_source_with_a_stated_gap(tmp_path: Path) -> None:
    sources = DataSourcesConfig(gitlab=GitLabSourceConfig(), konflux=KonfluxSourceConfig(cluster_url="https://x"),
                                testing_farm=cfg.TestingFarmSourceConfig())
    reg = registry()
    gaps = register_selected(reg, loaded(tmp_path, sources, {}), "wf", "g/p")
    assert [g.split(" is unavailable")[0] for g in gaps] == ["data source gitlab", "data source konflux"]
    assert all("\n" not in g for g in gaps)
    assert {n.split("_")[0] for n in reg.data_source_tools()} == {"tf"}
