"""The shipped configs carry the Konflux source and a project's own read credentials as comments; uncommented
as they stand, each file is valid, declares Konflux for the main workflow and gives the project its own variables."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hummingbird_agent.config.credentials import source_env
from hummingbird_agent.config.loading import load_config, required_env_names
from hummingbird_agent.data_sources.direct import ReadTools

REPO = Path(__file__).resolve().parents[1]
PROJECT = "example-group/example-project"
# Commented-out keys of the Konflux block and of the project's credentials ("# key:" at any indent).
_COMMENTED = re.compile(r"^(\s*)# ((?:konflux|  cluster_url|  kubeconfig_env|  kubearchive_url|gitlab_token_env|"
                        r"konflux_kubeconfig_env):.*)$", re.MULTILINE)


@pytest.mark.parametrize("name", ["config.yaml", "config.local-ollama.yaml"])
def test_the_commented_konflux_source_and_project_credentials_work_uncommented(tmp_path: Path, name: str) -> None:
    text = (REPO / name).read_text(encoding="utf-8")
    shipped = load_config(REPO / name, environ={}).config.workflows["analyze-failures"]
    assert shipped.data_sources.konflux is None  # off as shipped: no cluster to reach

    uncommented, count = _COMMENTED.subn(r"\1\2", text)
    assert count == 6, "the konflux block (4 lines) and the project's two variables"
    path = tmp_path / name
    path.write_text(uncommented.replace("prompt: workflows/", f"prompt: {REPO}/workflows/"), encoding="utf-8")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\ncurrent-context: c\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
                          "clusters: [{name: c, cluster: {server: 'https://api.konflux.example.com:6443'}}]\n"
                          "users: [{name: u, user: {token: sha256~example-kube-token}}]\n")
    env = {"EXAMPLE_PROJECT_KUBECONFIG": str(kubeconfig), "EXAMPLE_PROJECT_READ_TOKEN": "glpat-example-read"}
    loaded = load_config(path, environ=env)

    workflow = loaded.config.workflows["analyze-failures"]
    assert workflow.data_sources.konflux is not None
    assert workflow.data_sources.konflux.cluster_url == "https://api.konflux.example.com:6443"
    assert source_env(workflow, PROJECT, "gitlab").env == "EXAMPLE_PROJECT_READ_TOKEN"
    assert source_env(workflow, PROJECT, "konflux").env == "EXAMPLE_PROJECT_KUBECONFIG"
    assert {"KONFLUX_KUBECONFIG", "EXAMPLE_PROJECT_KUBECONFIG"} <= set(required_env_names(loaded.config))
    # The project's runs get the Konflux tools with its own kubeconfig (no request is made to register them).
    tools = ReadTools.declared(loaded, "analyze-failures", PROJECT)
    assert tools.gaps == []
